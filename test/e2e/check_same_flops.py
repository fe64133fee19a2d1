"""Checks the compute-matched baseline of an experiment: under SEED, the
same-flops plain run's training FLOPs (FLOPs per token x steps) are the FBT
run's to within one step, with more steps than the FBT's.

usage: check_same_flops.py RESULTS.json SEED

Prints `matched`; exits 1 with both totals when they differ.
"""
import json
import sys


def main():
    r = json.load(open(sys.argv[1]))["runs"][sys.argv[2]]
    f, m = r["fbt"], r["same-flops"]
    a, b = f["flops_per_token"] * f["steps"], m["flops_per_token"] * m["steps"]
    if not abs(a - b) <= m["flops_per_token"]:
        sys.exit(f"FAIL: FBT training FLOPs {a}, same-flops {b}: more than a step apart")
    if not m["steps"] > f["steps"]:
        sys.exit(f"FAIL: same-flops trains {m['steps']} steps, the FBT {f['steps']}")
    print("matched")


if __name__ == "__main__":
    main()
