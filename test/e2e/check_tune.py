"""Checks `fbt tune --json` output: every tunable kernel measured, no
variant rejected (each computes what its default does on the real steps),
each choice one of its kernel's variants, and every step timed both ways.

usage: check_tune.py TUNE.json [--steps NAME,...] [--partial]

--partial: only some steps were probed, so some kernels may be unmeasured
(at least one must be).
"""
import json
import sys


def main():
    args = sys.argv[1:]
    report = json.load(open(args[0]))
    steps = args[args.index("--steps") + 1].split(",") if "--steps" in args else []
    partial = "--partial" in args
    problems = []
    if partial and not any(k["measured"] for k in report["kernels"]):
        problems.append("no kernel measured")
    if not report["kernels"]:
        problems.append("no tunable kernels")
    for k in report["kernels"]:
        symbols = [v["symbol"] for v in k["variants"]]
        if not k["measured"]:
            if not partial:
                problems.append(f"{k['name']}: not measured")
            continue
        if symbols[0] != k["name"] or len(symbols) < 2:
            problems.append(f"{k['name']}: variants {symbols}")
        if k["chosen"] not in symbols:
            problems.append(f"{k['name']}: chose {k['chosen']}, not a variant")
        for v in k["variants"]:
            if "rejected" in v:
                problems.append(f"{v['symbol']}: rejected: {v['rejected']}")
            elif not v.get("seconds", 0) > 0:
                problems.append(f"{v['symbol']}: no time")
        if k["speedup"] < 1:
            problems.append(f"{k['name']}: chose a slower variant ({k['speedup']})")
    for g in report["gemms"]:
        for why in g["rejected"]:
            problems.append(f"GEMM {g['shape']}: {why}")
        if not 0 <= g["chosen"] < g["algorithms"] or g["speedup"] < 1:
            problems.append(f"GEMM {g['shape']}: chose {g['chosen']} ({g['speedup']}x)")
    for s in steps:
        t = report["steps"].get(s)
        if not t or not (t["default_ms"] > 0 and t["tuned_ms"] > 0):
            problems.append(f"step {s}: not timed ({t})")
    if problems:
        print("\n".join(problems))
        sys.exit(1)
    print(f"ok: {len(report['kernels'])} kernels, "
          f"{sum(len(k['variants']) for k in report['kernels'])} variants, "
          f"{sum(k['measured'] for k in report['kernels'])} measured, "
          f"{len(report['gemms'])} GEMM shapes, "
          f"{len(report['steps'])} steps")


if __name__ == "__main__":
    main()
