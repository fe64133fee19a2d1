#!/usr/bin/env python3
"""The depth task: a digit tracked through k updates, answer first.

A problem starts from a digit and applies k updates mod 10, each one byte of
operator and one of operand: "+d" and "-d" (d in 1..9) and "*d" (d in 3, 7,
9: the units, so every update is a bijection and none forgets the start).
Updates that multiply do not commute with those that add, so the answer
cannot be read off an unordered summary of the prompt: it needs the updates
applied in order, k of them. The answer is the first thing written after
"=", one digit, then a newline:

    $7+3*9-2=8        (7+3 = 0, *9 = 0, -2 = 8)

Difficulty is k (1..8 by default). Drawn problems pick each update's
operator uniformly among + - *, then its operand. Guessing among the ten
digits gets 10%.

Held-out problems are a fixed part of the problem space: a problem (the text
before "=") is held out when the SHA-256 of its text falls in the first
--heldout-rate of the hash range (default 1/8), at every k. Training text
only ever holds the other problems; evaluation only asks held-out ones, so
no asked problem (nor its solved examples) is ever in the training text.
At k = 1 and 2 the space is small (210 and 4410 problems): the held-out
problems are all that there are (about 26 and 551), so the model has to
compute, not recall, them too.

Training mix: lines "$...=a" in blocks of 2..6 consecutive problems, k drawn
from --weights (default uniform over 1..8), inserted at line boundaries of a
base text until they are --mix of its training bytes. Each evaluation
problem is two solved held-out problems of the same k, one per line, then
the question (the runtime adds BOS before the prompt; see fbt eval --task
file:PATH).

    depth_task.py --data TEXT --val-fraction F --out DIR [--mix 0.2]
                  [--k 1..8] [--problems 200] [--seed S]

writes DIR/train.txt (the base's training part with the task mixed in, then
its held-out part unchanged), DIR/task.json (the new --val-fraction that
keeps the same held-out part, and the settings) and DIR/k<K>.jsonl, the
held-out problems of each k for `fbt eval --task file:DIR/k<K>.jsonl`.
"""

import argparse
import hashlib
import itertools
import json
import os
import random

OPS = [("+", d) for d in range(1, 10)] + [("-", d) for d in range(1, 10)] + \
      [("*", d) for d in (3, 7, 9)]
HELDOUT_RATE = 1 / 8


def apply(value, op, d):
    if op == "+":
        return (value + d) % 10
    if op == "-":
        return (value - d) % 10
    if op == "*":
        return (value * d) % 10
    raise ValueError("unknown update %r" % op)


def solve(question):
    """The answer of "$7+3*9-2": the digit after the updates."""
    if not (question.startswith("$") and len(question) % 2 == 0 and len(question) >= 4):
        raise ValueError("not a problem: %r" % question)
    value = int(question[1])
    for i in range(2, len(question), 2):
        value = apply(value, question[i], int(question[i + 1]))
    return str(value)


def depth(question):
    return (len(question) - 2) // 2


def question_of(start, updates):
    return "$%d" % start + "".join("%s%d" % u for u in updates)


def is_heldout(question, rate=HELDOUT_RATE):
    h = int.from_bytes(hashlib.sha256(question.encode()).digest()[:8], "big")
    return h < rate * 2 ** 64


def random_update(rng):
    """An operator uniform in + - *, then its operand."""
    op = rng.choice("+-*")
    return op, rng.choice((3, 7, 9) if op == "*" else range(1, 10))


def random_question(rng, k):
    return question_of(rng.randrange(10), [random_update(rng) for _ in range(k)])


def heldout_questions(k, count, seed, rate=HELDOUT_RATE):
    """`count` distinct held-out questions of depth k (fewer when the space
    holds fewer), in a seeded order."""
    rng = random.Random("heldout/%d/%d" % (seed, k))
    space = 10 * len(OPS) ** k
    if space <= 200000:  # small: every held-out question, shuffled
        found = [question_of(s, u) for s in range(10)
                 for u in itertools.product(OPS, repeat=k)]
        found = [q for q in found if is_heldout(q, rate)]
        rng.shuffle(found)
        return found[:count]
    found, seen = [], set()
    while len(found) < count:
        q = random_question(rng, k)
        if q not in seen and is_heldout(q, rate):
            seen.add(q)
            found.append(q)
    return found


def eval_problems(k, count, seed, rate=HELDOUT_RATE):
    """Held-out problems of depth k: {prompt, answer, terminator, k}; each
    prompt is two solved held-out problems of depth k, then the question."""
    qs = heldout_questions(k, count + 2, seed, rate)
    if len(qs) < 3:
        raise ValueError("depth %d has too few held-out problems" % k)
    n = min(count, len(qs))
    out = []
    for i in range(n):
        a, b = qs[(i + 1) % len(qs)], qs[(i + 2) % len(qs)]
        q = qs[i]
        out.append({"prompt": "%s=%s\n%s=%s\n%s=" % (a, solve(a), b, solve(b), q),
                    "answer": solve(q), "terminator": "\n", "k": k})
    return out


def training_lines(rng, nbytes, ks, weights, rate=HELDOUT_RATE):
    """Lines "$...=a" (no newline) of training problems, about nbytes in all."""
    lines, total = [], 0
    while total < nbytes:
        k = rng.choices(ks, weights)[0]
        q = random_question(rng, k)
        if is_heldout(q, rate):
            continue
        lines.append(q + "=" + solve(q))
        total += len(lines[-1]) + 1
    return lines


def mix(base, fraction, seed, ks, weights, rate=HELDOUT_RATE):
    """base with task blocks inserted at its line boundaries so that they make
    up `fraction` of the result's bytes."""
    if not 0 <= fraction < 1:
        raise ValueError("the mix fraction must be in [0, 1)")
    rng = random.Random("mix/%d" % seed)
    size = len(base.encode("utf-8", "surrogateescape"))
    lines = training_lines(rng, fraction / (1 - fraction) * size, ks, weights, rate)
    blocks = []
    while lines:
        n = rng.randint(2, 6)
        blocks.append("".join(l + "\n" for l in lines[:n]))
        lines = lines[n:]
    base_lines = base.splitlines(keepends=True)
    if base_lines and not base_lines[-1].endswith("\n"):
        base_lines[-1] += "\n"
    at = sorted(rng.randrange(len(base_lines) + 1) for _ in blocks)
    out, j = [], 0
    for i in range(len(base_lines) + 1):
        while j < len(at) and at[j] == i:
            out.append(blocks[j])
            j += 1
        if i < len(base_lines):
            out.append(base_lines[i])
    return "".join(out)


def split_bytes(data, val_fraction):
    """(training, held-out) parts of a byte-level text file as fbt splits it:
    one document, BOS then the bytes; the last floor(F * n) tokens held out."""
    held = int(val_fraction * (1 + len(data)))
    return data[:len(data) - held], data[len(data) - held:]


def exact_val_fraction(heldout, total):
    f = (heldout + 0.5) / total
    assert int(f * total) == heldout, (heldout, total)
    return f


def build(data, val_fraction, out, fraction=0.2, ks=range(1, 9), weights=None,
          problems=200, seed=20261201, rate=HELDOUT_RATE):
    """Writes train.txt, task.json and k<K>.jsonl into out; returns task.json."""
    ks = list(ks)
    weights = list(weights) if weights else [1] * len(ks)
    with open(data, "rb") as f:
        train, heldout = split_bytes(f.read(), val_fraction)
    # Bytes that are not UTF-8 (or a character cut by the split) pass through.
    mixed = mix(train.decode("utf-8", "surrogateescape"), fraction, seed, ks, weights,
                rate).encode("utf-8", "surrogateescape")
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "train.txt")
    with open(path, "wb") as f:
        f.write(mixed + heldout)
    total = 1 + len(mixed) + len(heldout)
    files = {}
    for k in ks:
        files[k] = os.path.join(out, "k%d.jsonl" % k)
        with open(files[k], "w") as f:
            for p in eval_problems(k, problems, seed, rate):
                f.write(json.dumps(p) + "\n")
    task = {"data": path, "val_fraction": exact_val_fraction(len(heldout), total),
            "mix": fraction, "k": ks, "weights": weights, "seed": seed,
            "heldout_rate": rate, "problems": {str(k): v for k, v in files.items()},
            "task_bytes": len(mixed) - len(train)}
    with open(os.path.join(out, "task.json"), "w") as f:
        json.dump(task, f, indent=1)
    return task


def parse_ks(text):
    if ".." in text:
        lo, hi = text.split("..")
        return list(range(int(lo), int(hi) + 1))
    return [int(x) for x in text.split(",")]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", required=True, help="byte-level training text (UTF-8)")
    ap.add_argument("--val-fraction", type=float, default=0.1,
                    help="its held-out part, as fbt train --val-fraction (default 0.1)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--mix", type=float, default=0.2, help="task share of the training bytes")
    ap.add_argument("--k", default="1..8", help="depths: LO..HI or a list (default 1..8)")
    ap.add_argument("--weights", help="comma-separated weights of the depths (default uniform)")
    ap.add_argument("--problems", type=int, default=200, help="held-out problems per depth")
    ap.add_argument("--seed", type=int, default=20261201)
    args = ap.parse_args()
    ks = parse_ks(args.k)
    weights = [float(w) for w in args.weights.split(",")] if args.weights else None
    print(json.dumps(build(args.data, args.val_fraction, args.out, args.mix, ks, weights,
                           args.problems, args.seed), indent=1))


if __name__ == "__main__":
    main()
