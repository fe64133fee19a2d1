"""Instruction data for the experiment runner's SFT stage: sums of two
two-digit numbers asked as questions, answered in one of two styles.

    plain    "What is 47 + 38?" -> "85"
    worked   "What is 47 + 38?" -> "7+8=15, carry 1; 4+3+1=8; so 85"

Worked answers show the steps, as the instruction data of reasoning models
does, and are longer: the SFT table reports both the accuracy and the
answer's length per regime (the paper's conciseness claim is that feedback
regimes answer shorter). The held-out conversations ask sums no training
conversation asks (a pair and its swap count as one), and every answer is
one line, as `fbt eval --task chat:FILE` scores it (exact match of the
first line the model writes).

    sft_task.py OUT_DIR [--style plain|worked] [--count N] [--heldout N] [--seed S]
"""
import argparse
import json
import os
import random

STYLES = ("plain", "worked")


def answer(a, b, style):
    if style == "plain":
        return str(a + b)
    ones = a % 10 + b % 10
    carry = ones // 10
    tens = a // 10 + b // 10 + carry
    return "%d+%d=%d, carry %d; %d+%d+%d=%d; so %d" % (
        a % 10, b % 10, ones, carry, a // 10, b // 10, carry, tens, a + b)


def conversation(a, b, style):
    return {"messages": [{"role": "user", "content": "What is %d + %d?" % (a, b)},
                         {"role": "assistant", "content": answer(a, b, style)}]}


def build(folder, style, count, heldout, seed):
    """Writes train.jsonl and heldout.jsonl for `style` into folder/style and
    returns their paths."""
    if style not in STYLES:
        raise ValueError("unknown SFT style %r (expected one of %s)" % (style, ", ".join(STYLES)))
    pairs = [(a, b) for a in range(10, 100) for b in range(a, 100)]
    if count + heldout > len(pairs):
        raise ValueError("at most %d conversations" % len(pairs))
    rng = random.Random(seed)
    rng.shuffle(pairs)
    out = os.path.join(folder, style)
    os.makedirs(out, exist_ok=True)
    paths = {"train": os.path.join(out, "train.jsonl"),
             "heldout": os.path.join(out, "heldout.jsonl")}
    parts = {"train": pairs[:count], "heldout": pairs[count:count + heldout]}
    for part, chosen in parts.items():
        with open(paths[part], "w") as f:
            for a, b in chosen:
                if rng.random() < 0.5:
                    a, b = b, a
                f.write(json.dumps(conversation(a, b, style)) + "\n")
    return paths


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--style", choices=STYLES, default="plain")
    ap.add_argument("--count", type=int, default=2000)
    ap.add_argument("--heldout", type=int, default=200)
    ap.add_argument("--seed", type=int, default=20261204)
    args = ap.parse_args()
    paths = build(args.out, args.style, args.count, args.heldout, args.seed)
    print("wrote %s (%d) and %s (%d)" % (paths["train"], args.count, paths["heldout"],
                                          args.heldout))


if __name__ == "__main__":
    main()
