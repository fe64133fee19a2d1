#!/usr/bin/env python3
"""The feedback recipe by measurement: one experiment (scripts/experiment.py)
with its plain baselines, then each variant's FBT alone against the same
baselines (--fbt-set, --baselines), and a table of tokens-equivalence per
regime and the held-out losses.

    recipe_search.py --spec SPEC.json [--steps N] [--out DIR]
                     [--variant NAME=SECTION.KEY=VALUE[;SECTION.KEY=VALUE..] ...]
                     [-- EXPERIMENT_ARGS...]

Without --variant it searches the schedule's and the loss's knobs one at a
time: the K=1 fraction (single_pass_fraction), the passes gradients flow
through (grad_passes), the auxiliary loss weight (aux_loss_weight, lambda),
a shallow pass distribution (K in 2..3) and prefix mix-in. Arguments after
`--` go to every experiment (e.g. --recipe code, --seeds 3). Every figure
is on the validation part: a search chooses there (--choose-by, the lowest
mean validation loss of a regime, default fused:2) and each variant's
report.md shows validation. Each run is measured on the test part too, but
only the chosen variant's report is built on it, once, into DIR/chosen/
(asking for --split test here is refused). Writes DIR/search.md and DIR/search.jsonl;
each variant's full report (validation) is DIR/<name>/report.md. search.md gives the
per-FLOP choice beside the per-token one; `--table DIR [--check]` rebuilds it from the
runs' raw results alone.
"""

import argparse
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import experiment_report  # noqa: E402

DEFAULT_VARIANTS = [
    "k1-0.1=training.single_pass_fraction=0.1",
    "k1-0.5=training.single_pass_fraction=0.5",
    "grad-1=training.grad_passes=1",
    "grad-4=training.grad_passes=4",
    "aux-0.3=feedback.aux_loss_weight=0.3",
    "aux-3=feedback.aux_loss_weight=3.0",
    'shallow=training.pass_distribution={"2": 1, "3": 1}',
    "mixin=feedback.prefix_mixin=true",
]


def parse_variant(text):
    """NAME=CHANGE[;CHANGE..] -> (name, [CHANGE..]), CHANGE = SECTION.KEY=VALUE."""
    name, eq, changes = text.partition("=")
    parts = [c for c in changes.split(";") if c]
    if not eq or not name or not parts or any("=" not in c for c in parts):
        sys.exit("recipe_search: --variant %r: expected NAME=SECTION.KEY=VALUE[;...]" % text)
    return name, parts


def measure(out):
    """The run's {regime: mean validation loss over seeds}, {regime: (mean
    plain-tokens multiplier or None, its label)} and {regime: mean plain
    training FLOPs to match / the FBT's, or None}."""
    raw = experiment_report.loaded(out)
    losses = {}
    for reg in experiment_report.REGIMES:
        vals = [raw["runs"][str(s)]["fbt"]["losses"]["validation"]["regimes"].get(reg)
                for s in raw["seeds"]]
        if all(vals):
            losses[reg] = sum(v["loss"] for v in vals) / len(vals)
    first = raw["runs"][str(raw["seeds"][0])]
    ratio = first["same-tokens"]["flops_per_token"] / first["fbt"]["flops_per_token"]
    multipliers, flops = {}, {}
    for reg, (ms, labels) in experiment_report.equivalence(raw, "validation").items():
        mean = sum(ms) / len(ms) if all(m is not None for m in ms) else None
        multipliers[reg] = (mean, "%.2fx" % mean if mean is not None else ", ".join(labels))
        flops[reg] = mean * ratio if mean is not None else None
    return losses, multipliers, flops


def variant_changes(out):
    """The --fbt-set changes a variant's run was made with (its command)."""
    cmd = experiment_report.loaded(out)["command"]
    return [cmd[i + 1] for i, a in enumerate(cmd[:-1]) if a == "--fbt-set"]


def search_table(rows, choose_by):
    """search.md's lines and the row chosen: per regime the validation loss
    with the plain tokens and training FLOPs that match it; the choice by the
    lowest `choose_by` loss (per token), and beside it the one a user paying
    for training compute would make (the most plain FLOPs matched per FBT
    FLOP)."""
    regimes = [k for k in rows[0]["losses"] if k in ("standard", "soft", "fused:2", "fused:3")]
    md = ["| variant | change | " + " | ".join(
        "%s validation loss (plain tokens; plain FLOPs / FBT FLOPs to match)" % r
        for r in regimes) + " |", "|---|---|" + "---|" * len(regimes)]
    for row in rows:
        cells = ["%.4f (%s; %s)" % (row["losses"][r], row["multipliers"][r][1],
                                    "%.3fx" % row["flops"][r] if row["flops"][r] else "-")
                 for r in regimes]
        md.append("| %s | %s | %s |" % (row["variant"], ", ".join(row["changes"]) or "(the spec)",
                                        " | ".join(cells)))
    chosen = min(rows, key=lambda row: row["losses"].get(choose_by, math.inf))
    per_flop = max(rows, key=lambda row: row["flops"].get(choose_by) or 0.0)
    md += ["", "Chosen on validation (lowest mean %s loss, per token): **%s**; its report on "
           "the test part: chosen/report.md. Per training FLOP (the most plain FLOPs matched "
           "per FBT FLOP at %s) the choice is **%s**." % (
               choose_by, chosen["variant"], choose_by, per_flop["variant"])]
    return md, chosen


def row_of(name, changes, out):
    losses, multipliers, flops = measure(out)
    return {"variant": name, "changes": changes, "losses": losses,
            "multipliers": multipliers, "flops": flops}


def rebuild(folder, choose_by, check):
    """search.md again from the runs' raw results under `folder` (default
    first, then every other variant folder but chosen/): printed, or with
    `check` compared with the committed one (exit 1 if it differs)."""
    names = sorted(n for n in os.listdir(folder) if n not in ("default", "chosen") and
                   os.path.isfile(os.path.join(folder, n, "results.json")))
    rows = [row_of(n, variant_changes(os.path.join(folder, n)) if n != "default" else [],
                   os.path.join(folder, n)) for n in ["default"] + names]
    text = "\n".join(search_table(rows, choose_by)[0]) + "\n"
    if not check:
        print(text, end="")
        return 0
    with open(os.path.join(folder, "search.md")) as f:
        same = f.read() == text
    print("%s: search.md %s" % (folder, "is what its runs build" if same else
                                "differs from what its runs build"))
    return 0 if same else 1


def main():
    argv = sys.argv[1:]
    extra = []
    if "--" in argv:
        at = argv.index("--")
        argv, extra = argv[:at], argv[at + 1:]
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", help="the spec searched (required but with --table)")
    ap.add_argument("--steps", type=int)
    ap.add_argument("--out", default=os.path.join("runs", "recipe-search"))
    ap.add_argument("--variant", action="append", default=[],
                    help="NAME=SECTION.KEY=VALUE[;SECTION.KEY=VALUE..] (default: the knobs above)")
    ap.add_argument("--choose-by", default="fused:2",
                    help="the regime whose mean validation loss chooses (default fused:2)")
    ap.add_argument("--split", default="validation",
                    help="the part searched on: validation (the only one a search may use)")
    ap.add_argument("--table", metavar="DIR",
                    help="rebuild DIR/search.md from DIR's runs (no training); with --check, "
                         "compare it with the file")
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    if args.table:
        return rebuild(args.table, args.choose_by, args.check)
    if not args.spec:
        ap.error("--spec is required")
    if args.split != "validation" or any(a.startswith("--split") for a in extra):
        sys.exit("recipe_search: a search chooses on the validation part and never reports "
                 "on test; report the chosen recipe once with scripts/experiment.py")
    variants = [parse_variant(v) for v in (args.variant or DEFAULT_VARIANTS)]
    common = [sys.executable, os.path.join(HERE, "experiment.py"), "--spec", args.spec] + \
        (["--steps", str(args.steps)] if args.steps else []) + extra + ["--splits", "validation,test", "--report-split", "validation"]

    base = os.path.join(args.out, "default")
    runs = [("default", [], base)]
    runs += [(name, changes, os.path.join(args.out, name)) for name, changes in variants]
    rows = []
    for name, changes, out in runs:
        cmd = common + ["--out", out]
        for c in changes:
            cmd += ["--fbt-set", c]
        if out != base:
            cmd += ["--baselines", base]
        print("recipe_search: %s" % name, file=sys.stderr, flush=True)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
        rows.append(row_of(name, changes, out))

    md, chosen = search_table(rows, args.choose_by)
    experiment_report.write(os.path.join(args.out, chosen["variant"]),
                            os.path.join(args.out, "chosen"), split="test")
    text = "\n".join(md) + "\n"
    with open(os.path.join(args.out, "search.md"), "w") as f:
        f.write(text)
    with open(os.path.join(args.out, "search.jsonl"), "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    print(text)


if __name__ == "__main__":
    sys.exit(main())
