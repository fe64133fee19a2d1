"""Training-step throughput on the CPU: our compiled step against PyTorch.

usage: /usr/bin/python3 bench/cpu_train.py [--specs specs/tiny.json specs/small.json]
                                            [--passes 1 2] [--steps N]

For each spec and K, in the same run: compiles the spec (fbtc --target=cpu),
times `fbt bench --train K` (the compiled train_k<K>: forward, backward,
clipping and AdamW), and times the same model and step in PyTorch eager
(bench/torch_fbt.py) with the same thread count, each in its own process so
peak memory is its own. Prints tokens/s of each, the ratio, peak RSS, and
how our step splits between BLAS GEMMs and generated kernels.

The ceiling: `fbt bench` also times the step's own GEMMs alone (same shapes,
same BLAS and threads), and each step's model FLOP rate (fbtc --describe's
FLOPs per token x tokens/s) is printed as a fraction of that GEMM rate, for
us and for PyTorch.
"""

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("FBT_BUILD_DIR", os.path.join(ROOT, "build"))
THREADS = os.cpu_count() or 1


def flops_per_token(spec, k):
    out = subprocess.run([os.path.join(BUILD, "tools", "fbtc", "fbtc"), spec, "--describe",
                          "--json"], check=True, capture_output=True, text=True).stdout
    passes = json.loads(out)["training"]["passes"]
    return next(p["flops_per_token"] for p in passes if p["k"] == k)


def ours(spec, k, steps, workdir):
    bundle = os.path.join(workdir, os.path.basename(spec) + ".fbtb")
    if not os.path.exists(bundle):
        subprocess.run([os.path.join(BUILD, "tools", "fbtc", "fbtc"), spec, "--target=cpu",
                        "-o", bundle], check=True)
    out = subprocess.run([os.path.join(BUILD, "tools", "fbt", "fbt"), "bench", bundle,
                          "--train", str(k), "--steps", str(steps)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


PEER = r"""
import json, resource, sys, time, torch
sys.path.insert(0, sys.argv[1])
import torch_fbt as M
torch.set_num_threads(int(sys.argv[5]))
c = M.load_spec(sys.argv[2]); k = int(sys.argv[3]); steps = int(sys.argv[4])
torch.manual_seed(0)
model = M.FBT(c); opt = M.make_optimizer(model, c)
B, T, V = c["training"]["batch_size"], c["training"]["sequence_length"], c["vocab_size"]
ids = torch.randint(1, V, (B, T)); tgt = torch.randint(1, V, (B, T))
mask = torch.ones(B, T, dtype=torch.bool); mask[:, 0] = False
for _ in range(3):
    M.train_step(model, opt, ids, tgt, k, mask, c["training"]["grad_clip"])
t0 = time.perf_counter()
for _ in range(steps):
    M.train_step(model, opt, ids, tgt, k, mask, c["training"]["grad_clip"])
s = time.perf_counter() - t0
print(json.dumps({"tokens_per_s": B * T * steps / s, "step_ms": 1e3 * s / steps,
                  "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def peer(spec, k, steps):
    out = subprocess.run(["/usr/bin/python3", "-c", PEER, os.path.join(ROOT, "bench"), spec,
                          str(k), str(steps), str(THREADS)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--specs", nargs="+", default=[os.path.join(ROOT, "specs", "tiny.json")])
    ap.add_argument("--passes", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--steps", type=int, default=20)
    args = ap.parse_args()
    workdir = tempfile.mkdtemp()
    print("CPU training step, %d threads; tokens/s (higher is better)" % THREADS)
    print("%-12s %2s %10s %11s %7s %9s %9s %7s %8s %9s %8s %8s" % (
        "spec", "K", "fbt tok/s", "torch tok/s", "ratio", "fbt MiB", "torch MiB", "gemm %",
        "kernel %", "GEMM GF/s", "fbt/GEMM", "torch/GEMM"))
    for spec in args.specs:
        for k in args.passes:
            a = ours(spec, k, args.steps, workdir)
            b = peer(spec, k, args.steps)
            flops = flops_per_token(spec, k)
            ceiling = a["gemm_alone_gflops"] * 1e9
            print("%-12s %2d %10.0f %11.0f %6.2fx %9.1f %9.1f %6.0f%% %7.0f%% %9.1f %7.0f%% %9.0f%%" % (
                os.path.basename(spec), k, a["tokens_per_s"], b["tokens_per_s"],
                a["tokens_per_s"] / b["tokens_per_s"], a["peak_rss_mib"], b["peak_rss_mib"],
                100 * a["gemm_share"], 100 * a["kernel_share"], ceiling / 1e9,
                100 * flops * a["tokens_per_s"] / ceiling, 100 * flops * b["tokens_per_s"] / ceiling))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
