#!/usr/bin/env python3
"""The depth task: a digit tracked through k updates, answer first.

A problem is a start digit and k updates mod 10, one byte each; the answer
is the first thing written after "=", one digit, then a newline:

    $7++-+=9          (7, 8, 9, 8, 9)
    $4+*-=4           --ops +-*: (4, 5, 5*3 = 5, 4)

The updates are "+" (add 1) and "-" (subtract 1) by default (--ops +-);
"*" (times 3) and "/" (times 7 = divide by 3) can be drawn too, and do not
commute with the others, so with them the answer needs the updates applied
in order. Difficulty is k; guessing among the ten digits gets 10%.

--ops perm5 is the order-dependent form whose space is large at every k: a
position 0..4 carried through k permutations of 5 elements, each written as
its pairs "i j" (i goes to j), the answer the final position (guessing gets
20%):

    $0:04 11 22 33 40|00 12 24 33 41=1   (0 -> 4, then 4 -> 1)

k = 1 is one lookup (find the pair that starts with the position, copy its
second digit); each further permutation is one more dependent lookup, in
order (permutations do not commute), and the space holds 5 * 120^k
problems. Its prompts are the question alone after a newline (no solved
example), so that k = 8 fits a 128-byte prompt.

Why so plain: a tiny byte-level model (2 layers, 64 wide) learns a unary
update of a digit in a few thousand steps, but not "$3+4=7" (a table of two
digits, whose answer no one input predicts) even alone in its data for 2000
steps; with --ops +- and easy levels frequent it gets held-out problems of
k = 5..8 partly right (see docs/experiments/depth-task.md for the figures).

Held-out problems are a fixed part of the problem space: a problem (the text
before "=") is held out when the SHA-256 of its text falls in the first
--heldout-rate of the hash range (default 1/8), at every k. Training text
only ever holds the other problems; evaluation only asks held-out ones, so
no asked problem (nor its solved examples) is ever in the training text.
A depth whose space holds fewer than --min-heldout held-out problems (the
easy levels: 10 * |ops|^k problems in all) is trained but not asked.

Training mix: lines "$...=a" in blocks of 2..6 consecutive problems, k drawn
from --weights (default 1/k: easy levels first), inserted at line
boundaries of each training document of a base data set (JSON Lines, one
{"text"} a document) until they are --mix of its bytes (default 0.5). Each evaluation problem is two solved held-out problems of
the same k, one per line, then the question: 3 (k + 4) bytes, which the
spec's inference.max_prompt_length must hold (the runtime adds BOS before
the prompt; see fbt eval --task file:PATH).

    depth_task.py --data BASE.jsonl --validation-docs N --test-docs N --out DIR
                  [--mix 0.5] [--k 1..8] [--weights W,...] [--ops +-]
                  [--problems 200] [--seed S]

where the base's last --test-docs documents are its test part and the
--validation-docs before them its validation part (as the code recipe
writes them), writes DIR/train.jsonl (the base's training documents with the
task mixed in, then its validation and test documents unchanged),
DIR/task.json (the --val-fraction and --test-fraction that keep the same
parts, the depths asked, and the settings) and DIR/k<K>.jsonl, the held-out
problems of each asked k for `fbt eval --task file:DIR/k<K>.jsonl`.

DIR/probe.jsonl holds held-out problems, solved, one per line, documents of
16 lines, k drawn uniformly from the depths that have held-out problems:
the text `fbt probe --targets value` reads the running value from (its
validation and test parts at task.json's "probe" fractions: 40% each).
"""

import argparse
import hashlib
import itertools
import json
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from code_corpus import exact_fractions  # noqa: E402

UPDATES = {"+": lambda v: v + 1, "-": lambda v: v - 1, "*": lambda v: 3 * v,
           "/": lambda v: 7 * v}  # mod 10; 7 = 1/3 mod 10
DEFAULT_OPS = "+-"
PERM = "perm5"  # --ops perm5: permutations of 5 elements
HELDOUT_RATE = 1 / 8


def apply(value, op):
    if op not in UPDATES:
        raise ValueError("unknown update %r" % op)
    return UPDATES[op](value) % 10


def solve(question):
    """The answer of "$7+*-": the digit after the updates, in order; of
    "$3:04 11 22 33 40|...": the position after the permutations, in order."""
    if ":" in question:
        start, perms = question[1:].split(":")
        value = int(start)
        for perm in perms.split("|"):
            value = int(perm_images(perm)[value])
        return str(value)
    if not (question.startswith("$") and len(question) >= 3 and question[1].isdigit()):
        raise ValueError("not a problem: %r" % question)
    value = int(question[1])
    for op in question[2:]:
        value = apply(value, op)
    return str(value)


def depth(question):
    if ":" in question:
        return len(question.split(":")[1].split("|"))
    return len(question) - 2


PERMS = ["".join(map(str, p)) for p in itertools.permutations(range(5))]  # images


def perm_text(images):
    """"31402" -> "03 11 24 30 42": the pairs i -> images[i]."""
    return " ".join("%d%s" % (i, c) for i, c in enumerate(images))


def perm_images(text):
    """The inverse of perm_text; a ValueError for anything else."""
    pairs = text.split(" ")
    images = "".join(p[1] for p in pairs if len(p) == 2)
    if [p[0] for p in pairs] != list("01234") or len(images) != 5 or \
            sorted(images) != list("01234"):
        raise ValueError("not a permutation of 5: %r" % text)
    return images


def starts(ops):
    return 5 if ops == PERM else 10


def space(k, ops):
    return 5 * 120 ** k if ops == PERM else 10 * len(ops) ** k


def every_question(k, ops):
    if ops == PERM:
        return ["$%d:" % s + "|".join(perm_text(p) for p in u)
                for s in range(5) for u in itertools.product(PERMS, repeat=k)]
    return [question_of(s, u) for s in range(10) for u in itertools.product(ops, repeat=k)]


def question_of(start, updates):
    return "$%d" % start + "".join(updates)


def is_heldout(question, rate=HELDOUT_RATE):
    h = int.from_bytes(hashlib.sha256(question.encode()).digest()[:8], "big")
    return h < rate * 2 ** 64


def random_question(rng, k, ops=DEFAULT_OPS):
    if ops == PERM:
        return "$%d:" % rng.randrange(5) + "|".join(perm_text(rng.choice(PERMS))
                                                    for _ in range(k))
    return question_of(rng.randrange(10), [rng.choice(ops) for _ in range(k)])


def heldout_questions(k, count, seed, rate=HELDOUT_RATE, ops=DEFAULT_OPS):
    """`count` distinct held-out questions of depth k (fewer when the space
    holds fewer), in a seeded order."""
    rng = random.Random("heldout/%d/%d/%s" % (seed, k, ops))
    if space(k, ops) <= 200000:  # small: every held-out question, shuffled
        found = [q for q in every_question(k, ops) if is_heldout(q, rate)]
        rng.shuffle(found)
        return found[:count]
    found, seen = [], set()
    while len(found) < count:
        q = random_question(rng, k, ops)
        if q not in seen and is_heldout(q, rate):
            seen.add(q)
            found.append(q)
    return found


def eval_problems(k, count, seed, rate=HELDOUT_RATE, ops=DEFAULT_OPS):
    """Held-out problems of depth k: {prompt, answer, terminator, k}; each
    prompt is two solved held-out problems of depth k, then the question
    (perm5: a newline, then the question)."""
    examples = 0 if ops == PERM else 2
    qs = heldout_questions(k, count + examples, seed, rate, ops)
    if len(qs) < examples + 1:
        raise ValueError("depth %d has too few held-out problems" % k)
    n = min(count, len(qs))
    out = []
    for i in range(n):
        shown = [qs[(i + j) % len(qs)] for j in range(1, examples + 1)]
        q = qs[i]
        shown_text = "".join("%s=%s\n" % (e, solve(e)) for e in shown) or "\n"
        out.append({"prompt": shown_text + q + "=",
                    "answer": solve(q), "terminator": "\n", "k": k})
    return out


def training_lines(rng, nbytes, ks, weights, rate=HELDOUT_RATE, ops=DEFAULT_OPS):
    """Lines "$...=a" (no newline) of training problems, about nbytes in all."""
    lines, total = [], 0
    while total < nbytes:
        k = rng.choices(ks, weights)[0]
        q = random_question(rng, k, ops)
        if is_heldout(q, rate):
            continue
        lines.append(q + "=" + solve(q))
        total += len(lines[-1]) + 1
    return lines


def mix(base, fraction, seed, ks, weights, rate=HELDOUT_RATE, ops=DEFAULT_OPS):
    """base with task blocks inserted at its line boundaries so that they make
    up `fraction` of the result's bytes."""
    if not 0 <= fraction < 1:
        raise ValueError("the mix fraction must be in [0, 1)")
    rng = random.Random("mix/%d" % seed)
    size = len(base.encode("utf-8", "surrogateescape"))
    lines = training_lines(rng, fraction / (1 - fraction) * size, ks, weights, rate, ops)
    blocks, i = [], 0
    while i < len(lines):
        n = rng.randint(2, 6)
        blocks.append("".join(l + "\n" for l in lines[i:i + n]))
        i += n
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


def probe_data(path, ks, seed, rate=HELDOUT_RATE, ops=DEFAULT_OPS, nbytes=48000):
    """Writes held-out problems, solved, as documents of 16 lines to path;
    returns the fractions that make its last 40% the test part and the 40%
    before it the validation part."""
    rng = random.Random("probe/%d/%s" % (seed, ops))
    pools = [heldout_questions(k, 2000, seed, rate, ops) for k in ks]
    pools = [p for p in pools if p]
    docs, total = [], 0
    while total < nbytes:
        doc = "".join("%s=%s\n" % (q, solve(q))
                      for q in (rng.choice(rng.choice(pools)) for _ in range(16)))
        docs.append(doc)
        total += len(doc) + 1
    with open(path, "w") as f:
        for doc in docs:
            f.write(json.dumps({"text": doc}) + "\n")
    tokens = [len(doc) + 1 for doc in docs]
    n, held = len(docs), len(docs) * 2 // 5
    return exact_fractions(sum(tokens), sum(tokens[n - 2 * held:n - held]),
                           sum(tokens[n - held:]))


def default_weights(ks):
    """1/k: the easy levels, which the model learns first, most often."""
    return [1 / k for k in ks]


def build(data, validation_docs, test_docs, out, fraction=0.5, ks=range(1, 9), weights=None,
          problems=200, seed=20261201, rate=HELDOUT_RATE, ops=DEFAULT_OPS, min_heldout=10):
    """Writes train.jsonl, task.json and k<K>.jsonl into out; returns task.json."""
    ks = list(ks)
    weights = list(weights) if weights else default_weights(ks)
    if len(weights) != len(ks) or min(ks) < 1:
        raise ValueError("one weight per depth, depths >= 1")
    if ops != PERM and (not ops or any(op not in UPDATES for op in ops)
                        or len(set(ops)) != len(ops)):
        raise ValueError("ops must be %s or distinct updates of %s" % (PERM, "".join(UPDATES)))
    with open(data) as f:
        docs = [json.loads(line)["text"] for line in f if line.strip()]
    held = validation_docs + test_docs
    if not 0 < held < len(docs):
        raise ValueError("%s has %d documents: too few for %d held out" % (data, len(docs), held))
    train, kept = docs[:len(docs) - held], docs[len(docs) - held:]
    mixed = [mix(doc, fraction, seed * 1000003 + i, ks, weights, rate, ops)
             for i, doc in enumerate(train)]
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, "train.jsonl")
    with open(path, "w") as f:
        for doc in mixed + kept:
            f.write(json.dumps({"text": doc}) + "\n")
    tokens = [1 + len(doc.encode("utf-8", "surrogateescape")) for doc in mixed + kept]
    files = {}
    for k in ks:  # depths with too small a space to hold problems out are trained only
        if len(heldout_questions(k, min_heldout, seed, rate, ops)) < min_heldout:
            continue
        files[k] = os.path.join(out, "k%d.jsonl" % k)
        with open(files[k], "w") as f:
            for p in eval_problems(k, problems, seed, rate, ops):
                f.write(json.dumps(p) + "\n")
    if not files:
        raise ValueError("no depth has %d held-out problems: ask for larger k" % min_heldout)
    probe_path = os.path.join(out, "probe.jsonl")
    probe_val, probe_test = probe_data(probe_path, ks, seed, rate, ops)
    n = len(tokens)
    val_f, test_f = exact_fractions(sum(tokens), sum(tokens[n - held:n - test_docs]),
                                    sum(tokens[n - test_docs:]))
    task = {"data": path, "val_fraction": val_f, "test_fraction": test_f,
            "mix": fraction, "k": ks, "eval_k": sorted(files), "weights": weights, "seed": seed,
            "ops": ops,
            "heldout_rate": rate, "problems": {str(k): v for k, v in files.items()},
            "probe": {"data": probe_path, "val_fraction": probe_val, "test_fraction": probe_test},
            "task_bytes": sum(len(m) for m in mixed) - sum(len(t) for t in train)}
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
    ap.add_argument("--data", required=True,
                    help="the base data set: JSON Lines, one {\"text\"} a document")
    ap.add_argument("--validation-docs", type=int, required=True,
                    help="its validation documents (before the test documents)")
    ap.add_argument("--test-docs", type=int, required=True, help="its last, test documents")
    ap.add_argument("--out", required=True)
    ap.add_argument("--mix", type=float, default=0.5,
                    help="task share of the training bytes (default 0.5)")
    ap.add_argument("--k", default="1..8", help="depths: LO..HI or a list (default 1..8)")
    ap.add_argument("--weights", help="comma-separated weights of the depths (default 1/k)")
    ap.add_argument("--problems", type=int, default=200, help="held-out problems per depth")
    ap.add_argument("--ops", default=DEFAULT_OPS,
                    help="the updates drawn, of + - * / (default %s), or %s: "
                         "permutations of 5" % (DEFAULT_OPS, PERM))
    ap.add_argument("--heldout-rate", type=float, default=HELDOUT_RATE,
                    help="the held-out share of the problem space (default 1/8)")
    ap.add_argument("--min-heldout", type=int, default=10,
                    help="ask a depth only with this many held-out problems (default 10)")
    ap.add_argument("--seed", type=int, default=20261201)
    args = ap.parse_args()
    ks = parse_ks(args.k)
    weights = [float(w) for w in args.weights.split(",")] if args.weights else None
    print(json.dumps(build(args.data, args.validation_docs, args.test_docs, args.out, args.mix,
                           ks, weights,
                           args.problems, args.seed, args.heldout_rate, args.ops,
                           args.min_heldout), indent=1))


if __name__ == "__main__":
    main()
