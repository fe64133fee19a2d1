"""Checks the contraction report of `fbt eval --contraction --json`: one
ratio (and its standard error, and its all-positions twin) per pair of
consecutive passes, one soft-state RMS per generated token, one loss per
position of the context for soft and standard decoding, and the counts.

It also checks what the measure rests on: fused pass k is exact below
position k by causality, so s_{k+1} - s_k vanishes there, and the ratio over
every position can only be the ratio over t >= k or below it (its
denominator is larger, its numerator the same). A feedback path that leaked
the future would break that.

usage: fbt eval ... --contraction --json | check_contraction.py
           --ratios N --generated G --prompt-length P --prompts M
           --sequences S --context C

Prints `contraction R1 R2 ...` (3 significant digits); exits 1 showing the
report when a count differs or the all-positions ratio exceeds its twin.
"""
import argparse
import json
import sys


def main():
    p = argparse.ArgumentParser()
    for name in ("ratios", "generated", "prompt-length", "prompts", "sequences", "context"):
        p.add_argument("--" + name, type=int, required=True)
    a = p.parse_args()
    r = json.load(sys.stdin)
    n = a.ratios
    counts = (len(r["contraction"]) == n and len(r["contraction_se"]) == n
              and len(r["contraction_all_positions"]) == n
              and len(r["soft_state_rms"]) == a.generated
              and r["prompt_length"] == a.prompt_length and r["prompts"] == a.prompts
              and r["sequences"] == a.sequences
              and len(r["soft_loss_by_position"]) == a.context - 1
              and len(r["standard_loss_by_position"]) == a.context - 1)
    if not counts:
        sys.exit(f"FAIL: expected {n} ratios, {a.generated} RMS values, {a.prompts} prompts of "
                 f"{a.prompt_length} tokens and {a.sequences} windows of {a.context}: {r}")
    for k, (open_, every) in enumerate(zip(r["contraction"], r["contraction_all_positions"])):
        if every > open_ * (1 + 1e-9):
            sys.exit(f"FAIL: pass {k + 2}: the ratio over every position ({every}) exceeds "
                     f"the one over t >= {k + 1} ({open_}): positions below the pass changed")
    print("contraction", " ".join("%.3g" % x for x in r["contraction"]))


if __name__ == "__main__":
    main()
