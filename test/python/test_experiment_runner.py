"""scripts/experiment.py trains in-process through the module: the same run
folder as fbt train with the same flags (data, fractions, schedule)."""
import json
import os
import sys

import numpy as np
import pytest

from conftest import FBT, SPECS, THREADS, metrics, run_cli
from test_cli_parity import untimed

sys.path.insert(0, os.path.join(SPECS, "..", "scripts"))
import experiment  # noqa: E402


def test_runner_trains_as_fbt_train(fbt, bundle, work, monkeypatch):
    data = work / "docs.jsonl"
    with open(data, "w") as f:
        for i in range(400):
            f.write(json.dumps({"text": "document %d: %s" % (i, "abc " * (i % 7 + 3))}) + "\n")
    flags = ["--eval-every", "5", "--data", str(data), "--val-fraction", "0.2",
             "--test-fraction", "0.1", "--lr", "0.002"]
    monkeypatch.setenv("OMP_NUM_THREADS", str(THREADS))
    assert experiment.fbt_module(FBT) is fbt  # this build's module
    experiment.train(FBT, bundle.path, 10, 77, str(work / "runner"), flags)
    run_cli(FBT, "train", bundle.path, "--steps", 10, "--seed", 77, "--out", work / "runner-cli",
            "--quiet", "--threads", THREADS, *flags)
    assert untimed(metrics(work / "runner")) == untimed(metrics(work / "runner-cli"))
    with open(work / "runner" / "run.json") as f, open(work / "runner-cli" / "run.json") as g:
        ours, theirs = json.load(f), json.load(g)
    for key in ("val_fraction", "test_fraction", "seed", "steps"):
        assert ours.get(key) == theirs.get(key), key
    a = fbt.Session(bundle, ckpt=work / "runner" / "latest.safetensors")
    b = fbt.Session(bundle, ckpt=work / "runner-cli" / "latest.safetensors")
    for name in a.parameter_names:
        assert np.array_equal(a.parameter(name), b.parameter(name)), name
    # Its losses on each held-out part of the file, as the run cut it, are
    # fbt eval's (the fractions read back from run.json).
    ckpt = str(work / "runner-cli" / "latest.safetensors")
    data_flags = ["--data", str(data)]
    for split in ("validation", "test"):
        ours = experiment.held_out_losses(FBT, bundle.path, ckpt, split, 8, data_flags,
                                          ["standard", "fused:2"])
        cli = json.loads(run_cli(FBT, "eval", bundle.path, "--ckpt", ckpt, "--json", "--data",
                                 data, "--split", split, "--windows", 8, "--regimes",
                                 "standard,fused:2", "--threads", THREADS))
        assert ours == cli, split
    held = fbt.Session(bundle, ckpt=ckpt).held_out("validation", data=data, run=work / "runner-cli")
    assert held.byte_level and held.documents > 0 and held.tokens[0] == 0
    # Its tasks and contraction too.
    for measure in (["--task", "arithmetic", "--problems", "6"],
                    ["--task", "counting", "--regimes", "standard,soft", "--problems", "4"],
                    ["--contraction"]):
        ours = experiment.eval_json(FBT, bundle.path, ckpt, data_flags, measure)
        cli = json.loads(run_cli(FBT, "eval", bundle.path, "--ckpt", ckpt, "--json", *data_flags,
                                 *measure, "--threads", THREADS))
        assert ours == cli, measure


def test_runner_probes_as_fbt_probe(fbt, work, cli_run, monkeypatch):
    """experiment.probe (Session.probe) gives fbt probe's JSON, the soft
    states and the value target on a depth-task file included; bad options
    are errors naming what was wrong."""
    from conftest import TINY
    import argparse
    states = fbt.compile(TINY, output=work / "tiny-probe-states.fbtb", with_states=True)
    ckpt = str(cli_run / "latest.safetensors")
    tasks = work / "depth.jsonl"
    with open(tasks, "w") as f:  # problem lines "$d+-...=v", as scripts/depth_task.py writes
        for i in range(300):
            ups = "+-+" * (i % 3 + 1)
            f.write(json.dumps({"text": "$%d%s=%d\n" % (i % 7, ups, i % 7 + 1)}) + "\n")
    depth = {"probe": {"data": str(tasks), "val_fraction": 0.3, "test_fraction": 0.3}}
    args = argparse.Namespace(quick=False, probe_windows=10)
    monkeypatch.setenv("OMP_NUM_THREADS", str(THREADS))
    ours = experiment.probe(FBT, states.path, ckpt, True, [], depth, "validation", args)
    cli = json.loads(run_cli(FBT, "probe", states.path, "--ckpt", ckpt, "--json", "--split",
                             "validation", "--windows", 10, "--soft", "--threads", THREADS))
    value = json.loads(run_cli(FBT, "probe", states.path, "--ckpt", ckpt, "--json", "--split",
                               "validation", "--windows", 10, "--soft", "--targets", "value",
                               "--data", tasks, "--val-fraction", "0.3", "--test-fraction", "0.3",
                               "--threads", THREADS))
    cli["targets"]["value"] = value["targets"]["value"]
    assert ours == cli
    assert set(ours["targets"]["depth"]["test_r2"]) == {"standard", "soft"} | {
        "fused:%d" % k for k in range(2, 9)}
    session = fbt.Session(states, ckpt=ckpt, threads=THREADS)
    for kwargs, says in ((dict(split="train"), "held-out"), (dict(windows=4), "windows >= 5"),
                         (dict(passes=0), "passes must be >= 1"),
                         (dict(targets="depth,width"), "width")):
        with pytest.raises(fbt.Error, match=says):
            session.probe(**kwargs)


def test_runner_compiles_as_fbtc(fbt, work):
    """experiment.compile_spec and describe_spec (through the module) give
    fbtc's bundle, byte for byte, and its --describe --json."""
    from conftest import TINY
    fbtc = os.path.join(os.path.dirname(os.path.dirname(FBT)), "fbtc", "fbtc")
    for states in (False, True):
        ours, theirs = work / ("runner-%d.fbtb" % states), work / ("fbtc-%d.fbtb" % states)
        experiment.compile_spec(fbtc, TINY, str(ours), with_states=states)
        run_cli(fbtc, TINY, "--target=cpu", *(["--with-states"] if states else []), "-o", theirs)
        assert ours.read_bytes() == theirs.read_bytes(), states
    assert experiment.describe_spec(fbtc, TINY) == json.loads(
        run_cli(fbtc, TINY, "--describe", "--json"))
