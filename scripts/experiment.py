#!/usr/bin/env python3
"""Trains an FBT and its baselines on the same data, evaluates all of them in
inference mode, and writes report.md with PNG plots.

    experiment.py --spec SPEC.json [--steps N] [--out DIR]
                  [--data FILE | --recipe embedded|code [--tokenizer bytes|sp]]
                  [--depth-task [--depth-k 1..8] [--depth-mix 0.5] [--depth-ops +-]
                                [--depth-weights W,...] [--depth-heldout-rate R]]
                  [--multipliers 1,1.5,2,3] [--set SECTION.KEY=VALUE ...]
                  [--fbt-set SECTION.KEY=VALUE ...] [--fbt-recipe fbt|paper]
                  [--baselines DIR] [--keep DIR]
                  [--seeds N] [--seed S] [--splits validation,test]
                  [--report-split validation|test] [--windows N|all]
                  [--deeper-plain] [--problems N] [--build BUILD_DIR] [--quick]
                  [--sft plain,worked [--sft-steps N] [--sft-lr LR]]
                  [--probe [--probe-windows N]]

The models, one spec:
  fbt            the spec as written (its feedback recipe and pass schedule)
  same-tokens    fusion "none": a plain transformer, the same steps and tokens
  same-flops     fusion "none", trained for as many more steps as give it the
                 FBT run's training FLOPs (per-K FLOPs per token from
                 `fbtc --describe --json`, weighted by the pass schedule)
  plain-Mx       fusion "none" on M times the FBT's tokens (--multipliers;
                 same-tokens is 1x), each with its own full schedule
`--set` changes a field of the spec for all of them (e.g. a smaller batch to
fit a time budget: --set training.batch_size=8); `--fbt-set` the FBT's alone
(a recipe variant), and `--baselines DIR` then takes the plain runs from an
earlier run of the same spec and data instead of training them again. Each
is trained as `fbt train` does and measured as `fbt eval` and `fbt probe`
do: in this process through the build's fbt module (python/; the same run
folders and JSON, test/python/test_experiment_runner.py), or as those
commands where the build has none. Measured: held-out loss per
pass and per decoding regime (standard, soft, fused:2, fused:3), task
accuracy (arithmetic, counting; on the embedded corpus) per regime, and for
the FBT the contraction of its feedback map.

Tokens-equivalence: the plain runs' held-out loss against their training
tokens, and for each FBT regime the multiple of the FBT's tokens at which a
plain model matches it, interpolated in log tokens
(scripts/tokens_equivalence.py), per seed; the report gives their mean with
a 95% t-interval over the seeds and the FLOPs-equivalence beside it.

Seeds and parts: --seeds N trains every model under seeds base .. base+N-1;
every model is measured on --splits (validation and test): recipes are
chosen on validation (scripts/recipe_search.py), reports shown on test.

Data: the embedded corpus (default), a file (--data), or a recipe:
  --recipe code  the Python standard library as Debian ships it, split by
                 module into training, validation and test parts
                 (scripts/code_corpus.py), as bytes or through a
                 SentencePiece model trained on the training part
                 (--tokenizer sp, --sp-vocab pieces; the spec's vocab_size
                 and bos_token_id follow the model).
--depth-task mixes the depth task (scripts/depth_task.py: a digit tracked
through k updates, answer first; --depth-k, --depth-mix, --depth-weights,
--depth-ops, --depth-heldout-rate) into the byte-level training text and
reports exact-match accuracy on its held-out problems per model, regime and fused:N (N =
1..--depth-passes) against k: depth.{md,jsonl,png}.

--sft adds a stage after pretraining (scripts/sft_task.py): the FBT and the
same-tokens plain model are each instruction-tuned from their weights
(`fbt train --init`, the loss on the answers alone) on sums asked as
questions, answered plainly or with worked steps (one tuned run per style),
and asked held-out questions before and after (`fbt eval --task chat:`):
accuracy and mean answer length per regime, sft.md.

--probe compiles each model with `fbtc --with-states` and probes it
(`fbt probe`) on the report part for the FBT (standard prefill and fused:2..8) and the
same-tokens plain model (and, for the FBT, the states soft decoding
carries): test R^2 of ridge probes per layer and regime for
bracket depth, indentation and the letter control, beside random features
of the same width and, for each fused pass, the state it was handed (probe.md,
probe.png); with --depth-task also the task's
running value on its held-out problems (test accuracy of one-vs-rest
probes, beside the most common value's share).

Everything lands in DIR (default runs/experiment-NAME): the bundles, runs,
the data recipe's files, results.json (the raw results: the command, the
commit, every run's eval JSON per part and metrics summary) and, built from
it alone by scripts/experiment_report.py, report.md, its tables and plots.
"""

import argparse
import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import code_corpus  # noqa: E402
import depth_task  # noqa: E402
import experiment_report  # noqa: E402
import sft_task  # noqa: E402


_modules = {}  # build folder -> its fbt module (None: the build has none)


def fbt_module(fbt):
    """The fbt Python module of the build whose CLI is `fbt` (BUILD/tools/fbt/fbt
    or BUILD/tools/fbtc/fbtc -> BUILD/python), or None where that build made
    none."""
    build = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(fbt))))
    if build not in _modules:
        _modules[build] = None
        package = os.path.join(build, "python")
        if os.path.isdir(os.path.join(package, "fbt")):
            sys.path.insert(0, package)
            try:
                import fbt as module
                if os.path.dirname(os.path.dirname(os.path.abspath(module.__file__))) == package:
                    _modules[build] = module
            except ImportError:
                pass
            finally:
                sys.path.remove(package)
    return _modules[build]


# fbt train's and fbt eval's options that are not counts, by their module names.
TRAIN_OPTION_TYPES = {"data": str, "tokenizer": str, "init": str, "resume": str,
                      "val_fraction": float, "test_fraction": float, "lr": float,
                      "regimes": str}


def options_of(flags):
    """fbt train's (or fbt eval's data) flags, --name value pairs, as keyword
    arguments of the module's Trainer."""
    if len(flags) % 2:
        sys.exit("experiment: flags come as --name value pairs, got %s" % flags)
    return {name[2:].replace("-", "_"): TRAIN_OPTION_TYPES.get(name[2:].replace("-", "_"), int)(
        value) for name, value in zip(flags[::2], flags[1::2])}


_session = {}  # (bundle, checkpoint) -> the module's session on them: the last one


def in_process(module, cmd, bundle, ckpt, flags):
    """The module's session on (bundle, ckpt), kept for the next call on the
    same pair, and the data FLAGS name as keyword arguments; echoes `cmd`."""
    print("$ (in-process) fbt " + " ".join(cmd[1:]), flush=True)
    if _session.get("key") != (bundle, ckpt):
        _session.clear()  # one session at a time
        _session.update(key=(bundle, ckpt), session=module.Session(bundle, ckpt=ckpt))
    o = options_of(flags)
    data = dict(data=o.get("data"), val_fraction=o.get("val_fraction"),
                test_fraction=o.get("test_fraction"), run=ckpt)
    return _session["session"], data


def eval_json(fbt, bundle, ckpt, flags, measure):
    """`fbt eval BUNDLE --ckpt CKPT --json FLAGS MEASURE`, MEASURE being
    --contraction or --task NAME [--regimes R,...] [--problems N]: in this
    process where the build has the module (the same JSON), else a process."""
    module = fbt_module(fbt)
    cmd = [fbt, "eval", bundle, "--ckpt", ckpt, "--json"] + flags + measure
    if module is None:
        return json.loads(run(cmd, capture=True))
    session, data = in_process(module, cmd, bundle, ckpt, flags)
    if measure == ["--contraction"]:
        return session.contraction(**data)
    o = options_of(measure[2:])
    if measure[:1] != ["--task"] or set(o) - {"regimes", "problems"}:
        sys.exit("experiment: no in-process form of fbt eval %s" % " ".join(measure))
    regimes = o.get("regimes")
    return session.task(measure[1], problems=o.get("problems", 200),
                        regimes=None if regimes is None else regimes.split(","), **data)


def held_out_losses(fbt, bundle, ckpt, split, windows, flags, regimes=None):
    """`fbt eval BUNDLE --ckpt CKPT --json FLAGS --windows N --split SPLIT
    [--regimes R,...]` (FLAGS: --data and the fractions), in this process
    where the build has the module: the same JSON (test/python/). Else as a
    process."""
    module = fbt_module(fbt)
    cmd = [fbt, "eval", bundle, "--ckpt", ckpt, "--json"] + flags + [
        "--windows", str(windows), "--split", split] + (
        ["--regimes", ",".join(regimes)] if regimes else [])
    if module is None:
        return json.loads(run(cmd, capture=True))
    session, data = in_process(module, cmd, bundle, ckpt, flags)
    part = session.held_out(split, **data)
    r = session.evaluate(part.tokens, regimes=regimes,
                         windows=None if str(windows) == "all" else int(windows),
                         byte_level=part.byte_level)
    r["split"] = split
    return r


def describe_spec(fbtc, spec):
    """`fbtc SPEC --describe --json`, in this process where the build has
    the module (the same dict, test/python/test_cli_parity.py)."""
    module = fbt_module(fbtc)
    cmd = [fbtc, spec, "--describe", "--json"]
    if module is None:
        return json.loads(run(cmd, capture=True))
    print("$ (in-process) fbtc " + " ".join(cmd[1:]), flush=True)
    return module.describe(spec)


def compile_spec(fbtc, spec, bundle, with_states=False):
    """`fbtc SPEC --target=cpu [--with-states] -o BUNDLE`, in this process
    where the build has the module."""
    module = fbt_module(fbtc)
    cmd = [fbtc, spec, "--target=cpu"] + (["--with-states"] if with_states else []) + [
        "-o", bundle]
    if module is None:
        run(cmd)
        return
    print("$ (in-process) fbtc " + " ".join(cmd[1:]), flush=True)
    module.compile(spec, target="cpu", output=bundle, with_states=with_states)


def train(fbt, bundle, steps, seed, rundir, flags):
    """`fbt train BUNDLE --steps --seed --out --quiet FLAGS` (fbt train's options),
    in this process through the build's fbt module where it has one: the same
    run folder, bit for bit (test/python/test_cli_parity.py), without a process
    and a bundle load per run. Else as a process."""
    module = fbt_module(fbt)
    cmd = [fbt, "train", bundle] + flags + ["--steps", str(steps), "--seed", str(seed),
                                            "--out", rundir, "--quiet"]
    if module is None:
        run(cmd)
        return
    print("$ (in-process) fbt " + " ".join(cmd[1:]), flush=True)
    session = module.Session(bundle)
    summary = module.Trainer(session, steps=steps, seed=seed, out=rundir,
                             **options_of(flags)).run()
    print("trained %d steps; train loss (pass 1) %.3f -> %.3f" % (
        summary["end_step"], summary["first_loss"], summary["last_loss"]), flush=True)


def run(cmd, capture=False):
    """Runs a command, echoing it; its stdout when capture."""
    print("$ " + " ".join(cmd), flush=True)
    if capture:
        return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    subprocess.run(cmd, check=True)
    return None


def schedule_weights(describe, steps):
    """{K: fraction of the steps} of a spec's pass schedule over `steps`
    steps (expected values), from `fbtc --describe --json`'s resolved spec:
    the defaults are the frontend's, never restated here. As the runtime's
    PassSchedule: K = 1 for the first ceil(f * steps) steps, then K drawn from
    pass_distribution, or K2 = passes with deep_pass_fraction at deep_passes."""
    spec = describe["spec"]
    t = spec["training"]
    if spec["feedback"]["fusion"] == "none":
        return {1: 1.0}
    single = min(steps, int(-(-t["single_pass_fraction"] * steps // 1)))  # ceil
    w = {1: single / steps}
    rest = 1 - w[1]
    if "pass_distribution" in t:
        dist = {int(k): float(v) for k, v in t["pass_distribution"].items()}
    else:
        p3 = float(t["deep_pass_fraction"])
        dist = {int(t["passes"]): 1 - p3}
        dist[int(t["deep_passes"])] = dist.get(int(t["deep_passes"]), 0) + p3
    total = sum(dist.values())
    for k, v in dist.items():
        w[k] = w.get(k, 0) + rest * v / total
    return w


def flops_per_token(describe, k):
    for p in describe["training"]["passes"]:
        if p["k"] == k:
            return p["flops_per_token"]
    raise KeyError(k)


def read_metrics(path):
    steps, evals = [], []
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            (evals if "val_loss" in r else steps).append(r)
    return steps, evals


SFT_REGIMES = ["standard", "soft", "fused:2", "fused:4"]  # the SFT stage asks in these
TRAINED_SPEC = "trained-spec.json"  # in a run folder: the spec it was trained from


def trained_spec(spec_path):
    """What a run's weights depend on: the spec less its inference shapes."""
    with open(spec_path) as f:
        spec = json.load(f)
    spec.pop("inference", None)
    return spec


def finished_run(rundir, steps, seed, spec_path):
    """The last step's metrics record if `rundir` holds a run that `fbt train
    --steps steps --seed seed` finished from the same spec (bar its inference
    shapes): run.json and the metrics say so, and TRAINED_SPEC matches; else
    None. An experiment restarted after an interruption, or with larger
    prompts, takes such a run as it is."""
    try:
        with open(os.path.join(rundir, "run.json")) as f:
            recorded = json.load(f)
        with open(os.path.join(rundir, TRAINED_SPEC)) as f:
            same_spec = json.load(f) == trained_spec(spec_path)
        last = read_metrics(os.path.join(rundir, "metrics.jsonl"))[0]
    except (OSError, ValueError):
        return None
    done = (same_spec and recorded.get("steps") == steps and recorded.get("seed") == seed
            and last and last[-1]["step"] == steps
            and os.path.exists(os.path.join(rundir, "latest.safetensors")))
    return last[-1] if done else None


def sft_stage(fbt, bundle, spec_path, rundir, seed, sft, regimes, args):
    """{style: {before, after, steps}}: the chat task's JSON on the style's
    held-out questions from the pretrained run in `rundir`, and from its
    instruction-tuned continuation (rundir-sft-STYLE, reused when finished)."""
    out = {}
    for style, paths in sft.items():
        def ask(ckpt):
            return eval_json(fbt, bundle, ckpt, ["--data", paths["train"]],
                             ["--task", "chat:" + paths["heldout"], "--regimes",
                              ",".join(regimes), "--problems", str(args.sft_problems)])
        tuned = "%s-sft-%s" % (rundir, style)
        if not finished_run(tuned, args.sft_steps, seed, spec_path):
            train(fbt, bundle, args.sft_steps, seed, tuned,
                  ["--init", rundir, "--data", paths["train"], "--lr", repr(args.sft_lr),
                   "--warmup", str(max(1, args.sft_steps // 20))])
            with open(os.path.join(tuned, TRAINED_SPEC), "w") as f:
                json.dump(trained_spec(spec_path), f, indent=1)
        out[style] = {"steps": args.sft_steps, "lr": args.sft_lr,
                      "before": ask(os.path.join(rundir, "latest.safetensors")),
                      "after": ask(os.path.join(tuned, "latest.safetensors")),
                      "metrics": metrics_summary(os.path.join(tuned, "metrics.jsonl"))}
    return out


def check_depth_prompts(task, describe):
    """Every depth problem's prompt (and the BOS before it) must fit each
    model's compiled prefill: refused before any training, not hours in."""
    for key, d in describe.items():
        limit = d["spec"]["inference"]["max_prompt_length"]
        for k, path in task["problems"].items():
            with open(path) as f:
                longest = max(len(json.loads(line)["prompt"].encode()) for line in f if line.strip())
            if longest + 1 > limit:
                sys.exit("experiment: the depth task's k = %s prompts take %d tokens with BOS, "
                         "but the %s model's prefill holds %d (inference.max_prompt_length); "
                         "raise it with --set inference.max_prompt_length=%d"
                         % (k, longest + 1, key, limit, longest + 1))


def parse_multipliers(text):
    ms = sorted({float(x) for x in text.split(",") if x.strip()})
    if not ms or ms[0] <= 0:
        sys.exit("experiment: --multipliers wants positive numbers, e.g. 1,1.5,2,3")
    return ms


def prepare_data(args, out, fbt):
    """The data the models train on: {data, val_fraction, test_fraction, name,
    spec (fields to change), bytes_per_token, depth (task.json)}."""
    d = {"data": args.data, "val_fraction": None, "test_fraction": None,
         "name": args.data or "the embedded corpus", "spec": {}, "bytes_per_token": None,
         "depth": None}
    if args.recipe == "code":
        if args.data:
            sys.exit("experiment: give --data or --recipe, not both")
        r = code_corpus.build(os.path.join(out, "data", "code-" + args.tokenizer), args.tokenizer,
                              args.sp_vocab, fbt=fbt)
        d.update(data=r["data"], val_fraction=r["val_fraction"], test_fraction=r["test_fraction"],
                 recipe=r,
                 name="the code recipe (%s %s: %d training, %d validation and %d test files, "
                      "split by module; %s)" % (
                          r["package"], r["version"], r["train_files"], r["validation_files"],
                          r["test_files"], "bytes" if args.tokenizer == "bytes" else
                          "SentencePiece, %d pieces" % args.sp_vocab))
        if args.tokenizer == "sp":
            d["spec"] = {"vocab_size": r["vocab_size"], "bos_token_id": r["bos_token_id"]}
            d["bytes_per_token"] = r["test_bytes"] / r["test_tokens"]
    elif args.recipe not in (None, "embedded"):
        sys.exit("experiment: unknown --recipe %r (embedded or code)" % args.recipe)
    if args.depth_task:
        if args.recipe != "code" or d["spec"]:
            sys.exit("experiment: --depth-task mixes its problems into the code recipe's "
                     "byte-level training documents: give --recipe code (--tokenizer bytes)")
        weights = [float(w) for w in args.depth_weights.split(",")] if args.depth_weights else None
        t = depth_task.build(d["data"], d["recipe"]["validation_files"], d["recipe"]["test_files"],
                             os.path.join(out, "data", "depth"),
                             args.depth_mix, depth_task.parse_ks(args.depth_k), weights,
                             problems=args.depth_problems or args.problems, ops=args.depth_ops,
                             min_heldout=args.depth_problems or args.problems,
                             rate=args.depth_heldout_rate)
        d.update(data=t["data"], val_fraction=t["val_fraction"], test_fraction=t["test_fraction"],
                 depth=t,
                 name=d["name"] + ", with the depth task as %.0f%% of the training bytes" % (
                     100 * args.depth_mix))
    return d


def recorded_command(argv):
    """The command as results.json records it: paths inside the checkout
    relative to it, any other path by its last part (a build folder kept
    elsewhere says nothing about the results)."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = ["scripts/experiment.py"]
    for a in argv:
        if os.path.isabs(a):
            rel = os.path.relpath(a, root)
            a = rel if not rel.startswith("..") else os.path.basename(a.rstrip("/"))
        out.append(a)
    return out


def git_commit():
    """The commit the runner ran at ("unknown" outside a checkout); "+" when
    the tree had changes."""
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        return head + ("+" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def metrics_summary(path):
    """What the report needs of a run's metrics.jsonl: every validation
    record, and the last step's record."""
    steps, evals = read_metrics(path)
    return {"evals": evals, "last_step": steps[-1] if steps else None,
            "passes_per_step": [s["passes"] for s in steps]}


def parse_args():
    """The command line (the usage above); the options of each stage are added
    by the add_*_options below, in the order --help lists them."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", required=True)
    ap.add_argument("--steps", type=int, help="FBT training steps (default: the spec's)")
    ap.add_argument("--out", help="output folder (default runs/experiment-NAME)")
    ap.add_argument("--data", help="training text or .bin tokens (default: the embedded corpus)")
    ap.add_argument("--recipe", choices=["embedded", "code"],
                    help="a named data recipe instead of --data: embedded (the default) or "
                         "code (the Python standard library, split by module)")
    ap.add_argument("--tokenizer", choices=["bytes", "sp"], default="bytes",
                    help="--recipe code: bytes, or a SentencePiece model trained on the "
                         "training part (default bytes)")
    ap.add_argument("--sp-vocab", type=int, default=4096, help="--tokenizer sp: pieces (4096)")
    ap.add_argument("--multipliers", default="1,1.5,2,3",
                    help="plain baselines at these multiples of the FBT's tokens (default "
                         "1,1.5,2,3), each its own full schedule")
    add_depth_options(ap)
    add_variant_options(ap)
    add_measure_options(ap)
    return ap.parse_args()


def add_depth_options(ap):
    """--depth-task's options, and the depth control (--deeper-plain)."""
    ap.add_argument("--depth-task", action="store_true",
                    help="mix the depth task into the training text and report its accuracy")
    ap.add_argument("--depth-k", default="1..8", help="--depth-task: depths (default 1..8)")
    ap.add_argument("--depth-mix", type=float, default=0.5,
                    help="--depth-task: its share of the training bytes (default 0.5)")
    ap.add_argument("--depth-weights", help="--depth-task: weights of the depths (default 1/k)")
    ap.add_argument("--depth-ops", default=depth_task.DEFAULT_OPS,
                    help="--depth-task: the updates, of + - * / (default %s)" % depth_task.DEFAULT_OPS)
    ap.add_argument("--depth-heldout-rate", type=float, default=depth_task.HELDOUT_RATE,
                    help="--depth-task: the share of each depth's problems held out (default "
                         "%g; perm5's k = 1 has 600 problems, so 200 held out needs 0.34)"
                         % depth_task.HELDOUT_RATE)
    ap.add_argument("--depth-problems", type=int,
                    help="--depth-task: held-out problems per depth (default --problems)")
    ap.add_argument("--deeper-plain", action="store_true",
                    help="also a plain model with as many more layers as give it the FBT's "
                         "training FLOPs on the same tokens (the depth control)")
    ap.add_argument("--depth-passes", type=int, default=8,
                    help="--depth-task: the FBT's regimes fused:1..N (default 8)")


def add_variant_options(ap):
    """The spec's changes (for every model, or the FBT's recipe alone) and the
    runs taken from elsewhere (--baselines, --keep)."""
    ap.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                    help="change a spec field for every model (a JSON value)")
    ap.add_argument("--fbt-set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                    help="change a spec field for the FBT only (a recipe variant)")
    ap.add_argument("--fbt-recipe", choices=["fbt", "paper"],
                    help="the FBT's recipe preset (the spec's \"recipe\"): its feedback "
                    "and training keys that the preset sets are dropped from the FBT's "
                    "spec, so the preset's values hold (--fbt-set still overrides them)")
    ap.add_argument("--baselines", metavar="DIR",
                    help="take the plain runs from an earlier run's folder instead of "
                    "training them again (its plain spec must be this run's: only the "
                    "FBT's recipe may differ); for recipe searches")
    ap.add_argument("--keep", metavar="DIR",
                    help="also keep each run's raw result in DIR/seed-S/LABEL/result.json, and "
                    "take a run whose result is there as done without its run folder: a "
                    "long experiment committed in pieces resumes on another machine")


def add_measure_options(ap):
    """The seeds, the parts and how much of them each run is measured on, and
    the stages after pretraining (--sft, --probe)."""
    ap.add_argument("--problems", type=int, default=200, help="problems per task")
    ap.add_argument("--seeds", type=int, default=1,
                    help="train every model (FBT and plain) under this many seeds: the base "
                         "seed, base + 1, ... (default 1)")
    ap.add_argument("--seed", type=int,
                    help="the base seed (default: the spec's training.seed)")
    ap.add_argument("--splits", default="validation,test",
                    help="the held-out parts each model is measured on (default "
                         "validation,test: choose on validation, report on test)")
    ap.add_argument("--report-split", choices=["validation", "test"],
                    help="the part report.md shows (default test when measured): a recipe "
                         "search's runs show validation")
    ap.add_argument("--windows", default="all",
                    help="held-out windows per loss, spread over the part (default all)")
    ap.add_argument("--build", default=os.environ.get("FBT_BUILD_DIR", "build"))
    ap.add_argument("--sft", default="",
                    help="an SFT stage after pretraining, one tuned run per style: plain, "
                    "worked or both (plain,worked); see above")
    ap.add_argument("--sft-steps", type=int, default=400, help="--sft: steps (400)")
    ap.add_argument("--sft-lr", type=float, default=1e-3, help="--sft: peak rate (1e-3)")
    ap.add_argument("--sft-count", type=int, default=2000,
                    help="--sft: training conversations (2000)")
    ap.add_argument("--sft-problems", type=int, default=200,
                    help="--sft: held-out questions asked (200)")
    ap.add_argument("--probe", action="store_true",
                    help="probe every layer of the FBT and the same-tokens model (fbt probe)")
    ap.add_argument("--probe-windows", type=int, default=1280,
                    help="--probe: held-out windows (1280: each probe scored on a fifth, 256)")
    ap.add_argument("--quick", action="store_true",
                    help="fewer eval windows and problems (for tests)")


def check_options(args):
    """(multipliers, splits, report split) of the command line; exits on a bad
    one before anything is built."""
    multipliers = parse_multipliers(args.multipliers)
    splits = [x for x in args.splits.split(",") if x]
    if not splits or any(x not in ("validation", "test") for x in splits):
        sys.exit("experiment: --splits takes validation and/or test, e.g. validation,test")
    if args.seeds < 1:
        sys.exit("experiment: --seeds must be >= 1")
    report_split = args.report_split or ("test" if "test" in splits else "validation")
    if report_split not in splits:
        sys.exit("experiment: --report-split %s is not among --splits" % report_split)
    return multipliers, splits, report_split


def load_spec(args):
    """(spec with --set applied, its name, the FBT's steps, the output folder,
    made); the name and steps are the spec's as given. Exits unless the spec
    has a feedback path."""
    with open(args.spec) as f:
        spec = json.load(f)
    name = spec.get("name", "fbt")
    steps = args.steps or spec.get("training", {}).get("steps", 1000)
    out = args.out or os.path.join("runs", "experiment-" + name)
    os.makedirs(out, exist_ok=True)
    apply_changes(spec, args.set, "--set")
    if spec.get("feedback", {}).get("fusion", "glu") == "none":
        sys.exit("experiment: the spec has no feedback path (fusion none); give an FBT spec")
    return spec, name, steps, out


def sft_data(args, out, spec):
    """(styles, {style: sft_task's files}): --sft's answer styles, checked, and
    their training and held-out questions."""
    styles = [x for x in args.sft.split(",") if x]
    if any(x not in sft_task.STYLES for x in styles):
        sys.exit("experiment: --sft takes %s" % " and/or ".join(sft_task.STYLES))
    if styles and args.tokenizer != "bytes":
        sys.exit("experiment: --sft asks byte-level questions (fbt eval --task); "
                 "give --tokenizer bytes")
    sft = {x: sft_task.build(os.path.join(out, "data", "sft"), x, args.sft_count,
                             args.sft_problems, base_seed_of(args, spec)) for x in styles}
    return styles, sft


def write_model_specs(args, spec, name, data, out):
    """(plain spec, {"fbt": path, "plain": path}): the spec, and the spec without
    its feedback path. The FBT's (`spec`, changed in place by --fbt-recipe and
    --fbt-set) is written to OUT/fbt.json where it is not --spec as given."""
    plain = json.loads(json.dumps(spec))
    plain["name"] = name + "-plain"
    if args.fbt_recipe:
        use_recipe(spec, args.fbt_recipe)
    apply_changes(spec, args.fbt_set, "--fbt-set")
    fbt_spec = args.spec
    if args.set or args.fbt_set or args.fbt_recipe or data["spec"]:  # the FBT's own spec
        fbt_spec = os.path.join(out, "fbt.json")
        with open(fbt_spec, "w") as f:
            json.dump(spec, f, indent=2)
    plain["feedback"]["fusion"] = "none"
    specs = {"fbt": fbt_spec, "plain": os.path.join(out, "plain.json")}
    with open(specs["plain"], "w") as f:
        json.dump(plain, f, indent=2)
    return plain, specs


def plan_models(fbtc, specs, plain, name, steps, multipliers, deeper_plain, out):
    """(describe, schedule weights, {kind: FLOPs per token}, models): each
    spec described, and the models as (label, kind, steps): the FBT, the two
    comparisons, then the plain curve's other points. A plain run of the same
    steps as another is trained once. With --deeper-plain, specs gains the
    deeper plain model's."""
    describe = {k: describe_spec(fbtc, p) for k, p in specs.items()}
    weights = schedule_weights(describe["fbt"], steps)
    fbt_flops = sum(w * flops_per_token(describe["fbt"], k) for k, w in weights.items())
    plain_flops = flops_per_token(describe["plain"], 1)
    matched = max(1, round(steps * fbt_flops / plain_flops))
    flops = {"fbt": fbt_flops, "plain": plain_flops}
    models = [("fbt", "fbt", steps), ("same-tokens", "plain", steps),
              ("same-flops", "plain", matched)]
    for m in multipliers:
        n = max(1, round(m * steps))
        if m != 1:
            models.append(("plain-%gx" % m, "plain", n))
    if deeper_plain:
        # A plain model of equal depth-compute: as many more layers as give
        # it the FBT's training FLOPs on the same tokens.
        deeper = json.loads(json.dumps(plain))
        layers = plain["num_hidden_layers"]
        deeper["num_hidden_layers"] = max(layers + 1, round(layers * fbt_flops / plain_flops))
        deeper["name"] = name + "-plain-%dL" % deeper["num_hidden_layers"]
        specs["deeper"] = os.path.join(out, "deeper.json")
        with open(specs["deeper"], "w") as f:
            json.dump(deeper, f, indent=2)
        describe["deeper"] = describe_spec(fbtc, specs["deeper"])
        flops["deeper"] = flops_per_token(describe["deeper"], 1)
        models.append(("plain-%dL" % deeper["num_hidden_layers"], "deeper", steps))
    return describe, weights, flops, models


def compile_bundles(fbtc, specs, out, states):
    """{kind: bundle} of each spec; with `states` (--probe) each also compiled
    with the states steps (fbtc --with-states) beside it, OUT/KIND-states.fbtb."""
    bundles = {}
    for key, path in specs.items():
        bundles[key] = os.path.join(out, key + ".fbtb")
        compile_spec(fbtc, path, bundles[key])
        if states:  # the same steps and the states steps (fbtc --with-states)
            compile_spec(fbtc, path, os.path.join(out, key + "-states.fbtb"), with_states=True)
    return bundles


def plan_experiment(args):
    """What every run shares, decided and built before any training: the data,
    the specs and their bundles, the models and seeds, fbt eval's flags, and
    what a run's measurements depend on (plan["measure"])."""
    multipliers, splits, report_split = check_options(args)
    fbtc = os.path.join(args.build, "tools", "fbtc", "fbtc")
    fbt = os.path.join(args.build, "tools", "fbt", "fbt")
    spec, name, steps, out = load_spec(args)
    if args.quick and not args.depth_problems:
        args.depth_problems = 20
    if args.quick:
        args.sft_problems = min(args.sft_problems, 20)
    data = prepare_data(args, out, fbt)
    styles, sft = sft_data(args, out, spec)
    spec.update(data["spec"])
    plain, specs = write_model_specs(args, spec, name, data, out)
    describe, weights, flops, models = plan_models(fbtc, specs, plain, name, steps, multipliers,
                                                   args.deeper_plain, out)
    if data["depth"]:
        check_depth_prompts(data["depth"], describe)
    bundles = compile_bundles(fbtc, specs, out, args.probe)

    feed = ["--data", data["data"]] if data["data"] else []
    if data["val_fraction"] is not None:
        feed += ["--val-fraction", repr(data["val_fraction"]),
                 "--test-fraction", repr(data["test_fraction"])]
    windows = ["--windows", "16" if args.quick else args.windows]
    problems = ["--problems", str(20 if args.quick else args.problems)]
    base_seed = base_seed_of(args, spec)
    reuse = earlier_plain_runs(args.baselines, plain) if args.baselines else {}
    # What a run's measurements depend on beyond its training: a run whose
    # result.json was measured so is taken as it is (an interrupted
    # experiment resumes at the first run without one).
    measure = {"splits": splits, "windows": windows, "problems": problems,
               "depth": bool(data["depth"]), "depth_passes": args.depth_passes,
               "probe": args.probe, "probe_windows": args.probe_windows,
               "sft": args.sft, "sft_steps": args.sft_steps, "sft_lr": args.sft_lr}
    return {"fbt": fbt, "out": out, "spec": spec, "plain": plain, "specs": specs,
            "steps": steps, "describe": describe, "weights": weights, "flops": flops,
            "tokens_per_step": describe["fbt"]["training"]["tokens_per_step"],
            "models": models, "bundles": bundles, "data": data, "styles": styles, "sft": sft,
            "feed": feed, "windows": windows, "problems": problems,
            "fbt_regimes": ["standard", "soft"] + [
                "fused:%d" % n for n in range(1, args.depth_passes + 1)],
            "seeds": [base_seed + i for i in range(args.seeds)], "reuse": reuse,
            "splits": splits, "report_split": report_split, "measure": measure}


def run_all(plan, args):
    """{seed: {label: raw result}}: every model under every seed, in order; a
    run of the same kind and steps as an earlier label is that run under
    another name, and a plain run --baselines has is taken from there."""
    todo = unique_runs(plan["models"], plan["seeds"], plan["reuse"])
    clock = Progress({key: steps_ * plan["flops"][kind_]
                      for key, (kind_, steps_) in todo.items()})
    runs = {}
    for seed in plan["seeds"]:
        results, trained = {}, {}
        for label, kind, n in plan["models"]:
            if (kind, n) in trained:  # the same run under another name
                results[label] = dict(results[trained[(kind, n)]], alias_of=trained[(kind, n)])
                continue
            trained[(kind, n)] = label
            if kind == "plain" and (seed, n) in plan["reuse"]:
                results[label] = plan["reuse"][(seed, n)]
                continue
            results[label] = run_model(plan, args, seed, label, kind, n, clock)
        runs[str(seed)] = results
    return runs


def run_model(plan, args, seed, label, kind, n, clock):
    """One run's raw result: taken as it is where it was trained and measured
    as this experiment measures (its result.json, or --keep's), else trained
    (unless a finished run is there), measured and kept as it lands."""
    rundir = os.path.join(plan["out"], "seed-%d" % seed, label)
    t0 = time.time()
    finished = finished_run(rundir, n, seed, plan["specs"][kind])
    kept = finished and measured_result(rundir, plan["measure"])
    # Kept apart, a result says what was trained as well as how it was
    # measured: the run folder that would say so is not there.
    identity = dict(plan["measure"], trained=trained_spec(plan["specs"][kind]), steps=n,
                    seed=seed)
    if not kept and args.keep:
        kept = measured_result(kept_folder(args.keep, seed, label), identity)
    if kept:
        print("experiment: %s was trained and measured: taken as it is" % rundir)
        clock.done((seed, kind, n), 0)
        return kept
    if finished:
        print("experiment: %s is a finished run of %d steps, seed %d: measured as it is"
              % (rundir, n, seed))
        t0 -= finished["elapsed_s"]  # its training time, as if trained now
    else:
        train(plan["fbt"], plan["bundles"][kind], n, seed, rundir, plan["feed"])
        with open(os.path.join(rundir, TRAINED_SPEC), "w") as f:
            json.dump(trained_spec(plan["specs"][kind]), f, indent=1)
    r = measure_run(plan, args, seed, label, kind, n, rundir, time.time() - t0)
    keep_result(rundir, plan["measure"], r)
    if args.keep:
        keep_result(kept_folder(args.keep, seed, label), identity, r)
    clock.done((seed, kind, n), time.time() - t0)
    return r


def measure_run(plan, args, seed, label, kind, n, rundir, seconds):
    """A trained run's raw result: its losses on each part, the tasks (on the
    embedded corpus), the depth task, the FBT's contraction, and for the FBT
    and the same-tokens model the probes and the SFT stage where asked."""
    fbt, bundle, feed, data = plan["fbt"], plan["bundles"][kind], plan["feed"], plan["data"]
    ckpt = os.path.join(rundir, "latest.safetensors")
    r = {"steps": n, "seed": seed, "train_seconds": seconds, "kind": kind,
         "tokens": n * plan["tokens_per_step"],
         "multiplier": n / plan["steps"] if kind == "plain" else None,
         "flops_per_token": plan["flops"][kind], "losses": {}}
    for split in plan["splits"]:
        r["losses"][split] = held_out_losses(fbt, bundle, ckpt, split, plan["windows"][1], feed)
    if not data["data"]:  # the tasks ask byte-level questions of the corpus's kinds
        r["tasks"] = {t: eval_json(fbt, bundle, ckpt, feed, ["--task", t] + plan["problems"])
                      for t in ("arithmetic", "counting")}
    if data["depth"]:
        regs = plan["fbt_regimes"] if kind == "fbt" else ["standard"]
        r["depth"] = {}
        for k, path in data["depth"]["problems"].items():
            r["depth"][k] = eval_json(
                fbt, bundle, ckpt, feed,
                ["--task", "file:" + path, "--regimes", ",".join(regs),
                 "--problems", str(args.depth_problems or args.problems)])
    if kind == "fbt":
        r["contraction"] = eval_json(fbt, bundle, ckpt, feed, ["--contraction"])
    if args.probe and label in ("fbt", "same-tokens"):
        r["probe"] = probe(fbt, os.path.join(plan["out"], kind + "-states.fbtb"), ckpt,
                           kind == "fbt", feed, data["depth"], plan["report_split"], args)
    if plan["sft"] and label in ("fbt", "same-tokens"):
        r["sft"] = sft_stage(fbt, bundle, plan["specs"][kind], rundir, seed, plan["sft"],
                             SFT_REGIMES if kind == "fbt" else ["standard"], args)
    r["metrics"] = metrics_summary(os.path.join(rundir, "metrics.jsonl"))
    return r


def write_results(plan, args, runs):
    """results.json (the command, the commit, the specs and every run's raw
    result), and the report built from it alone."""
    data, sft, out = plan["data"], plan["sft"], plan["out"]
    raw = {"command": recorded_command(sys.argv[1:]), "commit": git_commit(),
           "spec": plan["spec"], "plain_spec": plan["plain"], "steps": plan["steps"],
           "seeds": plan["seeds"], "splits": plan["splits"], "report_split": plan["report_split"],
           "schedule_weights": {str(k): w for k, w in plan["weights"].items()},
           "describe": plan["describe"],
           "data": {k: v for k, v in data.items() if k in (
               "name", "val_fraction", "test_fraction", "bytes_per_token")},
           "depth": data["depth"] and dict({k: v for k, v in data["depth"].items() if k not in (
               "data", "problems")}, primary_control=DEPTH_PRIMARY_CONTROL),
           "probe": args.probe,
           "sft": sft and {"styles": plan["styles"], "count": args.sft_count,
                           "steps": args.sft_steps, "lr": args.sft_lr},
           "runs": runs}
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump(raw, f, indent=1)
    experiment_report.write(out)
    print("report: " + os.path.join(out, "report.md"))


def main():
    """Plans the experiment, runs it and writes its results."""
    args = parse_args()
    plan = plan_experiment(args)
    write_results(plan, args, run_all(plan, args))


RESULT = "result.json"  # in a run folder: its raw result and how it was measured


def kept_folder(keep, seed, label):
    """Where --keep holds a run's raw result: KEEP/seed-S/LABEL/result.json."""
    return os.path.join(keep, "seed-%d" % seed, label)


def measured_result(rundir, measure):
    """The raw result kept in `rundir` if it was measured as `measure` says."""
    try:
        with open(os.path.join(rundir, RESULT)) as f:
            kept = json.load(f)
    except (OSError, ValueError):
        return None
    return kept.get("result") if kept.get("measure") == measure else None


def keep_result(rundir, measure, result):
    """Writes the run's raw result as it lands (atomically: a run interrupted
    while measured keeps none)."""
    path = os.path.join(rundir, RESULT)
    os.makedirs(rundir, exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump({"measure": measure, "result": result}, f, indent=1)
    os.replace(path + ".tmp", path)


def unique_runs(models, seeds, reuse):
    """{(seed, kind, steps): (kind, steps)}: the runs the experiment trains."""
    todo = {}
    for seed in seeds:
        for _label, kind, n in models:
            if not (kind == "plain" and (seed, n) in reuse):
                todo[(seed, kind, n)] = (kind, n)
    return todo


class Progress:
    """Runs done of all, and the time left estimated from the seconds per
    training FLOP of the runs done so far (training and measuring)."""

    def __init__(self, work):
        self.work, self.left = work, dict(work)
        self.seconds = self.flops = 0.0

    def done(self, key, seconds):
        if key not in self.left:
            return
        flops = self.left.pop(key)
        if seconds > 0:
            self.seconds += seconds
            self.flops += flops
        rest = sum(self.left.values())
        eta = ("about %.0f min left" % (rest * self.seconds / self.flops / 60)
               if self.flops else "time left unknown")
        print("experiment: %d of %d runs done; %s" % (
            len(self.work) - len(self.left), len(self.work), eta), flush=True)


def probe(fbt, bundle, ckpt, feedback, feed, depth, split, args):
    """fbt probe's JSON: the code targets on the held-out part, and with the
    depth task the running value on its held-out problems (probe.jsonl); in
    this process where the build has the module (the same JSON), else as
    processes."""
    module = fbt_module(fbt)
    windows = 30 if args.quick else args.probe_windows
    common = [fbt, "probe", bundle, "--ckpt", ckpt, "--json", "--split", split,
              "--windows", str(windows)] + (["--soft"] if feedback else [])

    def measure(flags, targets=None):
        cmd = common + (["--targets", targets] if targets else []) + flags
        if module is None:
            return json.loads(run(cmd, capture=True))
        session, data = in_process(module, cmd, bundle, ckpt, flags)
        return session.probe(split, targets=targets or "depth,indent,letter", soft=feedback,
                             windows=windows, **data)

    out = measure(feed)
    if depth:
        p = depth["probe"]
        task = measure(["--data", p["data"], "--val-fraction", repr(p["val_fraction"]),
                        "--test-fraction", repr(p["test_fraction"])], "value")
        out["targets"]["value"] = task["targets"]["value"]
    return out


def base_seed_of(args, spec):
    return args.seed if args.seed is not None else spec.get("training", {}).get("seed", 1234)


# The depth task's gain is taken against this control, named here before any
# run: the plain model on the FBT's training FLOPs, the comparison a user
# paying for compute makes. The other controls are reported beside it; none
# is chosen after the results.
DEPTH_PRIMARY_CONTROL = "same-flops"


# The keys a recipe preset gives defaults for (frontend/Spec.cpp, applyRecipe,
# and the pass schedule's K): a spec that spells them out keeps its values.
RECIPE_KEYS = {
    "feedback": ["fusion", "state", "input_norm", "gate_norm", "state_norm", "output_norm",
                 "token_residual", "prefix_mixin"],
    "training": ["single_pass_fraction", "grad_passes", "pass_distribution", "passes",
                 "deep_passes", "deep_pass_fraction"],
}


def use_recipe(spec, recipe):
    """`spec` under a recipe preset: its "recipe" set and the keys the preset
    gives defaults for dropped, so the preset's values apply."""
    spec["recipe"] = recipe
    for section, keys in RECIPE_KEYS.items():
        for key in keys:
            spec.get(section, {}).pop(key, None)


def apply_changes(spec, changes, flag):
    """SECTION.KEY=VALUE changes (a JSON value, or a bare string) into `spec`."""
    for change in changes:
        path, eq, value = change.partition("=")
        if not eq:
            sys.exit("experiment: %s %r: expected SECTION.KEY=VALUE" % (flag, change))
        node, keys = spec, path.split(".")
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        try:
            node[keys[-1]] = json.loads(value)
        except ValueError:
            node[keys[-1]] = value  # a bare string


def earlier_plain_runs(folder, plain):
    """{(seed, steps): result} of the plain runs an earlier run trained; exits
    unless its plain spec is `plain` (names aside)."""
    try:
        with open(os.path.join(folder, "results.json")) as f:
            earlier = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit("experiment: --baselines %s: %s" % (folder, e))
    if dict(earlier["plain_spec"], name=None) != dict(plain, name=None):
        sys.exit("experiment: --baselines %s: its plain spec differs from this run's "
                 "(only the FBT's recipe may differ)" % folder)
    found = {}
    for seed, results in earlier["runs"].items():
        for label, r in results.items():
            if r["kind"] == "plain" and "alias_of" not in r:
                found[(int(seed), r["steps"])] = dict(r, reused_from=os.path.join(folder, label))
    return found


if __name__ == "__main__":
    main()
