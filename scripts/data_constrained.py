#!/usr/bin/env python3
"""The data-constrained regime: a fixed unique training budget repeated for
epochs, and the best held-out loss each model reaches on it.

    data_constrained.py --spec SPEC.json --out DIR [--budgets 64,256] [--seeds 3]
                        [--seed S] [--models plain,fbt,paper] [--max-epochs 32]
                        [--patience 1] [--windows 512] [--test-windows all]
                        [--set SECTION.KEY=VALUE ...] [--build BUILD_DIR]
    data_constrained.py --report DIR [--check]

The argument it tests (the paper's): when unique data runs out, a model that
spends more compute per token may still improve where a plain one has
stopped. For each budget (KiB of the code recipe's training part: whole
files in the order of the SHA-256 of their paths, the last one cut to fit,
the same files for every model and seed) and each model:
  plain  the spec with fusion "none";
  fbt    the spec as written (fbt's recipe);
  paper  the spec under the paper's preset (experiment.py --fbt-recipe paper),
each trained for E = 1, 2, 4, ... epochs of the budget (--max-epochs at
most), every E its own run with its own full schedule, and scored on the
validation part at its end. A rung ladder, not one long run checkpointed
per epoch: the learning rate's cosine and the pass schedule are keyed to a
run's length (the paper's preset trains single-pass for its first 75%), so
a checkpoint in the middle of a longer run is another recipe than a run of
that length. The ladder stops for a model when --patience rungs in a row
do not improve its best validation loss (an FBT's: the lowest of its
regimes standard, soft, fused:2 and fused:3). The best rung's checkpoint is
then scored once on the test part: in its best validation regime, beside
its standard one.

Every rung keeps its raw result as it lands (result.json in its folder) and
a rerun takes it as it is; DIR/constrained.json holds them all, and
constrained.md and constrained.png are built from it alone (--report; with
--check, compared with the files there).
"""

import argparse
import hashlib
import json
import math
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import code_corpus  # noqa: E402
import experiment  # noqa: E402
import experiment_report  # noqa: E402

MODELS = ("plain", "fbt", "paper")
FBT_REGIMES = ["standard", "soft", "fused:2", "fused:3"]
RAW = "constrained.json"


def budget_data(recipe_dir, kib, out):
    """A data file of `kib` KiB of training tokens (BOS and bytes; whole files
    in SHA-256 order of their paths, the last cut at a character boundary to
    fit) and the recipe's validation and test parts after it; returns
    {data, val_fraction, test_fraction, train_tokens, train_files}."""
    def read(name):
        with open(os.path.join(recipe_dir, name + ".jsonl")) as f:
            return [json.loads(line) for line in f if line.strip()]
    train = sorted(read("train"), key=lambda r: hashlib.sha256(r["path"].encode()).hexdigest())
    want, taken, texts = kib * 1024, 0, []
    for r in train:
        room = want - taken - 1  # the document's BOS
        if room <= 0:
            break
        text = r["text"]
        if len(text.encode()) > room:
            text = text.encode()[:room].decode("utf-8", "ignore")
        texts.append(text)
        taken += 1 + len(text.encode())
    held = {name: [r["text"] for r in read(name)] for name in ("validation", "test")}
    path = os.path.join(out, "budget-%dk.jsonl" % kib)
    with open(path + ".tmp", "w") as f:
        for text in texts + held["validation"] + held["test"]:
            f.write(json.dumps({"text": text}) + "\n")
    os.replace(path + ".tmp", path)
    tokens = {name: sum(1 + len(t.encode()) for t in ts) for name, ts in held.items()}
    val, test = code_corpus.exact_fractions(taken + tokens["validation"] + tokens["test"],
                                            tokens["validation"], tokens["test"])
    return {"data": path, "val_fraction": val, "test_fraction": test, "train_tokens": taken,
            "train_files": len(texts)}


def write_specs(spec_path, changes, out):
    """{model: spec path} for plain, fbt and paper (the FBT's keys dropped so
    the preset holds), every one with `changes`."""
    with open(spec_path) as f:
        base = json.load(f)
    experiment.apply_changes(base, changes, "--set")
    paths = {}
    for model in MODELS:
        spec = json.loads(json.dumps(base))
        spec["name"] = "%s-%s" % (base["name"], model)
        if model == "plain":
            spec["feedback"]["fusion"] = "none"
        elif model == "paper":
            experiment.use_recipe(spec, "paper")
        paths[model] = os.path.join(out, model + ".json")
        with open(paths[model], "w") as f:
            json.dump(spec, f, indent=2)
    return paths


def training_flops(describe, steps):
    """FLOPs per token over a run of `steps` steps, weighted by its schedule."""
    weights = experiment.schedule_weights(describe, steps)
    return sum(w * experiment.flops_per_token(describe, k) for k, w in weights.items())


def best_regime(losses, model):
    """(regime, loss): the lowest validation loss among the model's regimes."""
    regimes = ["standard"] if model == "plain" else FBT_REGIMES
    return min(((r, losses["regimes"][r]["loss"]) for r in regimes), key=lambda x: x[1])


def run_rung(fbt, bundle, spec, rundir, steps, seed, feed, measure, windows, regimes):
    """The rung's raw result: trained and scored on validation, or kept."""
    finished = experiment.finished_run(rundir, steps, seed, spec)
    kept = finished and experiment.measured_result(rundir, measure)
    if kept:
        return kept, False
    t0 = time.time()
    if finished:
        t0 -= finished["elapsed_s"]
    else:
        experiment.train(fbt, bundle, steps, seed, rundir, ["--eval-every", str(steps)] + feed)
        with open(os.path.join(rundir, experiment.TRAINED_SPEC), "w") as f:
            json.dump(experiment.trained_spec(spec), f, indent=1)
    seconds = time.time() - t0
    ckpt = os.path.join(rundir, "latest.safetensors")
    val = experiment.held_out_losses(fbt, bundle, ckpt, "validation", windows, feed, regimes)
    r = {"steps": steps, "seed": seed, "seconds": seconds, "validation": val}
    experiment.keep_result(rundir, measure, r)
    return r, True


def parse_args():
    """The command line (the usage above)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec")
    ap.add_argument("--out", required=True)
    ap.add_argument("--budgets", default="64,256", help="KiB of training data (64,256)")
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--seed", type=int, help="the base seed (default the spec's)")
    ap.add_argument("--models", default=",".join(MODELS), help="of plain, fbt, paper")
    ap.add_argument("--max-epochs", type=int, default=32)
    ap.add_argument("--patience", type=int, default=1,
                    help="rungs in a row without a better validation loss before a "
                    "model's ladder stops (1)")
    ap.add_argument("--windows", default="512", help="validation windows per rung (512)")
    ap.add_argument("--test-windows", default="all", help="test windows, once per model (all)")
    ap.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE")
    ap.add_argument("--build", default=os.environ.get("FBT_BUILD_DIR", "build"))
    ap.add_argument("--report", action="store_true", help="rebuild the report from DIR alone")
    ap.add_argument("--check", action="store_true", help="--report: compare, write nothing")
    return ap.parse_args()


def check_options(args):
    """(models, budgets in KiB) of the command line; exits on a bad one before
    anything is built."""
    if not args.spec:
        sys.exit("data_constrained: --spec is required (or --report DIR)")
    models = [m for m in args.models.split(",") if m]
    if not models or any(m not in MODELS for m in models):
        sys.exit("data_constrained: --models takes %s" % ", ".join(MODELS))
    budgets = sorted({int(x) for x in args.budgets.split(",") if x})
    if not budgets or budgets[0] < 1:
        sys.exit("data_constrained: --budgets takes KiB, e.g. 64,256")
    if args.max_epochs < 1 or args.patience < 1 or args.seeds < 1:
        sys.exit("data_constrained: --max-epochs, --patience and --seeds must be >= 1")
    return models, budgets


def raw_record(args, models, seeds, specs, recipe, tokens_per_step):
    """constrained.json before any run: the command, the commit, the specs
    and how the ladders run; its budgets are filled in as they are run."""
    raw = {"command": ["scripts/data_constrained.py"] + experiment.recorded_command(sys.argv[1:])[1:],
           "commit": experiment.git_commit(), "specs": {}, "models": models, "seeds": seeds,
           "max_epochs": args.max_epochs, "patience": args.patience,
           "windows": args.windows, "test_windows": args.test_windows,
           "tokens_per_step": tokens_per_step, "regimes": FBT_REGIMES,
           "data": {"package": recipe["package"], "version": recipe["version"]},
           "budgets": {}}
    for m in models:
        with open(specs[m]) as f:
            raw["specs"][m] = json.load(f)
    return raw


def budget_record(out, kib, tokens_per_step):
    """(fbt's data flags, the budget's record in constrained.json) of the
    budget's data file, written; its runs are filled in as they are run."""
    data = budget_data(os.path.join(out, "data", "code-bytes"), kib, os.path.join(out, "data"))
    feed = ["--data", data["data"], "--val-fraction", repr(data["val_fraction"]),
            "--test-fraction", repr(data["test_fraction"])]
    b = {k: v for k, v in data.items() if k != "data"}
    b.update(steps_per_epoch=math.ceil(data["train_tokens"] / tokens_per_step), runs={})
    return feed, b


def rung_dir(out, kib, seed, model, epochs):
    """The run folder of a rung: OUT/KIBk/seed-S/MODEL/epochs-E."""
    return os.path.join(out, "%dk" % kib, "seed-%d" % seed, model, "epochs-%d" % epochs)


def run_ladder(args, fbt, bundle, spec, describe, kib, seed, model, feed, per_epoch):
    """{ladder, best, test}: the model's rungs of E = 1, 2, 4, ... epochs until
    --patience rungs in a row bring no better validation loss, the best one's
    index, and that rung's test scores."""
    names = FBT_REGIMES if model != "plain" else ["standard"]
    # As the kept results record how they were measured (fbt eval's flags).
    regimes = ["--regimes", ",".join(names)]
    measure = {"windows": args.windows, "regimes": regimes, "split": "validation"}
    ladder, best, since = [], None, 0
    for epochs in [e for e in (2 ** i for i in range(31)) if e <= args.max_epochs]:
        steps = epochs * per_epoch
        r, fresh = run_rung(fbt, bundle, spec, rung_dir(args.out, kib, seed, model, epochs),
                            steps, seed, feed, measure, args.windows, names)
        regime, loss = best_regime(r["validation"], model)
        ladder.append(dict(r, epochs=epochs, best_regime=regime, best_loss=loss,
                           flops_per_token=training_flops(describe, steps)))
        print("data_constrained: %dk seed %d %s, %d epochs: validation %.4f (%s)%s"
              % (kib, seed, model, epochs, loss, regime, "" if fresh else ", kept"),
              flush=True)
        if best is None or loss < best[1]:
            best, since = (len(ladder) - 1, loss), 0
        else:
            since += 1
            if since >= args.patience:
                break
    test_measure = {"windows": args.test_windows, "regimes": regimes, "split": "test"}
    testdir = rung_dir(args.out, kib, seed, model, ladder[best[0]]["epochs"])
    test = test_result(fbt, bundle, testdir, feed, test_measure, args.test_windows, names)
    return {"ladder": ladder, "best": best[0], "test": test}


def main():
    """Runs every model's ladder on every budget under every seed, and writes
    constrained.json and the report; or with --report rebuilds the report."""
    args = parse_args()
    if args.report:
        sys.exit(report(args.out, args.check))
    models, budgets = check_options(args)
    fbt = os.path.join(args.build, "tools", "fbt", "fbt")
    fbtc = os.path.join(args.build, "tools", "fbtc", "fbtc")
    os.makedirs(args.out, exist_ok=True)
    recipe = code_corpus.build(os.path.join(args.out, "data", "code-bytes"), "bytes", fbt=fbt)
    specs = write_specs(args.spec, args.set, args.out)
    describe = {m: experiment.describe_spec(fbtc, specs[m]) for m in models}
    bundles = {}
    for m in models:
        bundles[m] = os.path.join(args.out, m + ".fbtb")
        experiment.compile_spec(fbtc, specs[m], bundles[m])
    with open(args.spec) as f:
        base_seed = args.seed if args.seed is not None else \
            json.load(f).get("training", {}).get("seed", 1234)
    seeds = [base_seed + i for i in range(args.seeds)]
    tokens_per_step = describe[models[0]]["training"]["tokens_per_step"]
    raw = raw_record(args, models, seeds, specs, recipe, tokens_per_step)
    total = len(budgets) * len(seeds) * len(models)
    done, t_start = 0, time.time()
    for kib in budgets:
        feed, b = budget_record(args.out, kib, tokens_per_step)
        raw["budgets"][str(kib)] = b
        for seed in seeds:
            b["runs"][str(seed)] = {}
            for m in models:
                b["runs"][str(seed)][m] = run_ladder(args, fbt, bundles[m], specs[m], describe[m],
                                                     kib, seed, m, feed, b["steps_per_epoch"])
                done += 1
                elapsed = time.time() - t_start
                print("data_constrained: %d of %d ladders done (%.0f min so far)"
                      % (done, total, elapsed / 60), flush=True)
    with open(os.path.join(args.out, RAW + ".tmp"), "w") as f:
        json.dump(raw, f, indent=1)
    os.replace(os.path.join(args.out, RAW + ".tmp"), os.path.join(args.out, RAW))
    report(args.out, False)
    print("report: " + os.path.join(args.out, "constrained.md"))


TEST_RESULT = "test.json"  # in the best rung's folder: its test scores


def test_result(fbt, bundle, rundir, feed, measure, windows, regimes):
    path = os.path.join(rundir, TEST_RESULT)
    try:
        with open(path) as f:
            kept = json.load(f)
        if kept.get("measure") == measure:
            return kept["result"]
    except (OSError, ValueError):
        pass
    ckpt = os.path.join(rundir, "latest.safetensors")
    r = experiment.held_out_losses(fbt, bundle, ckpt, "test", windows, feed, regimes)
    with open(path + ".tmp", "w") as f:
        json.dump({"measure": measure, "result": r}, f, indent=1)
    os.replace(path + ".tmp", path)
    return r


# --- the report, from constrained.json alone ---------------------------------


def summary(raw):
    """{kib: {model: {...}}}: per model and budget, over the seeds, the best
    validation rung's epochs and training FLOPs, and its test loss (in its
    best validation regime, and standard) with the over-documents se."""
    out = {}
    for kib, b in sorted(raw["budgets"].items(), key=lambda kv: int(kv[0])):
        out[kib] = {}
        for m in raw["models"]:
            rows = [b["runs"][str(s)][m] for s in raw["seeds"]]
            tops = [r["ladder"][r["best"]] for r in rows]
            test = [r["test"]["regimes"][t["best_regime"]] for r, t in zip(rows, tops)]
            std = [r["test"]["regimes"]["standard"]["loss"] for r in rows]
            flops = [t["flops_per_token"] * raw["tokens_per_step"] * t["steps"] for t in tops]
            out[kib][m] = {
                "epochs": [t["epochs"] for t in tops],
                "regimes": [t["best_regime"] for t in tops],
                "validation": experiment_report.stats([t["best_loss"] for t in tops]),
                "test": experiment_report.stats([x["loss"] for x in test]),
                "test_se_documents": sum(x["se_documents"] for x in test) / len(test),
                "standard": experiment_report.stats(std),
                "flops": experiment_report.stats(flops),
                "ladder_capped": [len(r["ladder"]) - 1 == r["best"] and
                                  r["ladder"][-1]["epochs"] * 2 > raw["max_epochs"] for r in rows],
                "test_minus_plain": None}
        if "plain" in out[kib]:
            for m in raw["models"]:
                if m == "plain":
                    continue
                diffs = []
                for s in raw["seeds"]:
                    def best_test(model):
                        r = b["runs"][str(s)][model]
                        t = r["ladder"][r["best"]]
                        return r["test"]["regimes"][t["best_regime"]]["loss"]
                    diffs.append(best_test(m) - best_test("plain"))
                out[kib][m]["test_minus_plain"] = experiment_report.stats(diffs)
    return out


def tables(raw):
    s = summary(raw)
    lines = ["| budget | model | best epochs (per seed) | best regime | validation | "
             "test (best regime) | over documents se | test standard | minus plain | "
             "training FLOPs to the best |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for kib, models in s.items():
        b = raw["budgets"][kib]
        for m, r in models.items():
            capped = " (cap)" if any(r["ladder_capped"]) else ""
            lines.append("| %s KiB (%.2fM tokens) | %s | %s%s | %s | %s | %s | %.4f | %s | %s | "
                         "%.3g |" % (
                             kib, b["train_tokens"] / 1e6, m,
                             ", ".join(str(e) for e in r["epochs"]), capped,
                             ", ".join(sorted(set(r["regimes"]))),
                             experiment_report.ci(r["validation"]),
                             experiment_report.ci(r["test"]), r["test_se_documents"],
                             experiment_report.ci(r["standard"]),
                             experiment_report.ci(r["test_minus_plain"], "%+.4f")
                             if r["test_minus_plain"] else "",
                             r["flops"]["mean"]))
    curve = ["| budget | seed | model | " + " | ".join(
        "%d epochs" % e for e in (2 ** i for i in range(31)) if e <= raw["max_epochs"]) + " |"]
    curve.append("|---|---|---|" + "---|" * (curve[0].count("|") - 4))
    for kib, b in sorted(raw["budgets"].items(), key=lambda kv: int(kv[0])):
        for s in raw["seeds"]:
            for m in raw["models"]:
                r = b["runs"][str(s)][m]
                cells = ["%.4f%s" % (x["best_loss"], " *" if i == r["best"] else "")
                         for i, x in enumerate(r["ladder"])]
                n = curve[0].count("|") - 4
                curve.append("| %s KiB | %d | %s | %s |" % (
                    kib, s, m, " | ".join(cells + [""] * (n - len(cells)))))
    return "\n".join(lines) + "\n", "\n".join(curve) + "\n"


def markdown(raw):
    best, curve = tables(raw)
    return "\n".join([
        "# The data-constrained regime",
        "",
        "Built by `scripts/data_constrained.py --report` from `%s` alone; the command: `%s`."
        % (RAW, " ".join(raw["command"])),
        "",
        "Each budget is the training part's first KiB in SHA-256 order of the files, repeated "
        "for E = 1, 2, 4, ... epochs (at most %d), each E its own run with its own full "
        "schedule; a model's ladder stops after %d rung(s) without a better validation loss "
        "(%s windows of validation; an FBT's loss is its best regime of %s). Its best rung is "
        "scored once on test (%s windows) in that regime. Means over seeds %s with 95%% "
        "t-intervals and the range; \"over documents se\" is the test loss's standard error "
        "over documents (the mean over seeds); \"minus plain\" is paired by seed; (cap): a "
        "ladder whose last rung was its best, so more epochs might still help."
        % (raw["max_epochs"], raw["patience"], raw["windows"], ", ".join(raw["regimes"]),
           raw["test_windows"], ", ".join(str(s) for s in raw["seeds"])),
        "",
        "## Best losses",
        "",
        best,
        "## Validation loss per rung (the best regime; * the best rung)",
        "",
        curve])


def plot(raw, path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    budgets = sorted(raw["budgets"], key=int)
    fig, axes = plt.subplots(1, len(budgets), figsize=(6 * len(budgets), 4.2), squeeze=False)
    colors = {"plain": "black", "fbt": "tab:blue", "paper": "tab:orange"}
    for ax, kib in zip(axes[0], budgets):
        b = raw["budgets"][kib]
        for m in raw["models"]:
            for i, s in enumerate(raw["seeds"]):
                ladder = b["runs"][str(s)][m]["ladder"]
                xs = [x["flops_per_token"] * raw["tokens_per_step"] * x["steps"] for x in ladder]
                ax.plot(xs, [x["best_loss"] for x in ladder], marker="o", color=colors[m],
                        alpha=0.8, label=m if i == 0 else None)
        ax.set_xscale("log")
        ax.set_xlabel("training FLOPs")
        ax.set_ylabel("validation loss (nats/byte), best regime")
        ax.set_title("%s KiB of unique training data" % kib)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def report(folder, check):
    with open(os.path.join(folder, RAW)) as f:
        raw = json.load(f)
    text = markdown(raw)
    path = os.path.join(folder, "constrained.md")
    if check:
        with open(path) as f:
            if f.read() != text:
                print("data_constrained: %s differs from what %s gives" % (path, RAW))
                return 1
        print("data_constrained: %s matches %s" % (path, RAW))
        return 0
    with open(path, "w") as f:
        f.write(text)
    plot(raw, os.path.join(folder, "constrained.png"))
    return 0


if __name__ == "__main__":
    main()
