"""fbt.compile, fbt.describe and fbt.Bundle against fbtc."""
import json
import os

import pytest

from conftest import FBTC, TINY, run_cli


def test_emit_stage_is_fbtcs(fbt):
    # The same driver behind both: the dialect's text is fbtc's, byte for byte.
    assert fbt.compile(TINY, emit="fbt") == run_cli(FBTC, TINY, "--emit=fbt", "--target=cpu")


def test_describe_is_fbtcs(fbt):
    assert fbt.describe(TINY, ranks=[2]) == json.loads(
        run_cli(FBTC, TINY, "--describe", "--json", "--ranks=2"))


def test_spec_as_dict_text_or_path(fbt, bundle):
    with open(TINY) as f:
        spec = json.load(f)
    assert fbt.describe(spec) == fbt.describe(json.dumps(spec)) == fbt.describe(TINY)
    assert bundle.describe() == fbt.describe(TINY)


def test_bundle(fbt, bundle):
    assert bundle.name == "tiny"
    assert bundle.target["kind"] == "cpu"
    assert {"train_k1", "eval_k8", "prefill", "decode_step"} <= set(bundle.steps)
    assert bundle.config["hidden_size"] == 64
    again = fbt.Bundle(os.fspath(bundle))
    assert again.manifest == bundle.manifest


def test_bundle_not_found(fbt, tmp_path):
    with pytest.raises(fbt.Error, match="nope.fbtb"):
        fbt.Bundle(tmp_path / "nope.fbtb")


def test_bad_spec_is_a_compile_error(fbt):
    with open(TINY) as f:
        spec = json.load(f)
    spec["num_attention_heads"] = 5  # 64 is not a multiple of 5
    with pytest.raises(fbt.CompileError, match="num_attention_heads|hidden_size"):
        fbt.compile(spec)
    with pytest.raises(fbt.CompileError):
        fbt.compile('{"name": "broken"')
    assert issubclass(fbt.CompileError, fbt.Error)


def test_bad_options(fbt, tmp_path):
    with pytest.raises(TypeError, match="no_such_flag"):
        fbt.compile(TINY, no_such_flag=True)
    with pytest.raises(FileNotFoundError, match="missing.json"):
        fbt.compile(tmp_path / "missing.json")
    with pytest.raises(TypeError):
        fbt.compile(42)
    # Named values are the driver's, listed in the error.
    with pytest.raises(ValueError, match="target: expected cpu, sm_90, sm_80 or simt, got 'tpu'"):
        fbt.compile(TINY, target="tpu")
    with pytest.raises(ValueError, match="tune_space: expected none, default or wide"):
        fbt.compile(TINY, tune_space="all")
