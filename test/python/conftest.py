"""Fixtures of the fbt module's tests: a build's CLIs beside the module, one
tiny bundle and one short run of `fbt train` that the tests compare with."""
import json
import os
import subprocess

import pytest

BUILD = os.environ["FBT_BUILD"]
SPECS = os.environ["FBT_SPECS"]
FBT = os.path.join(BUILD, "tools", "fbt", "fbt")
FBTC = os.path.join(BUILD, "tools", "fbtc", "fbtc")
TINY = os.path.join(SPECS, "tiny.json")
THREADS = 2  # the CLI and the module run with the same threads: the same sums

# A short run, with a validation and two checkpoints.
RUN = dict(steps=12, eval_every=6, eval_batches=2, save_every=6)


def run_cli(tool, *args):
    """stdout of a CLI run that must succeed."""
    done = subprocess.run([tool, *map(str, args)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout


def cli_flags(options):
    """fbt train's flags for Trainer options."""
    flags = []
    for k, v in options.items():
        flags += ["--" + k.replace("_", "-"), str(v)]
    return flags


def metrics(run_dir):
    with open(os.path.join(run_dir, "metrics.jsonl")) as f:
        return [json.loads(line) for line in f]


@pytest.fixture(scope="session")
def fbt():
    import fbt as module
    return module


@pytest.fixture(scope="session")
def work(tmp_path_factory):
    return tmp_path_factory.mktemp("fbt")


@pytest.fixture(scope="session")
def bundle(fbt, work):
    return fbt.compile(TINY, output=work / "tiny.fbtb")


@pytest.fixture(scope="session")
def cli_run(bundle, work):
    """The run folder of `fbt train` on the tiny bundle."""
    out = work / "cli-run"
    run_cli(FBT, "train", bundle.path, "--threads", THREADS, "--out", out, "--quiet",
            *cli_flags(RUN))
    return out


@pytest.fixture()
def session(fbt, bundle, cli_run):
    """A session on the CLI run's checkpoint."""
    return fbt.Session(bundle, ckpt=cli_run / "latest.safetensors", threads=THREADS)
