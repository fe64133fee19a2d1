"""Checks that two training runs wrote the same metrics.jsonl, record for
record, in every field but the timings (tokens_per_s, elapsed_s): a resumed
run must continue bit for bit.

usage: same_metrics.py A/metrics.jsonl B/metrics.jsonl [--steps N]

--steps N: B's step records are also steps 1..N, once each.
Prints the step and evaluation counts and each step's pass count; exits 1
naming what differs.
"""
import argparse
import json
import sys

TIMINGS = ("tokens_per_s", "elapsed_s")


def load(path):
    return [{k: v for k, v in json.loads(line).items() if k not in TIMINGS}
            for line in open(path)]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--steps", type=int)
    args = p.parse_args()
    a, b = load(args.a), load(args.b)
    if a != b:
        sys.exit("FAIL: metrics differ")
    steps = [r["step"] for r in b if "loss" in r]
    if args.steps is not None and steps != list(range(1, args.steps + 1)):
        sys.exit(f"FAIL: steps {steps}, not 1..{args.steps}")
    print("identical:", len(steps), "steps,", len(b) - len(steps), "evaluations; passes",
          [r["passes"] for r in b if "loss" in r])


if __name__ == "__main__":
    main()
