"""Summarizes `fbt tune --json` output on a CUDA bundle, for FileCheck: some
kernel variant was measured, and cuBLASLt offered more than one algorithm for
every GEMM shape (so there was a choice to make).

usage: tune_probed.py TUNE.json

Prints `kernels True|False gemms True|False`; exits 1 when either is False.
"""
import json
import sys


def main():
    r = json.load(open(sys.argv[1]))
    kernels = any(x["measured"] for x in r["kernels"])
    g = r["gemms"]
    gemms = len(g) > 0 and all(x["algorithms"] > 1 for x in g)
    print("kernels", kernels, "gemms", gemms)
    if not (kernels and gemms):
        sys.exit(1)


if __name__ == "__main__":
    main()
