#!/usr/bin/env python3
"""Tokens- and FLOPs-equivalence of both recipes against size and budget,
from the raw results of several experiment.py runs alone.

    paper_recipe_summary.py --out DIR RUN_DIR... [--check]

Each RUN_DIR holds an experiment's results.json (scripts/experiment.py:
one size, one budget, one recipe, its seeds, and the plain curve). Writes
DIR/budgets.md (a row per run and regime: the FBT's loss, its
over-documents standard error, the plain 1x loss, and the multiples of the
FBT's tokens and training FLOPs at which the plain curve matches it, with
95% t-intervals over the seeds) and DIR/budgets.png (the equivalences
against training tokens per parameter). --check compares budgets.md with
what the results give and writes nothing.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import experiment_report as er  # noqa: E402

SHOWN = ["standard", "soft", "fused:2", "fused:3"]


def rows(folder):
    raw = er.loaded(folder)
    split = er.part(raw)
    first = raw["runs"][str(raw["seeds"][0])]
    fbt = first["fbt"]
    params = raw["describe"]["fbt"]["params"]["total"]
    ratio = first["same-tokens"]["flops_per_token"] / fbt["flops_per_token"]
    eq = er.equivalence(raw, split)
    plain1 = er.stats(er.per_seed(
        raw, lambda res: er.losses(res["same-tokens"], split)["regimes"]["standard"]["loss"]))
    out = []
    for reg in SHOWN:
        if reg not in er.losses(fbt, split)["regimes"]:
            continue
        vals = er.per_seed(raw, lambda res: er.losses(res["fbt"], split)["regimes"][reg])
        ms, labels = eq[reg]
        defined = [m for m in ms if m is not None]
        out.append({
            "run": os.path.basename(os.path.normpath(folder)),
            "size": raw["spec"]["name"], "params": params,
            "recipe": raw["spec"].get("recipe", "fbt"),
            "tokens_per_param": fbt["tokens"] / params, "steps": raw["steps"],
            "flops_ratio": 1 / ratio, "regime": reg, "split": split, "seeds": raw["seeds"],
            "loss": er.stats([v["loss"] for v in vals]),
            "se_documents": sum(v["se_documents"] for v in vals) / len(vals),
            "plain": plain1,
            "tokens_eq": er.stats(ms) if len(defined) == len(ms) else None,
            "flops_eq": er.stats([m * ratio for m in ms]) if len(defined) == len(ms) else None,
            "labels": labels})
    return out


def markdown(all_rows, command):
    md = ["# Both recipes against budget",
          "",
          "Built by `scripts/paper_recipe_summary.py` from the runs' results.json alone: `%s`."
          % " ".join(command),
          "",
          "Per run (one size, one budget of training tokens per parameter, one recipe, "
          "%d seeds) and FBT regime: the FBT's loss on its report part (mean [95%% "
          "t-interval] (min to max) over the seeds), its standard error over documents "
          "(mean over the seeds; the interval is over seeds and windows), the plain model's "
          "at the same tokens, and the multiple of the FBT's tokens (its training FLOPs) at "
          "which the plain curve (1, 1.5, 2, 3x the tokens and each recipe's FLOPs) reaches "
          "the FBT's loss, interpolated in log tokens per seed; \"< 1x\" where the FBT is "
          "worse than the plain model at its own tokens." % len(all_rows[0]["seeds"]),
          "",
          "| run | tokens / param | recipe | FBT FLOPs / token | regime | FBT loss | "
          "over documents se | plain 1x loss | tokens-equivalence | FLOPs-equivalence | "
          "per seed |",
          "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in all_rows:
        md.append("| %s | %.1f | %s | %.3fx | %s | %s | %.4f | %s | %s | %s | %s |" % (
            r["run"], r["tokens_per_param"], r["recipe"], r["flops_ratio"], r["regime"],
            er.ci(r["loss"]), r["se_documents"], er.ci(r["plain"]),
            er.ci(r["tokens_eq"], "%.2f") + "x" if r["tokens_eq"] else "< 1x in every seed"
            if all(l.startswith("<") for l in r["labels"]) else "outside the curve",
            er.ci(r["flops_eq"], "%.2f") + "x" if r["flops_eq"] else "-",
            ", ".join(r["labels"])))
    return "\n".join(md) + "\n"


def plot(all_rows, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, key, name in ((axes[0], "tokens_eq", "tokens-equivalence"),
                          (axes[1], "flops_eq", "FLOPs-equivalence")):
        lines = {}
        for r in all_rows:
            if r[key] is None or r["regime"] not in ("standard", "soft"):
                continue
            lines.setdefault((r["size"], r["recipe"], r["regime"]), []).append(
                (r["tokens_per_param"], r[key]["mean"], r[key]["half"] or 0))
        for (size, recipe, regime), pts in sorted(lines.items()):
            pts.sort()
            ax.errorbar([p[0] for p in pts], [p[1] for p in pts], yerr=[p[2] for p in pts],
                        marker="o", capsize=3, label="%s %s %s" % (size, recipe, regime))
        ax.axhline(1, color="black", linestyle=":", linewidth=1)
        ax.set_xscale("log")
        ax.set_xlabel("training tokens per parameter")
        ax.set_ylabel(name + " (plain multiple)")
        ax.set_title(name + " (95% t-intervals over seeds)")
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--out", required=True)
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    all_rows = [r for folder in args.runs for r in rows(folder)]
    command = ["scripts/paper_recipe_summary.py", "--out", os.path.basename(
        os.path.normpath(args.out))] + [os.path.basename(os.path.normpath(f)) for f in args.runs]
    text = markdown(all_rows, command)
    path = os.path.join(args.out, "budgets.md")
    if args.check:
        with open(path) as f:
            if f.read() != text:
                sys.exit("paper_recipe_summary: %s differs from what the results give" % path)
        print("paper_recipe_summary: %s matches the results of %d runs" % (path, len(args.runs)))
        return
    with open(path, "w") as f:
        f.write(text)
    plot(all_rows, os.path.join(args.out, "budgets.png"))
    print("wrote " + path)


if __name__ == "__main__":
    main()
