"""Summarizes an experiment with the depth task and a deeper plain control,
for FileCheck: the depths asked (those with as many held-out problems as
asked for), whether the deeper control's FLOPs per token are the FBT's to
within half, and whether it trained as many steps (the same tokens).

usage: deeper_control.py TASK.json RESULTS.json SEED

Prints `[K, ...] True|False True|False`.
"""
import json
import sys


def main():
    t = json.load(open(sys.argv[1]))
    r = json.load(open(sys.argv[2]))["runs"][sys.argv[3]]
    d = [v for v in r.values() if v["kind"] == "deeper"][0]
    f = r["fbt"]
    print(t["eval_k"], abs(d["flops_per_token"] / f["flops_per_token"] - 1) < 0.5,
          d["steps"] == f["steps"])


if __name__ == "__main__":
    main()
