"""Summarizes a step plan (fbtc --emit=plan) for FileCheck: the training
step's arena, its in-place outputs, the kinds of buffer its ops' arguments
name, its collectives (each bucket's start, and the wait for it after it),
the gradient-only step's collectives and the decode step's in-place outputs.

usage: plan_summary.py PLAN.json TRAIN_STEP GRADS_STEP DECODE_STEP

Prints one `name value` line per figure (see plan.test).
"""
import json
import sys


def first(ops, pred):
    """The index of the first op for which pred holds (None: there is none)."""
    return next((i for i, o in enumerate(ops) if pred(o)), None)


def main():
    p = json.load(open(sys.argv[1]))
    train, grads, decode = (p[name] for name in sys.argv[2:5])
    ops = train["ops"]
    print("arena", train["arena_bytes"] > 0)
    # An output updated in place has no buffer of its own.
    print("in-place", sum("updates" in o for o in train["outputs"]))
    print("outputs-written-by-ops", sorted({a[0] for op in ops for a in op.get("args", [])}))
    starts = [o["bucket"] for o in ops if "collective" in o]
    waits = [o["wait"] for o in ops if "wait" in o]
    started = {b: first(ops, lambda o: "collective" in o and o.get("bucket") == b) for b in starts}
    waited = {b: first(ops, lambda o: o.get("wait") == b) for b in starts}
    in_order = all(waited[b] is not None and started[b] < waited[b] for b in starts)
    print("buckets", starts, "waited", sorted(waits), "in order", in_order)
    print("grads-step collectives", sum("collective" in o or "wait" in o for o in grads["ops"]))
    print("decode-caches", sum("updates" in o for o in decode["outputs"]))


if __name__ == "__main__":
    main()
