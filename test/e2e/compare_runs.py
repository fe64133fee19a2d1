"""compare_runs.py RUN_A RUN_B [--tol T]: two training runs computed the same.

Compares, step by step, the losses, per-pass losses and gradient norms of
the two runs' metrics.jsonl, their validation losses, as relative differences
|a - b| / max(|a|, |b|) of each value, and every tensor of their final
checkpoints (step-<N>.safetensors, parameters and moments) as
||a - b|| / max(||a||, ||b||); fails when the largest exceeds T (default
1e-5). Prints the largest of each kind.
"""
import argparse
import glob
import json
import os
import struct
import sys

import numpy as np


def metrics(run):
    steps, evals = {}, {}
    for line in open(os.path.join(run, "metrics.jsonl")):
        r = json.loads(line)
        if "loss" in r:
            steps[r["step"]] = [r["loss"], r["grad_norm"], *r["pass_losses"]]
        if "val_loss" in r:
            evals[r["step"]] = [r["val_loss"], *r["val_pass_losses"]]
    return steps, evals


def tensors(run):
    (path,) = glob.glob(os.path.join(run, "step-*.safetensors"))
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        begin, end = t["data_offsets"]
        out[name] = np.frombuffer(data[8 + n + begin:8 + n + end], dtype=np.float32)
    return os.path.basename(path), out


def rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.max(np.abs(a - b) / np.maximum(np.maximum(np.abs(a), np.abs(b)), 1e-6)))


def norm_rel(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(a), np.linalg.norm(b), 1e-12))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--tol", type=float, default=1e-5)
    args = p.parse_args()
    worst = {}
    for kind, (x, y) in zip(("steps", "evals"), zip(metrics(args.a), metrics(args.b))):
        if sorted(x) != sorted(y):
            sys.exit(f"the runs logged different {kind}: {sorted(x)} and {sorted(y)}")
        worst[kind] = max((rel(x[s], y[s]) for s in x), default=0.0)
    (name_a, ta), (name_b, tb) = tensors(args.a), tensors(args.b)
    if name_a != name_b or sorted(ta) != sorted(tb):
        sys.exit(f"the final checkpoints differ in name or tensors: {name_a}, {name_b}")
    worst["weights"] = max(norm_rel(ta[k], tb[k]) for k in ta)
    print(f"{len(metrics(args.a)[0])} steps; largest relative difference: " +
          ", ".join(f"{k} {v:.2e}" for k, v in worst.items()))
    bad = {k: v for k, v in worst.items() if v > args.tol}
    if bad:
        sys.exit(f"the runs differ beyond {args.tol:g}: {bad}")
    print("same within", args.tol)


if __name__ == "__main__":
    main()
