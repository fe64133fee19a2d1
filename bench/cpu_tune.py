"""Tuned against default kernels on this CPU, in one run.

usage: /usr/bin/python3 bench/cpu_tune.py [--specs specs/tiny.json specs/small.json]
                                           [--passes 1 2] [--steps N] [--rounds R]
                                           [--budget SECONDS]

For each spec: compiles it twice (fbtc --target=cpu, and with
--tune-space=default: the compile time and bundle size of each), tunes the
variant bundle on the training steps benchmarked (`fbt tune --steps
train_k<K>,... --json`, into a cache of its own), then times
`fbt bench --train K` with the cache (--tune-cache) and without it
(--no-tune), alternating for R rounds, and the batch-1 decode the same way.
Prints tokens/s (ms per token for decode) of each, the best of the rounds,
and the tuned/default ratio, with how many kernels the tuner changed.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("FBT_BUILD_DIR", os.path.join(ROOT, "build"))
FBTC = os.path.join(BUILD, "tools", "fbtc", "fbtc")
FBT = os.path.join(BUILD, "tools", "fbt", "fbt")


def compile_spec(spec, out, *extra):
    start = time.time()
    subprocess.run([FBTC, spec, "--target=cpu", "-o", out, *extra], check=True)
    return time.time() - start, os.path.getsize(out)


def bench(bundle, args, tune):
    out = subprocess.run([FBT, "bench", bundle, *args, *tune], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--specs", nargs="+",
                    default=[os.path.join(ROOT, "specs", s) for s in ("tiny.json", "small.json")])
    ap.add_argument("--passes", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--budget", type=float, default=30)
    args = ap.parse_args()

    rows = []
    with tempfile.TemporaryDirectory() as work:
        for spec in args.specs:
            name = os.path.splitext(os.path.basename(spec))[0]
            plain, tuned = os.path.join(work, name + ".fbtb"), os.path.join(work, name + "-t.fbtb")
            cache = os.path.join(work, name + "-cache.json")
            plain_s, plain_b = compile_spec(spec, plain)
            tuned_s, tuned_b = compile_spec(spec, tuned, "--tune-space=default")
            print("%s: compile %.1f s, %.1f MiB; with --tune-space=default %.1f s, %.1f MiB" % (
                name, plain_s, plain_b / 2**20, tuned_s, tuned_b / 2**20))
            steps = ",".join(["train_k%d" % k for k in args.passes] +
                             ["prefill", "decode_step_plain"])
            start = time.time()
            out = subprocess.run([FBT, "tune", tuned, "--cache", cache, "--steps", steps,
                                  "--budget", str(args.budget), "--repeats", "3", "--json"],
                                 check=True, capture_output=True, text=True).stdout
            report = json.loads(out)
            changed = [k for k in report["kernels"]
                       if k["measured"] and k["chosen"] != k["name"]]
            rejected = sum("rejected" in v for k in report["kernels"] for v in k["variants"])
            gemms = [g for g in report["gemms"] if g["chosen"] != 0]
            put_back = sum("reverted" in k for k in report["kernels"]) + \
                sum("reverted" in g for g in report["gemms"])
            print("  fbt tune: %.0f s, %d kernels with variants, %d changed (%s), %d rejected; "
                  "%d GEMM shapes, %d changed (%s); %d choices put back%s" % (
                      time.time() - start, len(report["kernels"]), len(changed),
                      ", ".join("%s %.2fx" % (k["chosen"], k["speedup"]) for k in changed) or "-",
                      rejected, len(report["gemms"]), len(gemms),
                      ", ".join("%s split %d %.2fx" % (g["shape"], g["chosen"], g["speedup"])
                                for g in gemms) or "-",
                      put_back, ", out of budget" if report["out_of_budget"] else ""))
            work_items = [("train K=%d" % k, ["--train", str(k), "--steps", str(args.steps),
                                              "--warmup", "1"], "tokens_per_s")
                          for k in args.passes]
            work_items.append(("decode b=1", ["--decode", "standard", "--steps", "32",
                                              "--warmup", "1"], "ms_per_token"))
            for label, bench_args, key in work_items:
                best = {"default": None, "tuned": None}
                for _ in range(args.rounds):
                    for which, flag in (("default", ["--no-tune"]),
                                        ("tuned", ["--tune-cache", cache])):
                        r = bench(tuned, bench_args, flag)
                        assert r["tuned"] == (which == "tuned"), r
                        v = r[key]
                        better = max if key == "tokens_per_s" else min
                        best[which] = v if best[which] is None else better(best[which], v)
                ratio = (best["tuned"] / best["default"] if key == "tokens_per_s"
                         else best["default"] / best["tuned"])
                rows.append(dict(spec=name, work=label, unit=key, **best, speedup=ratio))
                print("  %-11s default %10.4g  tuned %10.4g  %s  speedup %.3fx" % (
                    label, best["default"], best["tuned"], key, ratio))
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
