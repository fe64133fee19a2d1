#!/usr/bin/env python3
"""Trains an FBT and its baselines on the same data, evaluates all of them in
inference mode, and writes report.md with PNG plots.

    experiment.py --spec SPEC.json [--steps N] [--out DIR]
                  [--data FILE | --recipe embedded|code [--tokenizer bytes|sp]]
                  [--depth-task [--depth-k 1..8] [--depth-mix 0.5] [--depth-ops +-]]
                  [--multipliers 1,1.5,2,3] [--set SECTION.KEY=VALUE ...]
                  [--fbt-set SECTION.KEY=VALUE ...] [--baselines DIR]
                  [--problems N] [--build BUILD_DIR] [--quick]

The models, one spec:
  fbt            the spec as written (its feedback recipe and pass schedule)
  same-tokens    fusion "none": a plain transformer, the same steps and tokens
  same-flops     fusion "none", trained for as many more steps as give it the
                 FBT run's training FLOPs (per-K FLOPs per token from
                 `fbtc --describe --json`, weighted by the pass schedule)
  plain-Mx       fusion "none" on M times the FBT's tokens (--multipliers;
                 same-tokens is 1x), each with its own full schedule
`--set` changes a field of the spec for all of them (e.g. a smaller batch to
fit a time budget: --set training.batch_size=8); `--fbt-set` the FBT's alone
(a recipe variant), and `--baselines DIR` then takes the plain runs from an
earlier run of the same spec and data instead of training them again. Each
is trained with `fbt train` and measured with `fbt eval`: held-out loss per
pass and per decoding regime (standard, soft, fused:2, fused:3), task
accuracy (arithmetic, counting; on the embedded corpus) per regime, and for
the FBT the contraction of its feedback map.

Tokens-equivalence: the plain runs' held-out loss against their training
tokens, and for each FBT regime the multiple of the FBT's tokens at which a
plain model matches it, interpolated in log tokens
(scripts/tokens_equivalence.py): tokens_equivalence.{md,jsonl,png}.

Data: the embedded corpus (default), a file (--data), or a recipe:
  --recipe code  the Python standard library as Debian ships it, split by
                 module into training and held-out parts
                 (scripts/code_corpus.py), as bytes or through a
                 SentencePiece model trained on the training part
                 (--tokenizer sp, --sp-vocab pieces; the spec's vocab_size
                 and bos_token_id follow the model).
--depth-task mixes the depth task (scripts/depth_task.py: a digit tracked
through k updates, answer first; --depth-k, --depth-mix, --depth-weights,
--depth-ops) into the byte-level training text and reports exact-match
accuracy on its held-out problems per model, regime and fused:N (N =
1..--depth-passes) against k: depth.{md,jsonl,png}.

Everything lands in DIR (default runs/experiment-NAME): the bundles, runs,
the data recipe's files, eval JSON, report.md and the plots.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import code_corpus  # noqa: E402
import depth_task  # noqa: E402
import tokens_equivalence  # noqa: E402


def run(cmd, capture=False):
    """Runs a command, echoing it; its stdout when capture."""
    print("$ " + " ".join(cmd), flush=True)
    if capture:
        return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    subprocess.run(cmd, check=True)
    return None


def schedule_weights(spec, steps):
    """{K: fraction of the steps} of the spec's schedule (expected values)."""
    t = spec.get("training", {})
    if spec.get("feedback", {}).get("fusion", "glu") == "none":
        return {1: 1.0}
    f1 = t.get("single_pass_fraction", 0.25)
    single = min(steps, int(-(-f1 * steps // 1)))  # ceil
    w = {1: single / steps}
    rest = 1 - w[1]
    if "pass_distribution" in t:
        dist = {int(k): float(v) for k, v in t["pass_distribution"].items()}
    elif "passes" in t:
        k2 = int(t["passes"])
        k3 = int(t.get("deep_passes", k2 + 1))
        p3 = float(t.get("deep_pass_fraction", 0.03))
        dist = {k2: 1 - p3}
        dist[k3] = dist.get(k3, 0) + p3
    else:
        dist = {k: 1.0 for k in range(2, 9)}
    total = sum(dist.values())
    for k, v in dist.items():
        w[k] = w.get(k, 0) + rest * v / total
    return w


def flops_per_token(describe, k):
    for p in describe["training"]["passes"]:
        if p["k"] == k:
            return p["flops_per_token"]
    raise KeyError(k)


def read_metrics(path):
    steps, evals = [], []
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            (evals if "val_loss" in r else steps).append(r)
    return steps, evals


def parse_multipliers(text):
    ms = sorted({float(x) for x in text.split(",") if x.strip()})
    if not ms or ms[0] <= 0:
        sys.exit("experiment: --multipliers wants positive numbers, e.g. 1,1.5,2,3")
    return ms


def prepare_data(args, out, fbt):
    """The data the models train on: {data, val_fraction, name, tokenizer,
    spec (fields to change), bytes_per_token, depth (task.json)}."""
    d = {"data": args.data, "val_fraction": None, "name": args.data or "the embedded corpus",
         "spec": {}, "bytes_per_token": None, "depth": None}
    if args.recipe == "code":
        if args.data:
            sys.exit("experiment: give --data or --recipe, not both")
        r = code_corpus.build(os.path.join(out, "data", "code-" + args.tokenizer), args.tokenizer,
                              args.sp_vocab, fbt=fbt)
        d.update(data=r["data"], val_fraction=r["val_fraction"], recipe=r,
                 name="the code recipe (%s %s: %d training files, %d held-out files of other "
                      "modules; %s)" % (r["package"], r["version"], r["train_files"],
                                        r["heldout_files"],
                                        "bytes" if args.tokenizer == "bytes" else
                                        "SentencePiece, %d pieces" % args.sp_vocab))
        if args.tokenizer == "sp":
            d["spec"] = {"vocab_size": r["vocab_size"], "bos_token_id": r["bos_token_id"]}
            d["bytes_per_token"] = r["heldout_bytes"] / r["heldout_tokens"]
    elif args.recipe not in (None, "embedded"):
        sys.exit("experiment: unknown --recipe %r (embedded or code)" % args.recipe)
    if args.depth_task:
        if not d["data"] or d["spec"] or d["data"].endswith(".bin"):
            sys.exit("experiment: --depth-task mixes its problems into byte-level text: give "
                     "--recipe code (--tokenizer bytes) or --data FILE.txt")
        weights = [float(w) for w in args.depth_weights.split(",")] if args.depth_weights else None
        t = depth_task.build(d["data"], d["val_fraction"] or 0.1, os.path.join(out, "data", "depth"),
                             args.depth_mix, depth_task.parse_ks(args.depth_k), weights,
                             problems=args.depth_problems or args.problems, ops=args.depth_ops)
        d.update(data=t["data"], val_fraction=t["val_fraction"], depth=t,
                 name=d["name"] + ", with the depth task as %.0f%% of the training bytes" % (
                     100 * args.depth_mix))
    return d


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--spec", required=True)
    ap.add_argument("--steps", type=int, help="FBT training steps (default: the spec's)")
    ap.add_argument("--out", help="output folder (default runs/experiment-NAME)")
    ap.add_argument("--data", help="training text or .bin tokens (default: the embedded corpus)")
    ap.add_argument("--recipe", choices=["embedded", "code"],
                    help="a named data recipe instead of --data: embedded (the default) or "
                         "code (the Python standard library, split by module)")
    ap.add_argument("--tokenizer", choices=["bytes", "sp"], default="bytes",
                    help="--recipe code: bytes, or a SentencePiece model trained on the "
                         "training part (default bytes)")
    ap.add_argument("--sp-vocab", type=int, default=4096, help="--tokenizer sp: pieces (4096)")
    ap.add_argument("--multipliers", default="1,1.5,2,3",
                    help="plain baselines at these multiples of the FBT's tokens (default "
                         "1,1.5,2,3), each its own full schedule")
    ap.add_argument("--depth-task", action="store_true",
                    help="mix the depth task into the training text and report its accuracy")
    ap.add_argument("--depth-k", default="1..8", help="--depth-task: depths (default 1..8)")
    ap.add_argument("--depth-mix", type=float, default=0.5,
                    help="--depth-task: its share of the training bytes (default 0.5)")
    ap.add_argument("--depth-weights", help="--depth-task: weights of the depths (default 1/k)")
    ap.add_argument("--depth-ops", default=depth_task.DEFAULT_OPS,
                    help="--depth-task: the updates, of + - * / (default %s)" % depth_task.DEFAULT_OPS)
    ap.add_argument("--depth-problems", type=int,
                    help="--depth-task: held-out problems per depth (default --problems)")
    ap.add_argument("--depth-passes", type=int, default=8,
                    help="--depth-task: the FBT's regimes fused:1..N (default 8)")
    ap.add_argument("--set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                    help="change a spec field for every model (a JSON value)")
    ap.add_argument("--fbt-set", action="append", default=[], metavar="SECTION.KEY=VALUE",
                    help="change a spec field for the FBT only (a recipe variant)")
    ap.add_argument("--baselines", metavar="DIR",
                    help="take the plain runs from an earlier run's folder instead of "
                    "training them again (its plain spec must be this run's: only the "
                    "FBT's recipe may differ); for recipe searches")
    ap.add_argument("--problems", type=int, default=200, help="problems per task")
    ap.add_argument("--build", default=os.environ.get("FBT_BUILD_DIR", "build"))
    ap.add_argument("--quick", action="store_true",
                    help="fewer eval windows and problems (for tests)")
    args = ap.parse_args()
    multipliers = parse_multipliers(args.multipliers)

    fbtc = os.path.join(args.build, "tools", "fbtc", "fbtc")
    fbt = os.path.join(args.build, "tools", "fbt", "fbt")
    with open(args.spec) as f:
        spec = json.load(f)
    name = spec.get("name", "fbt")
    steps = args.steps or spec.get("training", {}).get("steps", 1000)
    out = args.out or os.path.join("runs", "experiment-" + name)
    os.makedirs(out, exist_ok=True)
    apply_changes(spec, args.set, "--set")
    if spec.get("feedback", {}).get("fusion", "glu") == "none":
        sys.exit("experiment: the spec has no feedback path (fusion none); give an FBT spec")
    if args.quick and not args.depth_problems:
        args.depth_problems = 20
    data = prepare_data(args, out, fbt)
    spec.update(data["spec"])

    # The models: the spec, and the spec without its feedback path.
    plain = json.loads(json.dumps(spec))
    plain["name"] = name + "-plain"
    apply_changes(spec, args.fbt_set, "--fbt-set")
    if args.set or args.fbt_set or data["spec"]:  # the FBT's own spec, as changed
        fbt_spec = os.path.join(out, "fbt.json")
        with open(fbt_spec, "w") as f:
            json.dump(spec, f, indent=2)
        args.spec = fbt_spec
    plain["feedback"]["fusion"] = "none"
    specs = {"fbt": args.spec, "plain": os.path.join(out, "plain.json")}
    with open(specs["plain"], "w") as f:
        json.dump(plain, f, indent=2)

    describe = {k: json.loads(run([fbtc, p, "--describe", "--json"], capture=True))
                for k, p in specs.items()}
    weights = schedule_weights(spec, steps)
    fbt_flops = sum(w * flops_per_token(describe["fbt"], k) for k, w in weights.items())
    plain_flops = flops_per_token(describe["plain"], 1)
    matched = max(1, round(steps * fbt_flops / plain_flops))
    tokens_per_step = describe["fbt"]["training"]["tokens_per_step"]

    # (label, kind, steps): the FBT, the two comparisons, then the plain
    # curve's other points. A plain run of the same steps as another is
    # trained once.
    models = [("fbt", "fbt", steps), ("same-tokens", "plain", steps),
              ("same-flops", "plain", matched)]
    for m in multipliers:
        n = max(1, round(m * steps))
        if m != 1:
            models.append(("plain-%gx" % m, "plain", n))
    bundles = {}
    for key, path in specs.items():
        bundles[key] = os.path.join(out, key + ".fbtb")
        run([fbtc, path, "--target=cpu", "-o", bundles[key]])

    feed = ["--data", data["data"]] if data["data"] else []
    if data["val_fraction"] is not None:
        feed += ["--val-fraction", repr(data["val_fraction"])]
    windows = ["--windows", "16"] if args.quick else []
    problems = ["--problems", str(20 if args.quick else args.problems)]
    fbt_regimes = ["standard", "soft"] + ["fused:%d" % n for n in range(1, args.depth_passes + 1)]
    results, trained = {}, {}
    reuse = earlier_plain_runs(args.baselines, plain) if args.baselines else {}
    for label, kind, n in models:
        if (kind, n) in trained:  # the same run under another name
            results[label] = dict(results[trained[(kind, n)]], alias_of=trained[(kind, n)])
            continue
        if kind == "plain" and n in reuse:
            trained[(kind, n)] = label
            results[label] = reuse[n]
            continue
        trained[(kind, n)] = label
        rundir = os.path.join(out, label)
        t0 = time.time()
        run([fbt, "train", bundles[kind], "--steps", str(n), "--out", rundir, "--quiet"] + feed)
        seconds = time.time() - t0
        ckpt = os.path.join(rundir, "latest.safetensors")
        ev = ["eval", bundles[kind], "--ckpt", ckpt, "--json"] + feed
        r = {"steps": n, "train_seconds": seconds, "kind": kind,
             "tokens": n * tokens_per_step,
             "multiplier": n / steps if kind == "plain" else None,
             "flops_per_token": fbt_flops if kind == "fbt" else plain_flops}
        r["losses"] = json.loads(run([fbt] + ev + windows, capture=True))
        if data["bytes_per_token"]:  # ids from text: bits per byte of the held-out part
            for v in r["losses"]["regimes"].values():
                v["bpb_approx"] = v["loss"] / math.log(2) / data["bytes_per_token"]
        if not data["data"]:  # the tasks ask byte-level questions of the corpus's kinds
            r["tasks"] = {t: json.loads(run([fbt] + ev + ["--task", t] + problems, capture=True))
                          for t in ("arithmetic", "counting")}
        if data["depth"]:
            regs = fbt_regimes if kind == "fbt" else ["standard"]
            r["depth"] = {}
            for k, path in data["depth"]["problems"].items():
                r["depth"][k] = json.loads(run(
                    [fbt] + ev + ["--task", "file:" + path, "--regimes", ",".join(regs),
                                  "--problems", str(args.depth_problems or args.problems)],
                    capture=True))
        if kind == "fbt":
            r["contraction"] = json.loads(run([fbt] + ev + ["--contraction"], capture=True))
        r["metrics"] = read_metrics(os.path.join(rundir, "metrics.jsonl"))
        results[label] = r
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump({k: {kk: vv for kk, vv in v.items() if kk != "metrics"}
                   for k, v in results.items()}, f, indent=2)
    write_report(out, spec, steps, weights, results, describe, data)
    print("report: " + os.path.join(out, "report.md"))


def apply_changes(spec, changes, flag):
    """SECTION.KEY=VALUE changes (a JSON value, or a bare string) into `spec`."""
    for change in changes:
        path, eq, value = change.partition("=")
        if not eq:
            sys.exit("experiment: %s %r: expected SECTION.KEY=VALUE" % (flag, change))
        node, keys = spec, path.split(".")
        for key in keys[:-1]:
            node = node.setdefault(key, {})
        try:
            node[keys[-1]] = json.loads(value)
        except ValueError:
            node[keys[-1]] = value  # a bare string


def earlier_plain_runs(folder, plain):
    """{steps: result} of the plain runs an earlier run trained, with their
    metrics; exits unless its plain spec is `plain` (names aside)."""
    try:
        with open(os.path.join(folder, "plain.json")) as f:
            theirs = json.load(f)
        with open(os.path.join(folder, "results.json")) as f:
            earlier = json.load(f)
    except (OSError, ValueError) as e:
        sys.exit("experiment: --baselines %s: %s" % (folder, e))
    if dict(theirs, name=None) != dict(plain, name=None):
        sys.exit("experiment: --baselines %s: its plain spec differs from this run's "
                 "(only the FBT's recipe may differ)" % folder)
    runs = {}
    for label, r in earlier.items():
        if r["kind"] == "plain" and "alias_of" not in r:
            r = dict(r, reused_from=os.path.join(folder, label))
            r["metrics"] = read_metrics(os.path.join(folder, label, "metrics.jsonl"))
            runs[r["steps"]] = r
    return runs


def write_depth(out, results, ks):
    """depth.md, depth.jsonl and depth.png: the depth task's accuracy per
    model and regime against k. Returns the markdown."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = []  # (model, regime, {k: result})
    for label, r in results.items():
        if "depth" not in r or r.get("alias_of"):
            continue
        regs = list(next(iter(r["depth"].values()))["regimes"])
        for reg in regs:
            rows.append((label, reg, {k: r["depth"][str(k)]["regimes"][reg] for k in ks}))
    with open(os.path.join(out, "depth.jsonl"), "w") as f:
        for label, reg, per_k in rows:
            for k, v in per_k.items():
                f.write(json.dumps({"model": label, "regime": reg, "k": k, **v}) + "\n")
    first = next(iter(results.values()))["depth"]
    md = ["| model | regime | " + " | ".join("k=%d" % k for k in ks) + " |",
          "|---|---|" + "---|" * len(ks),
          "| (problems) | | " + " | ".join(str(first[str(k)]["problems"]) for k in ks) + " |"]
    for label, reg, per_k in rows:
        md.append("| %s | %s | " % (label, reg) + " | ".join(
            "%.3f" % per_k[k]["accuracy"] for k in ks) + " |")
    text = "\n".join(md) + "\n"
    with open(os.path.join(out, "depth.md"), "w") as f:
        f.write(text)

    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    cmap = plt.get_cmap("viridis")
    fused = [reg for label, reg, _ in rows if label == "fbt" and reg.startswith("fused:")]
    for label, reg, per_k in rows:
        ys = [per_k[k]["accuracy"] for k in ks]
        if label == "fbt":
            if reg.startswith("fused:"):
                style = dict(color=cmap(fused.index(reg) / max(1, len(fused) - 1)), linewidth=1)
            else:
                style = dict(color="red" if reg == "standard" else "orange", linewidth=2)
            ax.plot(ks, ys, marker=".", label="FBT " + reg, **style)
        else:
            plains = [l for l, _, _ in rows if l != "fbt"]
            i = plains.index(label)
            ax.plot(ks, ys, linestyle="--", color=str(0.15 + 0.6 * i / max(1, len(plains) - 1)),
                    marker="xs^v<>"[i % 6], markersize=4, label=label + " (plain)")
    ax.axhline(0.1, color="black", linestyle=":", linewidth=1, label="guessing (10%)")
    ax.set_xlabel("k (updates)")
    ax.set_ylabel("exact match (held-out problems)")
    ax.set_ylim(0, 1)
    ax.set_title("Depth task: accuracy against k")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "depth.png"), dpi=120)
    plt.close(fig)
    return text


def write_report(out, spec, steps, weights, results, describe, data):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data_name = data["name"]
    tokens_per_step = describe["fbt"]["training"]["tokens_per_step"]
    fbt_desc = describe["fbt"]
    every = results
    results = {k: v for k, v in results.items() if not v.get("alias_of")}

    # 1. Validation (inference mode) against training FLOPs.
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, r in results.items():
        step_rows, evals = r["metrics"]
        per_step = {}
        total = 0.0
        for s in step_rows:
            desc = fbt_desc if r["kind"] == "fbt" else describe["plain"]
            total += flops_per_token(desc, s["passes"]) * tokens_per_step
            per_step[s["step"]] = total
        xs = [per_step.get(e["step"], 0.0) for e in evals]
        if r["kind"] == "fbt":
            for k in (1, 2, 4, 8):
                if k <= len(evals[0]["val_pass_losses"]):
                    ax.plot(xs, [e["val_pass_losses"][k - 1] for e in evals],
                            label="FBT pass %d" % k, marker="." if k == 1 else None)
        else:
            ax.plot(xs, [e["val_pass_losses"][0] for e in evals], label=label, linestyle="--")
    ax.set_xlabel("training FLOPs")
    ax.set_ylabel("held-out loss (nats/token, inference mode)")
    ax.set_title("Validation per pass")
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(out, "val_curves.png"), dpi=120)
    plt.close(fig)

    # 2. Regime losses on the continuation.
    regimes = ["standard", "soft", "fused:2", "fused:3"]
    fig, ax = plt.subplots(figsize=(7, 4))
    labels = list(results)
    width = 0.8 / len(regimes)
    for i, reg in enumerate(regimes):
        vals = [results[l]["losses"]["regimes"].get(reg, {}).get("loss", float("nan"))
                for l in labels]
        ax.bar([j + i * width for j in range(len(labels))], vals, width, label=reg)
    ax.set_xticks([j + width * (len(regimes) - 1) / 2 for j in range(len(labels))])
    ax.set_xticklabels(labels)
    ax.set_ylabel("continuation loss (nats/token)")
    ax.set_title("Held-out loss per decoding regime")
    ax.legend()
    lo = min(r["losses"]["regimes"]["standard"]["loss"] for r in results.values())
    ax.set_ylim(bottom=max(0, lo * 0.8))
    fig.tight_layout()
    fig.savefig(os.path.join(out, "regimes.png"), dpi=120)
    plt.close(fig)

    # 3. Task accuracy.
    have_tasks = all("tasks" in r for r in results.values())
    if have_tasks:
        tasks = list(next(iter(results.values()))["tasks"])
        fig, axes = plt.subplots(1, len(tasks), figsize=(5 * len(tasks), 4))
        for ax, task in zip(axes, tasks):
            bars, vals = [], []
            for l, r in results.items():
                for reg, v in r["tasks"][task]["regimes"].items():
                    bars.append("%s\n%s" % (l, reg))
                    vals.append(v["accuracy"])
            ax.bar(range(len(vals)), vals)
            ax.set_xticks(range(len(vals)))
            ax.set_xticklabels(bars, fontsize=7, rotation=60)
            ax.set_ylim(0, 1)
            ax.set_title("%s: exact match" % task)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "tasks.png"), dpi=120)
        plt.close(fig)

    # 4. Contraction of the feedback map.
    con = results["fbt"].get("contraction")
    if con:
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.semilogy(range(1, len(con["contraction"]) + 1), con["contraction"], marker=".")
        ax.set_xlabel("pass k")
        ax.set_ylabel("||s_{k+1} - s_k|| / ||s_k||")
        ax.set_title("Contraction over a %d-token prompt" % con["prompt_length"])
        fig.tight_layout()
        fig.savefig(os.path.join(out, "contraction.png"), dpi=120)
        plt.close(fig)

    fb = spec.get("feedback", {})
    lines = ["# Experiment: %s" % spec.get("name", "fbt"), ""]
    lines.append("Same data (%s), same held-out windows; inference mode (no jitter, no prefix "
                 "mix-in). Loss in nats per token; bpb = bits per byte." % data_name)
    lines.append("")
    lines.append("FBT recipe: fusion %s, state %s, input_norm %s, gate_norm %s, state_norm %s, "
                 "output_norm %s, token_residual %s, prefix_mixin %s, aux_loss_weight %s; "
                 "schedule %s, grad_passes %s." % (
                     fb.get("fusion", "glu"), fb.get("state", "post_norm"), fb.get("input_norm", False),
                     fb.get("gate_norm", True), fb.get("state_norm", False),
                     fb.get("output_norm", False), fb.get("token_residual", True),
                     fb.get("prefix_mixin", False), fb.get("aux_loss_weight", 1.0),
                     ", ".join("K=%d %.0f%%" % (k, 100 * w) for k, w in sorted(weights.items())),
                     spec.get("training", {}).get("grad_passes", 2)))
    lines.append("")
    lines.append("## Models")
    lines.append("")
    lines.append("| model | steps | FLOPs/token | training FLOPs | train time (s) | tokens |")
    lines.append("|---|---|---|---|---|---|")
    for l, r in every.items():
        total = r["flops_per_token"] * tokens_per_step * r["steps"]
        lines.append("| %s | %d | %.3g | %.3g | %s | %.3g (%s) |" % (
            l, r["steps"], r["flops_per_token"], total,
            "= " + r["alias_of"] if r.get("alias_of") else "%.0f" % r["train_seconds"],
            r["tokens"], "%.2fx" % r["multiplier"] if r["multiplier"] else "1x"))
    lines.append("")
    lines.append("## Held-out loss per regime (continuation after a plain prompt)")
    lines.append("")
    lines.append("| model | " + " | ".join(regimes) + " | soft / standard |")
    lines.append("|---|" + "---|" * (len(regimes) + 1))
    for l, r in results.items():
        rg = r["losses"]["regimes"]
        cells = []
        for reg in regimes:
            v = rg.get(reg)
            if v and v.get("bpb") is not None:
                cells.append("%.4f (%.3f bpb)" % (v["loss"], v["bpb"]))
            elif v and v.get("bpb_approx") is not None:
                cells.append("%.4f (~%.3f bpb)" % (v["loss"], v["bpb_approx"]))
            else:
                cells.append("%.4f" % v["loss"] if v else "-")
        ratio = ("%.3f" % (rg["soft"]["loss"] / rg["standard"]["loss"])) if "soft" in rg else "-"
        lines.append("| %s | %s | %s |" % (l, " | ".join(cells), ratio))
    lines.append("")
    if data["bytes_per_token"]:
        lines.append("~bpb: nats per token / ln 2 / %.3f, the held-out part's bytes per token "
                     "(its windows' own ratio may differ)." % data["bytes_per_token"])
        lines.append("")
    plain_curve, fbt_regimes, fbt_tokens = tokens_equivalence.from_results(results)
    te = tokens_equivalence.write(out, plain_curve, fbt_regimes, fbt_tokens,
                                  spec.get("name", "fbt"))
    lines.append("## Tokens-equivalence")
    lines.append("")
    lines.append("Plain transformers (fusion none) trained on multiples of the FBT's tokens, each "
                 "with its own full schedule, on the same data, measured on the same held-out "
                 "continuations (standard regime); for each FBT regime, the multiple of its tokens "
                 "at which the plain curve reaches its loss, interpolated in log tokens (outside "
                 "the measured multiples: < or >). The compute-matched run (same-flops) is a "
                 "point of the curve too.")
    lines.append("")
    lines.append(te)
    p = results["fbt"]["losses"]["passes"]
    lines.append("## FBT per pass (whole windows, state fed back from t = 1)")
    lines.append("")
    lines.append("| " + " | ".join("pass %d" % (k + 1) for k in range(len(p))) + " |")
    lines.append("|" + "---|" * len(p))
    lines.append("| " + " | ".join("%.4f" % v for v in p) + " |")
    lines.append("| " + " | ".join("x%.3f" % (v / p[0]) for v in p) + " |")
    lines.append("")
    if have_tasks:
        lines.append("## Tasks (greedy, exact match)")
        lines.append("")
        for task in tasks:
            regs = list(next(iter(results.values()))["tasks"][task]["regimes"])
            regs = [g for g in regimes if any(g in r["tasks"][task]["regimes"] for r in results.values())]
            lines.append("| %s | " % task + " | ".join(regs) + " |")
            lines.append("|---|" + "---|" * len(regs))
            for l, r in results.items():
                rr = r["tasks"][task]["regimes"]
                lines.append("| %s | " % l + " | ".join(
                    ("%.3f" % rr[g]["accuracy"]) if g in rr else "-" for g in regs) + " |")
            lines.append("")
    if data["depth"]:
        t = data["depth"]
        ks = t["eval_k"]
        lines.append("## Depth task (greedy, exact match)")
        lines.append("")
        lines.append("A digit tracked through k one-byte updates mod 10 (updates %s), answer first "
                     "(scripts/depth_task.py), %.0f%% of the training bytes, depths %s trained "
                     "(weights %s); asked: held-out problems only, none in the training text, at "
                     "the depths whose space holds enough of them; guessing gets 10%%. fused:N "
                     "runs N passes over the prompt before the answer; soft feeds the state back "
                     "only after the first generated token, so on a one-digit answer it matches "
                     "standard." % (" ".join(t["ops"]), 100 * t["mix"],
                                    ",".join(str(k) for k in t["k"]),
                                    ",".join("%.2g" % w for w in t["weights"])))
        lines.append("")
        lines.append(write_depth(out, every, ks))
    if con:
        c = con["contraction"]
        lines.append("## Contraction")
        lines.append("")
        lines.append("||s_{k+1} - s_k|| / ||s_k|| over a %d-token held-out prompt: k=1 %.3g, k=2 %.3g, "
                     "k=4 %.3g, k=8 %.3g, k=%d %.3g." % (con["prompt_length"], c[0], c[1], c[3],
                                                        c[min(7, len(c) - 1)], len(c), c[-1]))
        rms = con["soft_state_rms"]
        if rms:
            lines.append("State RMS along a %d-token greedy soft generation: first %.3f, last %.3f, "
                         "min %.3f, max %.3f." % (len(rms), rms[0], rms[-1], min(rms), max(rms)))
        lines.append("")
    lines.append("## Plots")
    lines.append("")
    for png, what in [("tokens_equivalence.png", "held-out loss against training tokens"),
                      ("depth.png", "depth task accuracy against k"),
                      ("val_curves.png", "validation per pass against training FLOPs"),
                      ("regimes.png", "held-out loss per regime"),
                      ("tasks.png", "task accuracy"), ("contraction.png", "contraction")]:
        if os.path.exists(os.path.join(out, png)):
            lines.append("![%s](%s)" % (what, png))
    lines.append("")
    with open(os.path.join(out, "report.md"), "w") as f:
        f.write("\n".join(lines))


if __name__ == "__main__":
    main()
