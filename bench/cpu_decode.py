"""Decode latency on the CPU: standard against soft decoding, and PyTorch.

usage: /usr/bin/python3 bench/cpu_decode.py [--spec specs/small.json] [--tokens N]
                                            [--repeats R] [--rounds N]

In one run: compiles the spec, then runs `fbt bench --decode standard
--versus soft` R times: each run times standard and soft decoding in
alternating rounds in one process (--rounds), so soft/standard is the
median of round-by-round ratios that the host's drift between separate
runs does not blur. It also times the same greedy decoding in PyTorch
eager with a KV cache (bench/torch_fbt.py), standard and soft. Prints
prefill tokens/s, ms per generated token, and the soft/standard ratio (the
method's claim: soft decoding costs two D x D GEMVs and a gate more).

Batch-1 decoding streams every weight once per token, so the floor is one
pass over the model's weight bytes: a GEMV of that many fp32 weights
(PyTorch, same threads), timed in this process right before and after each
`fbt bench` run, so that both see the machine as it is then (on a shared
host the memory bandwidth drifts by tens of percent within minutes). fbt's
ms/token is given as the median over the runs of its ratio to the floor
beside it. fbt's own profile of a token (from `fbt bench`: calls per token,
the share in GEMMs and the costliest kernels) says where the rest goes.
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("FBT_BUILD_DIR", os.path.join(ROOT, "build"))
THREADS = os.cpu_count() or 1

PEER = r"""
import json, sys, time, torch
sys.path.insert(0, sys.argv[1])
import torch_fbt as M
torch.set_num_threads(int(sys.argv[4]))
c = M.load_spec(sys.argv[2]); n = int(sys.argv[3])
torch.manual_seed(0)
model = M.FBT(c).eval()
P = c["inference"]["max_prompt_length"]
prompt = torch.randint(1, c["vocab_size"], (c["inference"]["batch_size"], P))
out = {}
for soft in (False, True):
    M.decode(model, prompt, 4, soft)
    t0 = time.perf_counter(); M.decode(model, prompt, 1, soft); t1 = time.perf_counter()
    M.decode(model, prompt, n + 1, soft); t2 = time.perf_counter()
    out["soft" if soft else "standard"] = 1e3 * ((t2 - t1) - (t1 - t0)) / n
print(json.dumps(out))
"""


class Floor:
    """One GEMV over as many fp32 weights as the model has (rows of the
    hidden size), on the benchmark's threads: the batch-1 decode floor."""

    def __init__(self, weights, hidden):
        import torch
        self.torch = torch
        torch.set_num_threads(THREADS)
        self.w = torch.randn(weights // hidden, hidden)
        self.x = torch.randn(hidden)
        self.sample(5)

    def sample(self, n=20):
        """The median of n timed GEMVs, in ms."""
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            self.torch.mv(self.w, self.x)
            times.append(time.perf_counter() - t0)
        return 1e3 * statistics.median(times)


def median_interval(samples, level=0.95):
    """A distribution-free confidence interval for the median of `samples`:
    the order statistics x(j), x(n-1-j) with the largest j for which
    P(j < Binomial(n, 1/2) <= n-1-j) is at least `level` (None: too few)."""
    from math import comb
    x, n = sorted(samples), len(samples)
    best = None
    for j in range((n + 1) // 2):
        inside = sum(comb(n, i) for i in range(j + 1, n - j)) / 2 ** n
        if inside < level:
            break
        best = (x[j], x[n - 1 - j])
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", default=os.path.join(ROOT, "specs", "small.json"))
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=10,
                    help="alternating standard/soft rounds per fbt bench run")
    args = ap.parse_args()
    bundle = os.path.join(tempfile.mkdtemp(), "model.fbtb")
    fbtc = os.path.join(BUILD, "tools", "fbtc", "fbtc")
    subprocess.run([fbtc, args.spec, "--target=cpu", "-o", bundle], check=True)
    described = json.loads(subprocess.run([fbtc, args.spec, "--describe", "--json"], check=True,
                                          capture_output=True, text=True).stdout)
    weights = described["params"]["total"]
    floor = Floor(weights, described["config"]["hidden_size"])
    runs, floors, ratios = [], [], []
    for _ in range(args.repeats):
        before = floor.sample()
        out = subprocess.run([os.path.join(BUILD, "tools", "fbt", "fbt"), "bench", bundle,
                              "--decode", "standard", "--versus", "soft",
                              "--rounds", str(args.rounds), "--steps", str(args.tokens)],
                             check=True, capture_output=True, text=True).stdout
        beside = (before + floor.sample()) / 2
        runs.append(json.loads(out))
        floors.append(beside)
        ratios.append(runs[-1]["versus"]["base_ms_per_token"] / beside)
    soft = [r for run in runs for r in run["versus"]["ratios"]]
    peer = json.loads(subprocess.run(["/usr/bin/python3", "-c", PEER, os.path.join(ROOT, "bench"),
                                      args.spec, str(args.tokens), str(THREADS)],
                                     check=True, capture_output=True, text=True).stdout)
    med = {"standard": statistics.median(r["versus"]["base_ms_per_token"] for r in runs),
           "soft": statistics.median(r["versus"]["ms_per_token"] for r in runs)}
    first = runs[0]
    print("decode on the CPU (%d threads): %s, batch %d, prompt %d, %d new tokens, "
          "%d runs of %d rounds" % (THREADS, os.path.basename(args.spec), first["batch"],
                                    first["prompt_tokens"], first["new_tokens"], args.repeats,
                                    args.rounds))
    print("%-10s %14s %14s" % ("mode", "fbt ms/token", "torch ms/token"))
    for m in ("standard", "soft"):
        print("%-10s %14.3f %14.3f" % (m, med[m], peer[m]))
    print("fbt prefill: %.0f tokens/s" % statistics.median(r["prefill_tokens_per_s"] for r in runs))
    interval = median_interval(soft)
    print("soft / standard: fbt %.3f (the median of %d rounds, 95%% interval %s; "
          "runs: %s), torch %.3f"
          % (statistics.median(soft), len(soft),
             "%.3f-%.3f" % interval if interval else "- (too few rounds)",
             " ".join("%.3f" % r["versus"]["ratio"] for r in runs),
             peer["soft"] / peer["standard"]))
    print("floor (a GEMV over the %.1f MB of weights, beside each run): %.3f ms (%.3f-%.3f); "
          "fbt standard is %.2fx it (runs: %s)"
          % (4e-6 * weights, statistics.median(floors), min(floors), max(floors),
             statistics.median(ratios), " ".join("%.2f" % r for r in ratios)))
    last = runs[-1]
    print("fbt standard, a token: %d calls, %.0f%% in GEMMs, %.0f%% in kernels; costliest: %s"
          % (last["calls_per_token"], 100 * last["gemm_share"], 100 * last["kernel_share"],
             ", ".join("%s %.0f%%" % (k, 100 * v) for k, v in last["top"].items())))


if __name__ == "__main__":
    main()
