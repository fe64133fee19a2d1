"""Prints, for each named step of a GPU step plan (fbtc --emit=plan), the
operand types of its GEMMs (A,B,C; f32 where the plan gives none) and its
arena's size, for FileCheck.

usage: gemm_types.py PLAN.json STEP...

Prints `STEP ['TYPES', ...] ARENA_BYTES` per step.
"""
import json
import sys


def main():
    p = json.load(open(sys.argv[1]))
    for s in sys.argv[2:]:
        types = {",".join(o.get("types", ["f32"] * 3)) for o in p[s]["ops"] if "gemm" in o}
        print(s, sorted(types), p[s]["arena_bytes"])


if __name__ == "__main__":
    main()
