#!/usr/bin/env python3
"""Ablates the paper's recipe one key at a time: which of its elements, or of
fbt's departures from them, the paper's form needs to train.

    recipe_ablation.py --spec SPEC.json --out DIR [--steps N] [--seed S]
                       [--sequence-length T] [--windows N|all] [--build DIR]
    recipe_ablation.py --out DIR --check [--prose TEXT.md]
                       (rebuild ablation.md, compare; find TEXT's figures in it)

Each variant is the spec under the paper's preset ("recipe": "paper") with
one key set to fbt's value, beside the preset itself, fbt's recipe and a
plain transformer, all on the code recipe's training part for the same
steps and seed, measured in inference mode on the validation part (never the
test part: this chooses, it does not report) with `fbt eval --json`.

Resumable: a variant whose eval JSON is in DIR is not trained or measured
again, and ablation.json (the raw results: each variant's spec changes, its
eval JSON, metrics summary and training FLOPs per token; the command and the
commit) is rewritten as each lands. ablation.md is built from ablation.json
alone; --check fails when the committed table is not what it builds.
"""

import argparse
import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import code_corpus  # noqa: E402
import experiment  # noqa: E402

# (name, what it changes from the paper's preset, the spec changes).
VARIANTS = [
    ("paper", "the paper's preset", {}),
    ("+token_residual", "the token added to the fused input (fbt's)",
     {"feedback.token_residual": True}),
    ("+gate_norm", "the gate reads norm(e) (fbt's)", {"feedback.gate_norm": True}),
    ("+post_norm", "the state after the final norm (fbt's)", {"feedback.state": "post_norm"}),
    ("-prefix_mixin", "no prefix mix-in (fbt's)", {"feedback.prefix_mixin": False}),
    ("grad_passes=2", "gradients through the last 2 passes only (fbt's)",
     {"training.grad_passes": 2}),
    ("single=0.25", "25% single-pass steps (fbt's)", {"training.single_pass_fraction": 0.25}),
    ("K=2..8", "K uniform over 2..8 in the multi-pass phase (fbt's)",
     {"training.pass_distribution": {str(k): 1 for k in range(2, 9)}}),
    ("init=uniform", "feedback weights U(+-sqrt(3/D)) (the public code's)",
     {"feedback.init": "uniform"}),
    ("fbt", "fbt's recipe (every key above)", None),
    ("plain", "no feedback path", "plain"),
]
RAW = "ablation.json"  # not results.json: that name is experiment_report.py's format
REGIMES = ["standard", "soft", "fused:2", "fused:3"]


def variant_spec(base, recipe, changes):
    spec = json.loads(json.dumps(base))
    if changes == "plain":
        spec["feedback"] = dict(spec.get("feedback", {}), fusion="none")
        return spec
    if changes is None:  # fbt's recipe: the spec as written
        spec["recipe"] = "fbt"
        return spec
    experiment.use_recipe(spec, recipe)
    experiment.apply_changes(spec, ["%s=%s" % (k, json.dumps(v)) for k, v in changes.items()],
                             "variant")
    return spec


def table(raw):
    """ablation.md from ablation.json alone."""
    lines = ["# The paper's recipe, one key at a time", "",
             "tiny on the code recipe's training part, %d steps of %d x %d tokens, seed %d; "
             "validation part, %s windows, a quarter of each a plain prompt. Loss in nats "
             "per byte (standard error over windows); pass k: the state fed back from "
             "t = 1 through k passes. FLOPs: training FLOPs per token over the schedule, "
             "relative to one pass." % (raw["steps"], raw["batch"], raw["sequence_length"],
                                        raw["seed"], raw["windows"]),
             "", "| variant | changes | FLOPs | standard | soft | fused:2 | fused:3 | "
             "soft - standard | pass 2 | pass 3 |", "| --- | --- | --- | --- | --- | --- | --- "
             "| --- | --- | --- |"]
    for name, what, _ in VARIANTS:
        r = raw["variants"].get(name)
        if not r:
            lines.append("| %s | %s | not run yet | | | | | | | |" % (name, what))
            continue
        ev = r["eval"]
        regimes = ev.get("regimes", {})
        cells = ["%.3f (%.3f)" % (regimes[g]["loss"], regimes[g]["se"]) if g in regimes else "-"
                 for g in REGIMES]
        soft = regimes.get("soft", {}).get("minus_standard")
        diff = "%+.3f (%.3f)" % (soft["mean"], soft["se"]) if soft else "-"
        passes = ev.get("passes") or []
        pass_cells = ["%.3f" % passes[k - 1] if len(passes) >= k else "-" for k in (2, 3)]
        lines.append("| %s | %s | %.3fx | %s | %s | %s |" % (
            name, what, r["flops_ratio"], " | ".join(cells), diff, " | ".join(pass_cells)))
    return "\n".join(lines) + "\n"


def write(out, raw):
    path = os.path.join(out, RAW)
    with open(path + ".tmp", "w") as f:
        json.dump(raw, f, indent=1)
    os.replace(path + ".tmp", path)
    with open(os.path.join(out, "ablation.md"), "w") as f:
        f.write(table(raw))


FIGURE = re.compile(r"[0-9]+\.[0-9]{3}x?")


def check(out, prose=None):
    """ablation.md must be what ablation.json builds, and every figure of
    `prose` (three decimals, a FLOPs ratio's x included) must be in it."""
    with open(os.path.join(out, RAW)) as f:
        built = table(json.load(f))
    with open(os.path.join(out, "ablation.md")) as f:
        if f.read() != built:
            sys.exit("recipe_ablation: ablation.md differs from what ablation.json builds")
    print("ablation.md is what ablation.json builds")
    if prose:
        with open(prose) as f:
            quoted = FIGURE.findall(f.read())
        missing = [x for x in quoted if x not in built]
        if missing:
            sys.exit("recipe_ablation: %s quotes figures the table does not hold: %s"
                     % (prose, ", ".join(missing)))
        print("%s: %d figures, each in the table" % (os.path.basename(prose), len(quoted)))


def run_variants(args, base, data, fbt, fbtc, raw):
    feed = ["--data", data["data"], "--val-fraction", repr(data["val_fraction"]),
            "--test-fraction", repr(data["test_fraction"])]
    for i, (name, what, changes) in enumerate(VARIANTS):
        if name in raw["variants"]:
            print("recipe_ablation: %s measured already" % name)
            continue
        t0 = time.time()
        spec = variant_spec(base, "paper", changes)
        folder = os.path.join(args.out, "runs", name)
        os.makedirs(folder, exist_ok=True)
        spec_path = os.path.join(folder, "spec.json")
        with open(spec_path, "w") as f:
            json.dump(spec, f, indent=1)
        describe = json.loads(experiment.run([fbtc, spec_path, "--describe", "--json"], True))
        bundle = os.path.join(folder, "model.fbtb")
        experiment.run([fbtc, spec_path, "--target=cpu", "-o", bundle])
        experiment.run([fbt, "train", bundle, "--steps", str(args.steps), "--seed",
                        str(args.seed), "--out", folder, "--quiet"] + feed)
        ev = json.loads(experiment.run(
            [fbt, "eval", bundle, "--ckpt", os.path.join(folder, "latest.safetensors"),
             "--json", "--split", "validation", "--windows", args.windows] + feed, True))
        raw["variants"][name] = {
            "changes": changes, "eval": ev,
            "flops_ratio": describe["training"]["schedule_flops_ratio"],
            "flops_per_token": describe["training"]["schedule_flops_per_token"],
            "metrics": experiment.metrics_summary(os.path.join(folder, "metrics.jsonl")),
            "seconds": time.time() - t0}
        write(args.out, raw)
        print("recipe_ablation: %d of %d variants done (%s, %.0f s)"
              % (len(raw["variants"]), len(VARIANTS), name, time.time() - t0), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", default="specs/tiny.json")
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=604,
                    help="training steps (default 604: tiny's 10 tokens per parameter at "
                         "8 x 256 tokens a step)")
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--sequence-length", type=int, default=256)
    ap.add_argument("--windows", default="512")
    ap.add_argument("--build", default=os.environ.get("FBT_BUILD_DIR", "build"))
    ap.add_argument("--check", action="store_true", help="rebuild ablation.md and compare")
    ap.add_argument("--prose", help="--check: a text whose every figure must be in the table")
    args = ap.parse_args()
    if args.check:
        return check(args.out, args.prose)
    fbt = os.path.join(args.build, "tools", "fbt", "fbt")
    fbtc = os.path.join(args.build, "tools", "fbtc", "fbtc")
    with open(args.spec) as f:
        base = json.load(f)
    base["training"]["sequence_length"] = args.sequence_length
    base.setdefault("inference", {})["max_prompt_length"] = args.sequence_length
    os.makedirs(args.out, exist_ok=True)
    data = code_corpus.build(os.path.join(args.out, "data"), "bytes", fbt=fbt)
    path = os.path.join(args.out, RAW)
    command = ["scripts/recipe_ablation.py"] + experiment.recorded_command(sys.argv[1:])[1:]
    raw = {"command": command, "commit": experiment.git_commit(),
           "spec": base, "steps": args.steps, "seed": args.seed,
           "batch": base["training"]["batch_size"], "sequence_length": args.sequence_length,
           "windows": args.windows, "variants": {}}
    if os.path.exists(path):
        with open(path) as f:
            kept = json.load(f)
        if {k: kept[k] for k in ("spec", "steps", "seed", "windows")} != \
                {k: raw[k] for k in ("spec", "steps", "seed", "windows")}:
            sys.exit("recipe_ablation: %s holds another ablation (spec, steps, seed or "
                     "windows differ); give another --out" % path)
        raw = kept
    run_variants(args, base, data, fbt, fbtc, raw)
    write(args.out, raw)
    print("ablation: " + os.path.join(args.out, "ablation.md"))


if __name__ == "__main__":
    main()
