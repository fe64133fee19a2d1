"""fbt.Session: steps, arrays in and out, checkpoints, generation, states."""
import threading

import numpy as np
import pytest

from conftest import THREADS, TINY


def batch(session, part="train", start=0):
    """[B, T + 1] ids from the embedded corpus."""
    ids = session_corpus()[part]
    b, t = session.batch_size, session.sequence_length
    return ids[start:start + b * (t + 1)].reshape(b, t + 1)


_corpus = []


def session_corpus():
    import fbt
    if not _corpus:
        _corpus.append(fbt.default_corpus())
    return _corpus[0]


def test_default_corpus(fbt):
    parts = session_corpus()
    assert set(parts) == {"train", "validation", "test"}
    for ids in parts.values():
        assert ids.dtype == np.int32 and ids.ndim == 1 and ids[0] == 0  # BOS first
    # The corpus's own parts: 230 KiB of training text, about 448 KiB each held out.
    assert 200_000 < len(parts["train"]) < len(parts["validation"])


def test_train_step_forms_agree(fbt, bundle):
    one = fbt.Session(bundle, seed=7, threads=THREADS)
    two = fbt.Session(bundle, seed=7, threads=THREADS)
    tokens = batch(one)
    a = one.train_step(tokens, passes=2, seed=3)
    b = two.train_step(np.ascontiguousarray(tokens[:, :-1]), tokens[:, 1:], passes=2, seed=3)
    assert a.loss == b.loss and a.pass_losses == b.pass_losses and len(a.pass_losses) == 2
    assert np.isfinite(a.grad_norm) and a.grad_norm > 0
    assert one.step == 1
    # A step moves the parameters; evaluation does not.
    fresh = fbt.Session(bundle, seed=7, threads=THREADS)
    name = one.parameter_names[0]
    assert not np.array_equal(one.parameter(name), fresh.parameter(name))
    before = one.parameter(name)
    e1 = one.eval_step(tokens)
    e2 = one.eval_step(tokens.astype(np.int64))  # any integer dtype
    assert e1.loss == e2.loss and len(e1.pass_losses) == one.eval_passes
    assert np.array_equal(before, one.parameter(name))


def test_bad_arrays(fbt, session):
    tokens = batch(session)
    with pytest.raises(ValueError, match=r"\[8, 65\]"):
        session.train_step(tokens[:, :-2])
    with pytest.raises(ValueError, match="2-D|dimensions"):
        session.eval_step(tokens[0])
    with pytest.raises(TypeError, match="float"):
        session.eval_step(tokens.astype(np.float32))
    bad = tokens.copy()
    bad[3, 5] = 256
    with pytest.raises(fbt.Error, match="token id 256 at row 3, position 5"):
        session.eval_step(bad)
    with pytest.raises(ValueError, match="passes=9.*compiled K"):
        session.train_step(tokens, passes=9)
    with pytest.raises(ValueError, match="lr"):
        session.train_step(tokens, lr=-1.0)


def test_strided_input_is_copied(session):
    wide = np.repeat(batch(session), 2, axis=1)[:, ::2]  # not contiguous
    assert not wide.flags.c_contiguous
    assert session.eval_step(wide).loss == session.eval_step(np.ascontiguousarray(wide)).loss


def test_parameters(fbt, bundle, session):
    params = session.parameters()
    assert list(params) == session.parameter_names
    embed = [n for n in params if "embed" in n][0]
    assert params[embed].shape == (256, 64) and params[embed].dtype == np.float32
    assert sum(p.size for p in params.values()) == bundle.describe()["params"]["total"]
    with pytest.raises(KeyError, match="no_such"):
        session.parameter("no_such")


def test_save_and_load(fbt, bundle, session, tmp_path):
    path = tmp_path / "copy.safetensors"
    session.save(path)
    other = fbt.Session(bundle, seed=99, threads=THREADS)
    other.load(path)
    for name, value in session.parameters().items():
        assert np.array_equal(value, other.parameter(name)), name
    with pytest.raises(fbt.Error, match="absent.safetensors"):
        other.load(tmp_path / "absent.safetensors")
    with pytest.raises(fbt.Error, match="absent.safetensors"):
        fbt.Session(bundle, ckpt=tmp_path / "absent.safetensors")


def test_text(session):
    ids = session.encode("héllo")
    assert ids.dtype == np.int32 and len(ids) == len("héllo".encode())
    assert session.decode(ids) == "héllo"
    assert session.decode(ids[:2]) == "h\ufffd"  # a cut character
    assert session.tokenizer == "bytes" and session.document_separator == 0


def test_generate(fbt, session):
    one = session.generate("def ", max_new_tokens=12)
    assert isinstance(one, str) and len(one.encode()) <= 12
    assert session.generate(["def ", "x = "], max_new_tokens=12)[0] == one
    assert "".join(session.generate("def ", max_new_tokens=12, stream=True)) == one
    standard = session.generate("def ", mode="standard", max_new_tokens=12)
    assert session.generate("def ", mode="fused:1", max_new_tokens=12) == one
    sampled = session.generate("def ", max_new_tokens=12, temperature=1.0, seed=5)
    assert sampled == session.generate("def ", max_new_tokens=12, temperature=1.0, seed=5)
    assert isinstance(standard, str)


def test_generate_stops(fbt, session):
    text = session.generate("def ", max_new_tokens=30)
    stop = text[3:5]
    cut = session.generate("def ", max_new_tokens=30, stop=stop)
    assert cut.endswith(stop) and len(cut) <= text.index(stop, 3) + len(stop)
    stream = session.generate("def ", max_new_tokens=30, stream=True)
    first = next(stream)
    stream.close()  # stops the generation; the session is free again
    assert text.startswith(first)
    assert session.generate("def ", max_new_tokens=30) == text


def test_generate_bad_arguments(fbt, session):
    with pytest.raises(ValueError, match="max_new_tokens"):
        session.generate("a", max_new_tokens=0)
    with pytest.raises(fbt.Error, match="temperature"):
        session.generate("a", temperature=-1.0)
    with pytest.raises(fbt.Error, match="sideways"):
        session.generate("a", mode="sideways")
    with pytest.raises(TypeError, match="prompt 1"):
        session.generate(["a", 3])


def test_callback_errors_reach_the_caller(session):
    def boom(row, piece):
        raise ZeroDivisionError("from the callback")
    with pytest.raises(ZeroDivisionError, match="from the callback"):
        session._generate(["def "], None, 8, 0.0, 0, 1.0, 0, "", boom)
    assert len(session.generate("def ", max_new_tokens=4).encode()) <= 4


def test_threads_share_a_session(session):
    # The session's lock serializes the runtime; the GIL is free meanwhile.
    want = [session.generate(p, max_new_tokens=16) for p in ("def ", "class ")]
    got = [None, None]

    def work(i, prompt):
        got[i] = session.generate(prompt, max_new_tokens=16)
    threads = [threading.Thread(target=work, args=(i, p))
               for i, p in enumerate(("def ", "class "))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == want


def test_states(fbt, work, cli_run):
    states_bundle = fbt.compile(TINY, output=work / "tiny-states.fbtb", with_states=True)
    session = fbt.Session(states_bundle, ckpt=cli_run / "latest.safetensors", threads=THREADS)
    ids = session.encode("def f(x):\n    return x")
    s = session.states(ids, mode="fused:2")
    assert np.array_equal(session.states(ids, passes=2), s)
    np.testing.assert_allclose(session.states(ids)[0], s[0], rtol=1e-5, atol=1e-5)
    assert s.shape == (2, 3, len(ids), 64) and s.dtype == np.float32
    # Causal: a prefix's states are the whole prompt's first states.
    prefix = session.states(ids[:7], passes=2)
    np.testing.assert_allclose(prefix, s[:, :, :7], rtol=1e-5, atol=1e-5)
    # A batch, with lengths: each row as alone, zeros past its length.
    rows = np.stack([ids, ids])
    both = session.states(rows, passes=2, lengths=[len(ids), 7])
    np.testing.assert_allclose(both[:, :, 0], s, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(both[:, :, 1, :7], prefix, rtol=1e-5, atol=1e-5)
    assert not both[:, :, 1, 7:].any()
    # The second pass's input fuses the first pass's states: it differs.
    assert not np.allclose(s[0, 0, 1:], s[1, 0, 1:])
    with pytest.raises(ValueError, match="lengths"):
        session.states(rows, lengths=[3])
    with pytest.raises(ValueError, match="mode"):
        session.states(ids, mode="soft")


def test_states_need_the_bundle_to_keep_them(fbt, session):
    with pytest.raises(fbt.Error, match="with.states|with_states"):
        session.states(session.encode("abc"))


def test_generate_returns_the_carried_states(fbt, session):
    text, states = session.generate("def ", mode="soft", max_new_tokens=12, return_states=True)
    assert text == session.generate("def ", mode="soft", max_new_tokens=12)
    assert states.shape == (len(text.encode()), 64) and states.dtype == np.float32
    # The first token comes from the plain prefill in both regimes: the same
    # state; after it soft feeds the state back and standard does not.
    _, plain = session.generate("def ", mode="standard", max_new_tokens=12, return_states=True)
    np.testing.assert_array_equal(states[0], plain[0])
    assert not np.allclose(states[1:], plain[1:])
    [(t0, s0), (t1, s1)] = session.generate(["def ", "x = "], max_new_tokens=6,
                                            return_states=True)
    assert s0.shape[0] == len(t0.encode()) and s1.shape[0] == len(t1.encode())
    with pytest.raises(TypeError, match="stream"):
        session.generate("def ", stream=True, return_states=True)


def test_two_bundles_in_one_process(fbt, bundle, work):
    # The loader knows a kernel library by its path (/proc/self/fd/N): a
    # second bundle's library must not be taken for the first's.
    import json
    import subprocess
    import sys
    with open(TINY) as f:
        spec = json.load(f)
    spec["feedback"]["fusion"] = "none"
    spec["training"]["single_pass_fraction"] = 1.0
    plain = fbt.compile(spec, output=work / "tiny-plain.fbtb")
    first = fbt.Session(bundle, seed=5, threads=THREADS)  # kept loaded
    second = fbt.Session(plain, seed=5, threads=THREADS)
    tokens = batch(second)
    loss = second.eval_step(tokens).loss
    alone = subprocess.run(
        [sys.executable, "-c", "import sys, numpy as np, fbt; s = fbt.Session(sys.argv[1], "
         "seed=5, threads=%d); t = fbt.default_corpus()['train'][:%d].reshape(%d, %d); "
         "print(repr(s.eval_step(t).loss))" % (THREADS, tokens.size, *tokens.shape), plain.path],
        capture_output=True, text=True, check=True).stdout
    assert loss == float(alone)
    assert first.eval_step(batch(first)).loss > 0
