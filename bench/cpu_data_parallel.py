"""Data parallelism on this CPU: 2 ranks x 1 thread (with and without ZeRO-1) against 1 rank x 2 threads.

usage: /usr/bin/python3 bench/cpu_data_parallel.py [--spec specs/tiny.json]
                                                   [--steps N] [--ranks 2]

Both train the same global batch (N compiled batches per step: the single
rank accumulates N micro-batches, each of N ranks runs one) for the same
steps from the same seed, in the same run, alternating twice, so they
compute the same model (the script checks the final losses agree). The
ranks run twice: all-reducing the gradients, and under ZeRO-1 (the spec
with training.zero = 1: reduce-scatter, AdamW on each parameter's owner,
all-gather). Prints, per configuration, the median tokens/s over the steps
after the first few (warm-up), the ratios, and for the ranks the share of
each step a rank spent in its collectives without overlapping them
(metrics' collective_s: the starts and the waits for the buckets), median
and p90.

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
        spec = json.load(open(args.spec))
        bundle = os.path.join(work, "model.fbtb")
        subprocess.run([FBTC, args.spec, "--target=cpu", "-o", bundle], check=True)
        spec["training"]["zero"] = 1
        zero_spec, zero = os.path.join(work, "zero.json"), os.path.join(work, "zero.fbtb")
        json.dump(spec, open(zero_spec, "w"))
        subprocess.run([FBTC, zero_spec, "--target=cpu", "-o", zero], check=True)
        per_rank = max(1, cores // args.ranks)
        configs = {
            f"1 rank x {cores} threads, --accumulate {args.ranks}":
                (bundle, 1, cores, args.ranks),
            f"{args.ranks} ranks x {per_rank} thread(s)": (bundle, args.ranks, per_rank, 1),
            f"{args.ranks} ranks x {per_rank} thread(s), ZeRO-1": (zero, args.ranks, per_rank, 1),
        }
        rates = {name: [] for name in configs}
        shares = {name: [] for name in configs}
        finals = {}
        training = spec["training"]
        tokens_per_step = training["batch_size"] * training["sequence_length"] * args.ranks
        for rep in range(2):
            for i, (name, (model, ranks, threads, acc)) in enumerate(configs.items()):
                rows = train(model, os.path.join(work, f"{rep}-{i}"), args.steps, ranks,
                             threads, acc)
                rates[name] += [r["tokens_per_s"] for r in rows[warm:]]
                finals[name] = rows[-1]["loss"]
                # A step's seconds are its tokens over its rate.
                shares[name] += [r["collective_s"] * r["tokens_per_s"] / tokens_per_step
                                 for r in rows[warm:] if ranks > 1]
    base = list(rates)[0]
    med = {n: statistics.median(v) for n, v in rates.items()}
    print(f"{os.path.basename(args.spec)}, {args.steps} steps x 2, {cores} cores")
    for n in rates:
        print(f"  {n:44s} {med[n]:10.0f} tokens/s  {med[n] / med[base]:5.2f}x"
              f"   final loss {finals[n]:.6f}")
    for n, s in shares.items():
        if not s:
            continue
        s.sort()
        print(f"  {n}: collectives not overlapped, share of a rank's step: median "
              f"{100 * statistics.median(s):.1f}%, p90 {100 * s[int(0.9 * (len(s) - 1))]:.1f}%")
    for n in rates:
        if abs(finals[base] - finals[n]) > 1e-3 * abs(finals[base]):
            sys.exit(f"'{n}' trained another model than '{base}'")



if __name__ == "__main__":
    main()
