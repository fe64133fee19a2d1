"""Writes a copy of a tune cache (fbt tune --cache) whose every entry
chooses the given build of one kernel: for tests that a cache's choice is
what runs.

usage: pin_variant.py CACHE.json OUT.json KERNEL SYMBOL CONFIG [--speedup 1.0]

CONFIG is the variant's configuration as JSON ({"grain": 8, ...}). Prints
the number of entries changed; exits 1 when the cache has none.
"""
import argparse
import json
import sys


def main():
    p = argparse.ArgumentParser()
    p.add_argument("cache")
    p.add_argument("out")
    p.add_argument("kernel")
    p.add_argument("symbol")
    p.add_argument("config", type=json.loads)
    p.add_argument("--speedup", type=float, default=1.0)
    a = p.parse_args()
    c = json.load(open(a.cache))
    if not c["entries"]:
        sys.exit(f"FAIL: {a.cache} has no entries")
    for e in c["entries"].values():
        e["kernels"][a.kernel] = {"symbol": a.symbol, "config": a.config, "speedup": a.speedup}
    json.dump(c, open(a.out, "w"))
    print(f"{a.kernel} -> {a.symbol} in {len(c['entries'])} entries")


if __name__ == "__main__":
    main()
