"""Checks the contraction report of `fbt eval --contraction --json`: one
ratio per pair of consecutive passes, one soft-state RMS per generated token,
and the prompt length used.

usage: fbt eval ... --contraction --json | check_contraction.py
           --ratios N --generated G --prompt-length P

Prints `contraction R1 R2 ...` (3 significant digits); exits 1 showing the
report when a count differs.
"""
import argparse
import json
import sys


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ratios", type=int, required=True)
    p.add_argument("--generated", type=int, required=True)
    p.add_argument("--prompt-length", type=int, required=True)
    a = p.parse_args()
    r = json.load(sys.stdin)
    if not (len(r["contraction"]) == a.ratios and len(r["soft_state_rms"]) == a.generated
            and r["prompt_length"] == a.prompt_length):
        sys.exit(f"FAIL: expected {a.ratios} ratios, {a.generated} RMS values and a prompt of "
                 f"{a.prompt_length} tokens: {r}")
    print("contraction", " ".join("%.3g" % x for x in r["contraction"]))


if __name__ == "__main__":
    main()
