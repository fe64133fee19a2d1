"""Writes instruction data for the whole-life test: conversations in which the
user asks for a sum and the assistant answers it, as chat JSON Lines.

usage: make_chat.py OUT.jsonl [--count N] [--seed S] [--exclude FILE]
Half the conversations have a system turn; one in four asks twice. --exclude: no
question of FILE (another output of this script) is asked: a held-out set.
"""
import argparse
import json
import random


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--count", type=int, default=600)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--exclude")
    args = ap.parse_args()
    rng = random.Random(args.seed)
    asked = set()
    if args.exclude:
        for line in open(args.exclude):
            asked.update(m["content"] for m in json.loads(line)["messages"] if m["role"] == "user")
    with open(args.out, "w") as f:
        for i in range(args.count):
            messages = []
            if i % 2:
                messages.append({"role": "system", "content": "Answer with the sum."})
            for _ in range(2 if i % 4 == 3 else 1):
                a, b = rng.randrange(10, 50), rng.randrange(10, 50)
                while "%d+%d" % (a, b) in asked:
                    a, b = rng.randrange(10, 50), rng.randrange(10, 50)
                messages.append({"role": "user", "content": "%d+%d" % (a, b)})
                messages.append({"role": "assistant", "content": str(a + b)})
            f.write(json.dumps({"messages": messages}) + "\n")


if __name__ == "__main__":
    main()
