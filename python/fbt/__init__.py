"""fbt: the Full-Bandwidth Transformer's compiler and runtime, from Python.

A model spec compiles to a bundle (the same pipeline as `fbtc`); a Session
runs the bundle: training steps, held-out losses, generation in each of the
three regimes (standard, soft, fused:N), every layer's states, checkpoints
(safetensors) and parameters as NumPy arrays. A Trainer runs `fbt train`'s
loop in-process, writing the same run folder.

    import fbt
    bundle = fbt.compile("specs/tiny.json", target="cpu")
    session, summary = fbt.train(bundle, steps=200, out="runs/tiny")
    print(session.generate("def ", mode="soft", max_new_tokens=40))
    held_out = fbt.default_corpus()["test"]
    print(session.evaluate(held_out, windows=64)["regimes"])

Token ids go in as any integer array (int32 and C-contiguous: read where
it lies, no copy); results come out as NumPy arrays. The GIL is released
while a step runs. Errors are fbt.Error (the runtime's message),
fbt.CompileError (the compiler's), TypeError or ValueError (an argument).
"""

import atexit
import codecs
import collections
import json
import os
import queue
import shutil
import tempfile
import threading

from . import _fbt
from ._fbt import CompileError, Error, StepResult

__all__ = ["Bundle", "CompileError", "Error", "HeldOut", "Session", "StepResult", "Trainer",
           "compile", "default_corpus", "describe", "train"]

_END = object()  # the end of a streamed generation

HeldOut = collections.namedtuple("HeldOut", "tokens byte_level documents")
HeldOut.__doc__ = "A part of a run's data: its int32 ids, whether one per byte, its documents"


def _spec_text(spec):
    """(JSON text, name for errors) of a spec given as a dict, a path or text."""
    if isinstance(spec, dict):
        return json.dumps(spec), "<dict>"
    if isinstance(spec, os.PathLike) or (isinstance(spec, str) and
                                         not spec.lstrip().startswith("{")):
        path = os.fspath(spec)
        try:
            with open(path, encoding="utf-8") as f:
                return f.read(), path
        except OSError as e:
            raise FileNotFoundError("spec: cannot read '%s': %s" % (path, e.strerror)) from None
    if isinstance(spec, str):
        return spec, "<text>"
    raise TypeError("spec: expected a path, a dict or JSON text, got %s" % type(spec).__name__)


_scratch = []  # folders of bundles compiled without an output path


def _scratch_dir():
    if not _scratch:
        _scratch.append(tempfile.mkdtemp(prefix="fbt-"))
        atexit.register(shutil.rmtree, _scratch[0], True)
    return _scratch[0]


class Bundle:
    """A compiled bundle (.fbtb): the steps, kernels and resolved spec of one
    model for one target."""

    def __init__(self, path):
        """Opens and checks the bundle at `path` (fbt.Error if it is not one)."""
        self.path = os.fspath(path)
        model, manifest = _fbt._bundle_json(self.path)
        self.config = json.loads(model)      # the resolved spec
        self.manifest = json.loads(manifest)  # as `fbt inspect --json` shows it

    @classmethod
    def load(cls, path):
        """The bundle at `path`."""
        return cls(path)

    @property
    def name(self):
        return self.config["name"]

    @property
    def target(self):
        return self.manifest["target"]

    @property
    def steps(self):
        """The compiled steps' names (train_k2, eval_k8, prefill, ...)."""
        return sorted(self.manifest["steps"])

    def describe(self, ranks=None):
        """`fbtc --describe --json` of the bundle's spec: parameters, FLOPs
        per token (training, prefill, decode), memory and KV cache."""
        return json.loads(_fbt._describe(json.dumps(self.config), self.path,
                                         list(ranks or []), {}))

    def __fspath__(self):
        return self.path

    def __repr__(self):
        return "Bundle(%r)" % self.path


def compile(spec, target="cpu", output=None, **options):
    """Compiles `spec` (a path, a dict or JSON text) as `fbtc` does.

    `target`: "cpu", "sm_90", "sm_80" or "simt" (None: no target, with
    emit="fbt" and the like). `output`: the bundle's path (default: a file
    in a folder removed when Python exits). The options are fbtc's flags,
    named with underscores: emit ("fbt", "train", "kernels", "plan", "ptx",
    "bundle"), cpu, cpu_parallel, dump_llvm_ir, gpu_storage,
    inference_weights, inference_activations, inference_kv_cache, tune_space,
    tuned, with_states, recipe ("fbt" or "paper"), fuse_feedback_gate,
    fuse_products.

    Returns a Bundle, or the text of an earlier stage when `emit` asks for
    one. Raises fbt.CompileError with the compiler's message.
    """
    text, source = _spec_text(spec)
    options = dict(options, target=target)
    emit = options.get("emit")
    if emit not in (None, "bundle") or target is None:
        return _fbt._compile(text, source, "", options)
    if output is None:
        fd, output = tempfile.mkstemp(prefix=_spec_name(text, source, options) + "-",
                                      suffix=".fbtb", dir=_scratch_dir())
        os.close(fd)
    output = os.fspath(output)
    _fbt._compile(text, source, output, options)
    return Bundle(output)


def _spec_name(text, source, options):
    """The spec's name, as the compiler reads it."""
    keep = {k: v for k, v in options.items() if k in ("recipe", "target")}
    return json.loads(_fbt._describe(text, source, [], keep))["name"]


def describe(spec, ranks=None, **options):
    """`fbtc SPEC --describe --json` as a dict: parameter counts, training,
    prefill and decode FLOPs per token, memory, KV cache; `ranks` adds the
    data-parallel figures at those world sizes. The options as compile's."""
    text, source = _spec_text(spec)
    return json.loads(_fbt._describe(text, source, list(ranks or []), options))


def default_corpus():
    """The embedded corpus's parts, {"train", "validation", "test"}, as int32
    token arrays (byte-level; each document starts with BOS, id 0)."""
    return _fbt._default_corpus()


class Session(_fbt._Session):
    """A bundle ready to run: its parameters, optimizer state and steps.

    Session(bundle, ckpt=None, threads=None, seed=None, tune=True,
            tune_cache="", tokenizer=None)

    `bundle`: a Bundle or a path. `ckpt`: a checkpoint to load (from fbt
    train, Session.save or a Trainer); without one the parameters are
    initialized from `seed` (default: the spec's training seed). `threads`:
    the CPU threads of every session (default: OMP_NUM_THREADS, else every
    core). `tune`, `tune_cache`: the kernels `fbt tune` chose, as the CLI's
    --no-tune and --tune-cache. `tokenizer`: instead of the checkpoint's.

    Steps: train_step, eval_step (one compiled batch, [B, T] ids);
    evaluate (held-out losses per pass and per regime, as `fbt eval`);
    generate (text, as `fbt generate`); states (every layer's residual
    stream, for a bundle compiled with with_states=True). Checkpoints:
    save, load. Parameters: parameter(name), parameters(), parameter_names.
    """

    def __init__(self, bundle, ckpt=None, threads=None, seed=None, tune=True,
                 tune_cache="", tokenizer=None):
        super().__init__(os.fspath(bundle), None if ckpt is None else os.fspath(ckpt),
                         threads, seed, tune, tune_cache or "", tokenizer)

    @property
    def batch_size(self):
        """B of the compiled training and evaluation steps."""
        return self.config["training"]["batch_size"]

    @property
    def sequence_length(self):
        """T of the compiled training and evaluation steps."""
        return self.config["training"]["sequence_length"]

    def parameters(self):
        """Every parameter by name, as float32 arrays (copies)."""
        return {name: self.parameter(name) for name in self.parameter_names}

    def held_out(self, split="test", data=None, val_fraction=None, test_fraction=None,
                 run=None):
        """A part of the data as `fbt eval` reads it: HeldOut(tokens, byte_level,
        documents), the int32 ids of `split` ("train", "validation" or
        "test"), whether they are one per byte (bits per byte are known),
        and the documents that start in it.

        `data`: a text, .jsonl or .bin file read through the session's
        tokenizer (default: the embedded corpus, which has its own parts).
        The file is cut at `val_fraction` and `test_fraction`, else at those
        `run` recorded (a run folder or a checkpoint in one), else 0.1 each.
        Pass `byte_level` on to evaluate().
        """
        tokens, byte_level, documents = self._held_out(
            split, *self._data_args(data, val_fraction, test_fraction, run))
        return HeldOut(tokens, byte_level, documents)

    def task(self, name, problems=200, regimes=None, seed=20261201, data=None,
             val_fraction=None, test_fraction=None, run=None):
        """`fbt eval --task NAME --json` as a dict: greedy exact-match accuracy
        and mean answer length per regime (default: every regime the bundle
        decodes) on `problems` held-out problems of `name` ("arithmetic",
        "counting", "file:PATH", "chat:PATH"), none of whose facts appear in
        the run's data (`data` and the rest as held_out's)."""
        return self._task(name, problems, None if regimes is None else list(regimes), seed,
                          *self._data_args(data, val_fraction, test_fraction, run))

    def contraction(self, split="test", passes=64, prompts=64, sequences=16, generate=500,
                    data=None, val_fraction=None, test_fraction=None, run=None):
        """`fbt eval --contraction --json` as a dict: how fast the passes
        converge (||s_k+1 - s_k|| / ||s_k|| for k < `passes` over the
        positions pass k+1 can still change, t >= k; the mean over `prompts`
        held-out prompts, its standard error, and over all positions beside
        it), the state's RMS along a greedy soft generation of `generate`
        tokens, and each position's loss teacher-forced over `sequences`
        windows of the whole context, soft and standard."""
        return self._contraction(split, passes, prompts, sequences, generate,
                                 *self._data_args(data, val_fraction, test_fraction, run))

    def probe(self, split="test", targets=("depth", "indent", "letter"), passes=None,
              soft=False, windows=96, seed=1, data=None, val_fraction=None,
              test_fraction=None, run=None):
        """`fbt probe --json` as a dict: ridge probes of every layer's
        residual stream (a bundle compiled with with_states=True) on
        `windows` windows of a held-out part, under plain prefill and the
        fused passes up to `passes` (8 with feedback, else 1), with `soft`
        also the soft recurrence; per target its test R^2 (depth, indent,
        letter) or accuracy (value) by regime and layer, beside random
        features of the same width (`random`)."""
        if isinstance(targets, str):
            targets = targets.split(",")
        return self._probe(split, list(targets), passes, bool(soft), windows, seed,
                           *self._data_args(data, val_fraction, test_fraction, run))

    @staticmethod
    def _data_args(data, val_fraction, test_fraction, run):
        if run is not None:
            run = os.fspath(run)
            if os.path.isdir(run):
                run = os.path.join(run, "latest.safetensors")
        return (None if data is None else os.fspath(data), val_fraction, test_fraction, run)

    def states(self, tokens, mode=None, passes=None, lengths=None):
        """Every layer's residual stream over a prompt, [passes, L + 1, T, D]
        for one prompt (1-D ids) or [passes, L + 1, N, T, D] for N rows
        (2-D ids, `lengths` giving each row's length; zeros past it). Layer
        l < L is block l's input (layer 0: the fused embedding), layer L the
        top-layer state before the final norm.

        `mode`: "standard" (one plain pass; the default) or "fused:N" (the N
        prefill passes, each fed the pass before's shifted states); or give
        `passes` instead. Needs a bundle compiled with with_states=True.
        """
        if mode is not None and passes is not None:
            raise TypeError("states: give mode or passes, not both")
        if mode is None or mode == "standard":
            k = 1 if passes is None else passes
        elif isinstance(mode, str) and mode.startswith("fused:") and mode[6:].isdigit():
            k = int(mode[6:])
        else:
            raise ValueError("states: mode must be 'standard' or 'fused:N', got %r" % (mode,))
        return super().states(tokens, k, None if lengths is None else list(lengths))

    def save(self, path):
        """Writes the parameters and optimizer state to `path` (safetensors,
        as fbt train's checkpoints)."""
        super().save(os.fspath(path))

    def load(self, path):
        """Reads a checkpoint (fbt train's, or save's) into the session."""
        super().load(os.fspath(path))

    def decode(self, ids):
        """The text of token ids (bytes that are not UTF-8, as a character
        cut in two, become U+FFFD)."""
        return super().decode(ids).decode("utf-8", "replace")

    def generate(self, prompt, mode=None, max_new_tokens=64, temperature=0.0, top_k=0,
                 top_p=1.0, seed=0, stop=None, stream=False, return_states=False):
        """The text generated after `prompt`, as `fbt generate` makes it.

        `prompt`: a string (returns a string) or a list of strings (returns a
        list, decoded together in batches of the bundle's inference batch).
        `mode`: "standard", "soft" (the default, or standard for a model
        without feedback) or "fused:N". Greedy unless `temperature` > 0;
        `top_k`, `top_p` and `seed` as the CLI's. A sequence ends at the
        document separator, after `max_new_tokens`, or once its text ends
        with `stop`. With stream=True (one prompt), an iterator of the text
        as it is generated; closing it early stops the generation. With
        return_states=True, (text, states) for each prompt: the top-layer
        state each generated token's step carries on (what soft decoding
        feeds back), float32 [tokens, D].
        """
        args = (mode, max_new_tokens, temperature, top_k, top_p, seed, stop or "")
        if stream:
            if return_states:
                raise TypeError("generate: stream=True does not return states")
            if not isinstance(prompt, str):
                raise TypeError("generate(stream=True) takes one prompt (a string)")
            return self._stream(prompt, args)
        prompts = [prompt] if isinstance(prompt, str) else list(prompt)
        for i, p in enumerate(prompts):
            if not isinstance(p, str):
                raise TypeError("prompt %d: expected a string, got %s" % (i, type(p).__name__))
        rows = self._generate(prompts, *args, None, return_states)
        if return_states:
            rows = [(text.decode("utf-8", "replace"), states) for text, states in rows]
        else:
            rows = [text.decode("utf-8", "replace") for text in rows]
        return rows[0] if isinstance(prompt, str) else rows

    def _stream(self, prompt, args):
        pieces = queue.Queue()
        stopped = threading.Event()

        def on_text(_row, piece):
            if stopped.is_set():
                return False
            pieces.put(piece)
            return True

        def work():
            try:
                self._generate([prompt], *args, on_text)
                pieces.put(_END)
            except BaseException as e:  # handed to the reader, raised there
                pieces.put(e)

        worker = threading.Thread(target=work, daemon=True)
        worker.start()
        utf8 = codecs.getincrementaldecoder("utf-8")("replace")
        try:
            while True:
                item = pieces.get()
                if item is _END:
                    tail = utf8.decode(b"", final=True)
                    if tail:
                        yield tail
                    return
                if isinstance(item, BaseException):
                    raise item
                text = utf8.decode(item)
                if text:
                    yield text
        finally:
            stopped.set()
            worker.join()


class Trainer:
    """`fbt train`'s loop over a Session, in-process: the same data, schedule,
    validation, checkpoints and run folder (run.json, metrics.jsonl,
    latest.safetensors, step-N.safetensors).

    Trainer(session, data=None, steps=None, seed=None, lr=None, warmup=None,
            eval_every=None, eval_batches=None, save_every=None,
            accumulate=None, out=None, resume=None, init=None,
            stop_after=None, tokenizer=None, val_fraction=None,
            test_fraction=None)

    The options are fbt train's, named with underscores; unset ones come
    from the resumed run, else the spec. Making the Trainer initializes or
    resumes the session as fbt train does.
    """

    def __init__(self, session, **options):
        if not isinstance(session, _fbt._Session):
            raise TypeError("Trainer: expected an fbt.Session, got %s" % type(session).__name__)
        options = {k: (os.fspath(v) if isinstance(v, os.PathLike) else v)
                   for k, v in options.items()}
        self.session = session
        self._trainer = _fbt._Trainer(session, options)

    @property
    def out_dir(self):
        return self._trainer.out_dir

    @property
    def start_step(self):
        return self._trainer.start_step

    @property
    def end_step(self):
        return self._trainer.end_step

    @property
    def settings(self):
        """The resolved settings, as run.json records them."""
        return self._trainer.settings

    def run(self, progress=None):
        """Trains to the end (or stop_after). `progress(record)` gets each
        line of metrics.jsonl as a dict as it is written (a step's or a
        validation's). Returns the summary: start_step, end_step,
        total_steps, finished, first_loss and last_loss (pass 1, mean of
        the first and last `window` steps), last_eval, tokens_per_s,
        checkpoint. Ctrl-C stops after the step in flight; the last
        checkpoint stays, and Trainer(..., resume=out_dir) continues."""
        return self._trainer.run(progress)


def train(bundle, progress=None, threads=None, **options):
    """Trains `bundle` as `fbt train BUNDLE` with `options` (Trainer's);
    returns (the Session, trained, and the run's summary)."""
    session = Session(bundle, threads=threads)
    summary = Trainer(session, **options).run(progress)
    return session, summary
