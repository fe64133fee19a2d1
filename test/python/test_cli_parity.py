"""The module and the CLIs are one runtime: the same run, losses and text."""
import json

import numpy as np
import pytest

from conftest import FBT, RUN, THREADS, metrics, run_cli

TIMING = ("tokens_per_s", "elapsed_s")


def untimed(records):
    return [{k: v for k, v in r.items() if k not in TIMING} for r in records]


def test_train_is_fbt_train(fbt, bundle, cli_run, work):
    seen = []
    session, summary = fbt.train(bundle, progress=seen.append, threads=THREADS,
                                 out=work / "py-run", **RUN)
    assert summary["finished"] and summary["end_step"] == RUN["steps"]
    assert untimed(metrics(work / "py-run")) == untimed(metrics(cli_run))
    # The callback sees metrics.jsonl's records as they are written (the
    # step-0 validation comes before the loop's callbacks).
    assert untimed(seen) == untimed(metrics(cli_run))[-len(seen):]
    cli = fbt.Session(bundle, ckpt=cli_run / "latest.safetensors", threads=THREADS)
    for name, value in session.parameters().items():
        assert np.array_equal(value, cli.parameter(name)), name


def test_interrupted_run_resumes(fbt, bundle, cli_run, work):
    out = work / "stopped-run"

    def stop_at_eight(record):
        if record.get("step") == 8 and "loss" in record:
            raise KeyboardInterrupt
    session = fbt.Session(bundle, threads=THREADS)
    with pytest.raises(KeyboardInterrupt):
        fbt.Trainer(session, out=out, **RUN).run(stop_at_eight)
    resumed = fbt.Session(bundle, threads=THREADS)
    trainer = fbt.Trainer(resumed, resume=out)
    assert trainer.start_step == 6  # the last checkpoint before the stop
    assert trainer.run()["finished"]
    cli = fbt.Session(bundle, ckpt=cli_run / "latest.safetensors", threads=THREADS)
    for name, value in resumed.parameters().items():
        assert np.array_equal(value, cli.parameter(name)), name


def test_trainer_options(fbt, bundle):
    session = fbt.Session(bundle, threads=THREADS)
    with pytest.raises(TypeError, match="no_such.*options: data"):
        fbt.Trainer(session, no_such=1)
    with pytest.raises(TypeError, match="steps"):
        fbt.Trainer(session, steps="many")
    with pytest.raises(TypeError, match="Session"):
        fbt.Trainer("tiny.fbtb")


def test_evaluate_is_fbt_eval(fbt, bundle, cli_run, session):
    regimes = ["standard", "soft", "fused:2"]
    cli = json.loads(run_cli(FBT, "eval", bundle.path, "--ckpt", cli_run / "latest.safetensors",
                             "--json", "--windows", 16, "--regimes", ",".join(regimes),
                             "--threads", THREADS))
    got = session.evaluate(fbt.default_corpus()["test"], regimes=regimes, windows=16)
    assert cli.pop("split") == "test"
    assert got == cli


@pytest.mark.parametrize("mode", ["standard", "soft", "fused:2"])
def test_generate_is_fbt_generate(bundle, cli_run, session, mode):
    cli = run_cli(FBT, "generate", bundle.path, "--ckpt", cli_run / "latest.safetensors",
                  "--prompt", "def ", "--mode", mode, "--max-new-tokens", 24,
                  "--threads", THREADS)
    assert cli == "def " + session.generate("def ", mode=mode, max_new_tokens=24) + "\n"
