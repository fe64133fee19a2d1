"""Summarizes `fbt bench --decode MODE --versus OTHER --json` output for
FileCheck: every round's ratio kept and positive, the reported ratio their
(lower) median, both modes timed.

usage: bench_versus.py BENCH.json

Prints: MODE OTHER ROUNDS RATIOS ratios>0 ratio==median ms>0 base_ms>0,
the last four as True or False; exits 1 when one is False.
"""
import json
import sys


def main():
    o = json.load(open(sys.argv[1]))
    v = o["versus"]
    r = sorted(v["ratios"])
    # The lower median: with an even count, the lower of the middle two.
    checks = [all(x > 0 for x in r), v["ratio"] == r[(len(r) - 1) // 2],
              v["ms_per_token"] > 0, v["base_ms_per_token"] > 0]
    print(o["mode"], v["mode"], v["rounds"], len(r), *checks)
    if not all(checks):
        sys.exit("FAIL: ratios %s, ratio %s" % (r, v["ratio"]))


if __name__ == "__main__":
    main()
