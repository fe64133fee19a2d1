"""Summarizes `fbt bench --decode MODE --versus OTHER --json` output for
FileCheck: every round's ratio kept and positive, the reported ratio their
(lower) median, both modes timed.

usage: bench_versus.py BENCH.json

Prints: MODE OTHER ROUNDS RATIOS ratios>0 ratio==median ms>0 base_ms>0
profiled, the last five as True or False; exits 1 when one is False.
"profiled": the profile (top, the kernel share) came from a profiled
generation, its shares of that generation's time (the timed one runs
unprofiled, so its time is no bound on them).
"""
import json
import sys


def main():
    o = json.load(open(sys.argv[1]))
    v = o["versus"]
    r = sorted(v["ratios"])
    # The lower median: with an even count, the lower of the middle two.
    shares = list(o["top"].values()) + [o["kernel_share"]]
    checks = [all(x > 0 for x in r), v["ratio"] == r[(len(r) - 1) // 2],
              v["ms_per_token"] > 0, v["base_ms_per_token"] > 0,
              bool(o["top"]) and all(0 < x <= 1 for x in shares)]
    print(o["mode"], v["mode"], v["rounds"], len(r), *checks)
    if not all(checks):
        sys.exit("FAIL: ratios %s, ratio %s, profile %s" % (r, v["ratio"], shares))


if __name__ == "__main__":
    main()
