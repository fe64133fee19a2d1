"""A tiny experiment through the Python module against the same through processes.

usage: PYTHONPATH=build/python /usr/bin/python3 bench/python_module.py [--steps N]
                                                                     [--repeats R]

The experiment: compile tiny for the CPU, train it N steps (default 300) into a run
folder, measure validation losses in three regimes (128 windows), and generate
greedily after three prompts in soft mode. Through processes it is what
scripts/experiment.py did: fbtc, fbt train, fbt eval --json and fbt generate, each a
process, JSON read back. Through the module it is one process: fbt.compile,
fbt.train, Session.evaluate and Session.generate. The two run alternately R times
(default 3) in this run, the same threads each; the medians and their ratio are
printed, and the two's losses and text are checked to be the same.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("FBT_BUILD_DIR", os.path.join(ROOT, "build"))
FBT = os.path.join(BUILD, "tools", "fbt", "fbt")
FBTC = os.path.join(BUILD, "tools", "fbtc", "fbtc")
SPEC = os.path.join(ROOT, "specs", "tiny.json")
THREADS = os.cpu_count() or 1
REGIMES = ["standard", "soft", "fused:2"]
PROMPTS = ["Tom had 3 red apples.", "12+7=", "One day a"]


def run(*args):
    return subprocess.run([*map(str, args)], check=True, capture_output=True, text=True).stdout


def through_processes(work, steps):
    bundle = os.path.join(work, "tiny.fbtb")
    run(FBTC, SPEC, "--target=cpu", "-o", bundle)
    out = os.path.join(work, "run")
    run(FBT, "train", bundle, "--steps", steps, "--out", out, "--quiet", "--threads", THREADS)
    ckpt = os.path.join(out, "latest.safetensors")
    losses = json.loads(run(FBT, "eval", bundle, "--ckpt", ckpt, "--json", "--split",
                            "validation", "--windows", 128, "--regimes", ",".join(REGIMES),
                            "--threads", THREADS))
    texts = [run(FBT, "generate", bundle, "--ckpt", ckpt, "--prompt", p, "--mode", "soft",
                 "--max-new-tokens", 32, "--threads", THREADS)[len(p):-1] for p in PROMPTS]
    return {r: losses["regimes"][r]["loss"] for r in REGIMES}, texts


def through_the_module(work, steps):
    import fbt
    bundle = fbt.compile(SPEC, target="cpu", output=os.path.join(work, "tiny.fbtb"))
    session, _ = fbt.train(bundle, steps=steps, out=os.path.join(work, "run"), threads=THREADS)
    losses = session.evaluate(fbt.default_corpus()["validation"], regimes=REGIMES, windows=128)
    texts = session.generate(PROMPTS, mode="soft", max_new_tokens=32)
    return {r: losses["regimes"][r]["loss"] for r in REGIMES}, texts


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--repeats", type=int, default=3)
    args = p.parse_args()
    import fbt  # noqa: F401  (imported once, before the clock starts)
    seconds = {"processes": [], "module": []}
    results = {}
    for i in range(args.repeats):
        for name, f in (("processes", through_processes), ("module", through_the_module)):
            with tempfile.TemporaryDirectory(prefix="fbt-bench-") as work:
                t0 = time.perf_counter()
                results[name] = f(work, args.steps)
                seconds[name].append(time.perf_counter() - t0)
            print("repeat %d, %-9s %.2f s" % (i + 1, name, seconds[name][-1]), flush=True)
    if results["processes"] != results["module"]:
        sys.exit("python_module.py: the two differ:\n%s\n%s" % (results["processes"],
                                                                 results["module"]))
    med = {k: statistics.median(v) for k, v in seconds.items()}
    print("tiny, %d steps, %d threads: processes %.2f s, module %.2f s (medians of %d); "
          "module / processes %.3f; the same losses and text" %
          (args.steps, THREADS, med["processes"], med["module"], args.repeats,
           med["module"] / med["processes"]))


if __name__ == "__main__":
    main()
