"""Data parallelism on this CPU: 2 ranks x 1 thread against 1 rank x 2 threads.

usage: /usr/bin/python3 bench/cpu_data_parallel.py [--spec specs/tiny.json]
                                                   [--steps N] [--ranks 2]

Both train the same global batch (N compiled batches per step: the single
rank accumulates N micro-batches, each of N ranks runs one) for the same
steps from the same seed, in the same run, alternating twice, so they
compute the same model (the script checks the final losses agree). Prints,
per configuration, the median tokens/s over the steps after the first few
(warm-up), the ratio, and for the ranks the share of each step a rank spent
in its collectives without overlapping them (metrics' collective_s: the
starts and the waits for the gradient buckets), median and p90.

The default is the tiny spec: on small (batch 32 x 256, K up to 8) the
single rank's --accumulate keeps the gradient-only step's arena beside the
training step's for every K, which outgrows a 24 GiB machine.

The peer is fbt itself on one process: the question is what splitting the
cores into ranks costs or gains against splitting each step's work into
threads, and how much of the gradient all-reduce the step's backward hides.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("FBT_BUILD_DIR", os.path.join(ROOT, "build"))
FBT = os.path.join(BUILD, "tools", "fbt", "fbt")
FBTC = os.path.join(BUILD, "tools", "fbtc", "fbtc")
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none"]


def train(bundle, out, steps, ranks, threads, accumulate):
    cmd = [FBT, "train", bundle, "--steps", str(steps), "--eval-every", str(steps),
           "--eval-batches", "1", "--out", out, "--quiet"]
    if ranks > 1:
        cmd = MPIRUN + ["-x", f"OMP_NUM_THREADS={threads}", "-np", str(ranks)] + cmd
    else:
        cmd += ["--accumulate", str(accumulate)]
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    subprocess.run(cmd, check=True, env=env, stdout=subprocess.DEVNULL)
    return [json.loads(l) for l in open(os.path.join(out, "metrics.jsonl")) if '"loss"' in l]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--spec", default=os.path.join(ROOT, "specs", "tiny.json"))
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--ranks", type=int, default=2)
    args = p.parse_args()
    cores = os.cpu_count() or 1
    warm = min(5, args.steps // 3)
    with tempfile.TemporaryDirectory() as work:
        bundle = os.path.join(work, "model.fbtb")
        subprocess.run([FBTC, args.spec, "--target=cpu", "-o", bundle], check=True)
        configs = {
            f"1 rank x {cores} threads, --accumulate {args.ranks}": (1, cores, args.ranks),
            f"{args.ranks} ranks x {max(1, cores // args.ranks)} thread(s)":
                (args.ranks, max(1, cores // args.ranks), 1),
        }
        rates = {name: [] for name in configs}
        shares, finals = [], {}
        training = json.load(open(args.spec))["training"]
        tokens_per_step = training["batch_size"] * training["sequence_length"] * args.ranks
        for rep in range(2):
            for name, (ranks, threads, acc) in configs.items():
                rows = train(bundle, os.path.join(work, f"{rep}-{ranks}"), args.steps, ranks,
                             threads, acc)
                rates[name] += [r["tokens_per_s"] for r in rows[warm:]]
                finals[name] = rows[-1]["loss"]
                # A step's seconds are its tokens over its rate.
                shares += [r["collective_s"] * r["tokens_per_s"] / tokens_per_step
                           for r in rows[warm:] if ranks > 1]
    base, dp = list(rates)
    med = {n: statistics.median(v) for n, v in rates.items()}
    print(f"{os.path.basename(args.spec)}, {args.steps} steps x 2, {cores} cores")
    for n in rates:
        print(f"  {n:40s} {med[n]:10.0f} tokens/s   final loss {finals[n]:.6f}")
    print(f"  ratio (ranks / threads)                  {med[dp] / med[base]:10.2f}x")
    shares.sort()
    print(f"  collectives not overlapped, share of a rank's step: median "
          f"{100 * statistics.median(shares):.1f}%, p90 "
          f"{100 * shares[int(0.9 * (len(shares) - 1))]:.1f}%")
    if abs(finals[base] - finals[dp]) > 1e-3 * abs(finals[base]):
        sys.exit("the two configurations trained different models")



if __name__ == "__main__":
    main()
