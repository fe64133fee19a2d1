#!/usr/bin/env python3
"""Reads `fbt probe --json` and checks what any model's probe must show: the control target
(letter, a function of the current byte) read off layer 0 under standard prefill well above
the random-feature floor; the state each fused pass was handed, from t-1, reading it well
below layer 0 (that state has not seen the current byte: it can only have predicted it);
and every R^2 at most 1.

    check_probe.py PROBE.json [--margin 0.3]
"""
import argparse
import json
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("probe")
    ap.add_argument("--margin", type=float, default=0.3)
    args = ap.parse_args()
    with open(args.probe) as f:
        p = json.load(f)
    letter = p["targets"]["letter"]
    layer0, floor = letter["test_r2"]["standard"][0], letter["random"]
    ok = layer0 >= floor + args.margin
    ok &= all(r <= 1.0 for t in p["targets"].values() for row in t["test_r2"].values()
              for r in row)
    handed = letter["handed_state"]
    ok &= bool(handed) and set(handed) <= set(letter["test_r2"]) - {"standard"}
    ok &= all(r <= layer0 - args.margin for r in handed.values())
    print("letter at layer 0: %.3f, random features %.3f, handed states %s: %s" % (
        layer0, floor, " ".join("%.3f" % r for r in handed.values()), "ok" if ok else "FAIL"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
