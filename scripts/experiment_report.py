#!/usr/bin/env python3
"""The experiment runner's report, rebuilt from its raw results alone.

    experiment_report.py DIR [--out DIR2] [--check]

reads DIR/results.json (scripts/experiment.py: every run's eval JSON per
held-out part, metrics summary, the command and the commit) and writes
report.md, tokens_equivalence.{md,jsonl}, depth.{md,jsonl} and the PNG
plots into DIR (or DIR2). --check writes nothing and exits 1 when a table
of DIR differs from what the results build: the test that keeps committed
tables honest (test/experiment/reports.test).

Figures, for N seeds (every model trained under each):
  - losses are on the reported part (test when measured, else validation):
    the mean over seeds with its 95% t-interval and the min to max;
  - tokens-equivalence per regime: each seed's own plain curve gives that
    seed's multiplier (scripts/tokens_equivalence.py); the table gives their
    mean with a 95% t-interval (N - 1 degrees of freedom) and the min to max;
  - FLOPs-equivalence: the plain training FLOPs that match a regime, over
    the FBT's training FLOPs (= tokens-equivalence x the plain model's
    FLOPs per token / the FBT's): below 1, a plain model reaches the same
    loss on less compute;
  - paired differences: each regime's loss minus standard's on the same
    weights and windows, per seed, with the t-interval over seeds and the
    mean within-run standard error (over windows) beside it.
"""

import argparse
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tokens_equivalence  # noqa: E402

REGIMES = ["standard", "soft", "fused:2", "fused:3"]
TABLES = ["report.md", "tokens_equivalence.md", "depth.md"]
# Two-sided 95% critical values of Student's t, by degrees of freedom.
T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306,
       9: 2.262, 10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042}


def t95(df):
    """The critical value for df, or the next smaller df's (wider) between
    table rows; the normal's beyond 30."""
    return T95[max(k for k in T95 if k <= df)] if df <= 30 else 1.96


def stats(xs):
    """{mean, sd, lo, hi, half}: half is the 95% t-interval's half width
    (None for one value)."""
    n = len(xs)
    mean = sum(xs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in xs) / (n - 1)) if n > 1 else None
    return {"mean": mean, "sd": sd, "lo": min(xs), "hi": max(xs), "n": n,
            "half": t95(n - 1) * sd / math.sqrt(n) if n > 1 else None}


def ci(s, fmt="%.4f"):
    """"m [lo, hi] (a to b)": the mean, its 95% t-interval, the min and max;
    one value: just the value."""
    if s["half"] is None:
        return fmt % s["mean"]
    return ("%s [%s, %s] (%s to %s)" % tuple(fmt % v for v in (
        s["mean"], s["mean"] - s["half"], s["mean"] + s["half"], s["lo"], s["hi"])))


def loaded(folder):
    with open(os.path.join(folder, "results.json")) as f:
        return json.load(f)


def part(raw):
    """The part the report shows: the run's report_split (a search's runs:
    validation), or a rebuild's --split."""
    return raw.get("report_split") or ("test" if "test" in raw["splits"] else raw["splits"][0])


def losses(r, split):
    return r["losses"][split]


def training_flops(raw, r):
    """A run's training FLOPs: its FLOPs per token over its tokens."""
    tps = raw["describe"]["fbt"]["training"]["tokens_per_step"]
    return r["flops_per_token"] * tps * r["steps"]


def plain_curve(results, split):
    pts = {(r["multiplier"], losses(r, split)["regimes"]["standard"]["loss"])
           for r in results.values() if r["kind"] == "plain" and r.get("multiplier")}
    return sorted(pts)


def per_seed(raw, fn):
    """[fn(results of a seed)] over the seeds, in order."""
    return [fn(raw["runs"][str(s)]) for s in raw["seeds"]]


def models_table(raw):
    first = raw["runs"][str(raw["seeds"][0])]
    md = ["| model | steps | FLOPs/token | training FLOPs | tokens | train time (s, mean) |",
          "|---|---|---|---|---|---|"]
    for label, r in first.items():
        secs = [raw["runs"][str(s)][label].get("train_seconds") for s in raw["seeds"]]
        md.append("| %s | %d | %.3g | %.3g | %.3g (%s) | %s |" % (
            label, r["steps"], r["flops_per_token"], training_flops(raw, r),
            r["tokens"], "%.2fx" % r["multiplier"] if r["multiplier"] else "1x",
            "= " + r["alias_of"] if r.get("alias_of") else "%.0f" % (sum(secs) / len(secs))))
    return md


def windows_scored(raw, split):
    """Which share of the part the losses score: every window, or how many of
    how many (the runner's --windows), and over how many documents."""
    r = losses(raw["runs"][str(raw["seeds"][0])]["fbt"], split)
    if "windows_in_part" not in r:
        return "windows spread over the whole part"
    share = ("every one of its %d windows" % r["windows_in_part"]
             if r["windows"] >= r["windows_in_part"] else
             "%d of its %d windows, %.0f%% by `--windows %d`, spread evenly over it" % (
                 r["windows"], r["windows_in_part"], 100.0 * r["windows"] / r["windows_in_part"],
                 r["windows"]))
    return "%s; %d documents" % (share, r["documents"])


def mean_se(vals, key):
    """The mean over the seeds of a within-run standard error, "-" where the
    results lack it (recorded before fbt eval gave it)."""
    if any(key not in v for v in vals):
        return "-"
    return "%.4f" % (sum(v[key] for v in vals) / len(vals))


def loss_table(raw, split):
    first = raw["runs"][str(raw["seeds"][0])]
    md = ["| model | regime | loss (mean [95%% t-interval] (min to max) over %d seeds) | "
          "s.e. within a run (windows) | (documents) | bpb |" % len(raw["seeds"]),
          "|---|---|---|---|---|---|"]
    for label, r in first.items():
        if r.get("alias_of"):
            continue
        for reg in REGIMES:
            if reg not in losses(r, split)["regimes"]:
                continue
            vals = per_seed(raw, lambda res: losses(res[label], split)["regimes"][reg])
            s = stats([v["loss"] for v in vals])
            bpb = vals[0].get("bpb")
            if bpb is not None:
                bpb = "%.3f" % (s["mean"] / math.log(2))
            elif raw["data"].get("bytes_per_token"):
                bpb = "~%.3f" % (s["mean"] / math.log(2) / raw["data"]["bytes_per_token"])
            md.append("| %s | %s | %s | %s | %s | %s |" % (
                label, reg, ci(s), mean_se(vals, "se"), mean_se(vals, "se_documents"),
                bpb or "-"))
    return md


def paired_table(raw, split):
    fbt = raw["runs"][str(raw["seeds"][0])]["fbt"]
    md = ["| FBT regime | minus standard, same weights (mean [95% t-interval] (min to max)) | "
          "paired s.e. within a run (windows) | (documents) |", "|---|---|---|---|"]
    for reg in REGIMES[1:]:
        if reg not in losses(fbt, split)["regimes"]:
            continue
        vals = per_seed(raw, lambda res: losses(res["fbt"], split)["regimes"][reg]["minus_standard"])
        md.append("| %s | %s | %s | %s |" % (reg, ci(stats([v["mean"] for v in vals]), "%+.4f"),
                                             mean_se(vals, "se"), mean_se(vals, "se_documents")))
    return md


def equivalence(raw, split):
    """{regime: (multipliers per seed, labels per seed)}."""
    out = {}
    for results in (raw["runs"][str(s)] for s in raw["seeds"]):
        plain = plain_curve(results, split)
        regs = {k: v["loss"] for k, v in losses(results["fbt"], split)["regimes"].items()
                if k in REGIMES}
        for row in tokens_equivalence.table(plain, regs):
            ms, labels = out.setdefault(row["regime"], ([], []))
            ms.append(row["multiplier"])
            labels.append(row["label"])
    return out


def equivalence_table(raw, split):
    fbt = raw["runs"][str(raw["seeds"][0])]["fbt"]
    ratio = raw["runs"][str(raw["seeds"][0])]["same-tokens"]["flops_per_token"] / fbt["flops_per_token"]
    inf = raw["describe"]["fbt"]["inference"]
    md = ["| FBT regime | plain tokens to match (mean [95% t-interval] (min to max)) | "
          "plain FLOPs to match / FBT training FLOPs | decode FLOPs per token | per seed |",
          "|---|---|---|---|---|"]
    for reg, (ms, labels) in equivalence(raw, split).items():
        decode = inf["decode_flops_per_token"] + (
            inf["soft_extra_flops_per_token"] if reg != "standard" else 0)
        if all(m is not None for m in ms):
            s = stats(ms)
            tokens = ci(s, "%.2f") + "x"
            flops = ci(stats([m * ratio for m in ms]), "%.2f") + "x"
        else:
            tokens = flops = "outside the curve in %d of %d seeds" % (
                sum(m is None for m in ms), len(ms))
        md.append("| %s | %s | %s | %.3g%s | %s |" % (
            reg, tokens, flops, decode,
            "; its prefill %s passes over the prompt" % reg.split(":")[1]
            if reg.startswith("fused:") else "",
            ", ".join(labels)))
    return md


def curve_table(raw, split):
    first = raw["runs"][str(raw["seeds"][0])]
    plain = [r for r in first.values() if r["kind"] == "plain" and r.get("multiplier")
             and not r.get("alias_of")]
    plain.sort(key=lambda r: r["multiplier"])
    md = ["| plain model | tokens | training FLOPs | held-out loss (mean over seeds) |",
          "|---|---|---|---|"]
    for r in plain:
        label = next(l for l, v in first.items() if v is r)
        vals = per_seed(raw, lambda res: losses(res[label], split)["regimes"]["standard"]["loss"])
        md.append("| %s (%.3gx) | %.3g | %.3g | %s |" % (
            label, r["multiplier"], r["tokens"], training_flops(raw, r),
            ci(stats(vals))))
    fbt = first["fbt"]
    md.append("| FBT | %.3g | %.3g | (per regime above) |" % (
        fbt["tokens"], training_flops(raw, fbt)))
    return md


def passes_table(raw, split):
    vals = per_seed(raw, lambda res: losses(res["fbt"], split)["passes"])
    n = len(vals[0])
    means = [sum(v[k] for v in vals) / len(vals) for k in range(n)]
    return ["| " + " | ".join("pass %d" % (k + 1) for k in range(n)) + " |",
            "|" + "---|" * n,
            "| " + " | ".join("%.4f" % m for m in means) + " |",
            "| " + " | ".join("x%.3f" % (m / means[0]) for m in means) + " |"]


def depth_rows(raw):
    """[(model, regime, {k: [accuracy per seed]}, problems)]."""
    first = raw["runs"][str(raw["seeds"][0])]
    ks = [str(k) for k in raw["depth"]["eval_k"]]
    rows = []
    for label, r in first.items():
        if "depth" not in r or r.get("alias_of"):
            continue
        for reg in r["depth"][ks[0]]["regimes"]:
            acc = {k: per_seed(raw, lambda res: res[label]["depth"][k]["regimes"][reg]["accuracy"])
                   for k in ks}
            rows.append((label, reg, acc))
    return ks, rows


def depth_table(raw):
    """Accuracy per model, regime and k (mean over the seeds, +- the 95%
    t half-width with two or more), each model's training tokens and FLOPs
    beside it."""
    ks, rows = depth_rows(raw)
    runs = raw["runs"][str(raw["seeds"][0])]
    first = runs["fbt"]["depth"]
    md = ["| model | regime | tokens | training FLOPs | " +
          " | ".join("k=%s" % k for k in ks) + " |",
          "|---|---|---|---|" + "---|" * len(ks),
          "| (problems) | | | | " + " | ".join(str(first[k]["problems"]) for k in ks) + " |"]
    for label, reg, acc in rows:
        r = runs[label]
        md.append("| %s | %s | %.3g | %.3g | " % (label, reg, r["tokens"], training_flops(raw, r)) +
                  " | ".join("%.3f" % stats(acc[k])["mean"] +
                             (" +- %.3f" % stats(acc[k])["half"] if len(acc[k]) > 1 else "")
                             for k in ks) + " |")
    return md


def depth_chance(raw):
    """Guessing's accuracy on the depth task: 1/5 for perm5, 1/10 for digits."""
    return 0.2 if raw["depth"]["ops"] == "perm5" else 0.1


def gain_table(raw):
    """Per k: fused:N (the largest N) minus the primary control, fixed by the
    runner before the runs (the plain model on the same training FLOPs;
    results that predate the field take the same), per seed; minus each other
    control beside it, and minus the same weights' standard regime. Then
    where the primary control is at chance (its 95% interval holds the
    guessing rate): there a gain growing with k is untested."""
    ks, rows = depth_rows(raw)
    fbt = {reg: acc for label, reg, acc in rows if label == "fbt"}
    top = max((reg for reg in fbt if reg.startswith("fused:")), key=lambda r: int(r[6:]))
    primary = raw["depth"].get("primary_control", "same-flops")
    controls = {label: acc for label, reg, acc in rows if label != "fbt"}
    chance = depth_chance(raw)

    def minus(acc, k):
        return ci(stats([a - b for a, b in zip(fbt[top][k], acc[k])]), "%+.3f")

    md = ["| k | %s minus %s, the primary control (mean [95%% t-interval] (min to max)) | "
          "%s's accuracy | minus each other control | %s minus standard, same weights |" % (
              top, primary, primary, top), "|---|---|---|---|---|"]
    at_chance = []
    for k in ks:
        s = stats(controls[primary][k])
        if s["half"] is not None and s["mean"] - s["half"] <= chance <= s["mean"] + s["half"]:
            at_chance.append(k)
        others = "; ".join("%s %s" % (label, minus(acc, k))
                           for label, acc in controls.items() if label != primary)
        md.append("| %s | %s | %s | %s | %s |" % (
            k, minus(controls[primary], k), ci(s, "%.3f"), others or "-",
            minus(fbt["standard"], k)))
    if at_chance:
        md += ["", "%s is at chance (its interval holds the guessing rate, %.2f) at k = %s: a "
               "gain that grows with k is untested there at this budget, not absent." % (
                   primary, chance, ", ".join(at_chance))]
    return md


def sft_table(raw):
    """Per model, style and regime: held-out exact match and mean answer
    length (bytes) before and after the SFT stage, mean over the seeds (+-
    the 95% t half-width with two or more)."""
    first = raw["runs"][str(raw["seeds"][0])]
    def cell(xs, fmt):
        s = stats(xs)
        return fmt % s["mean"] + (" +- " + fmt % s["half"] if s["half"] is not None else "")
    md = ["| model | answers | regime | accuracy before | accuracy after | "
          "answer bytes before | answer bytes after |", "|---|---|---|---|---|---|---|"]
    for label, r in first.items():
        for style in r.get("sft", {}):
            for reg in r["sft"][style]["after"]["regimes"]:
                def seeds(when, key):
                    return per_seed(raw, lambda res: res[label]["sft"][style][when]["regimes"][reg][key])
                md.append("| %s | %s | %s | %s | %s | %s | %s |" % (
                    label, style, reg, cell(seeds("before", "accuracy"), "%.3f"),
                    cell(seeds("after", "accuracy"), "%.3f"),
                    cell(seeds("before", "mean_answer_bytes"), "%.1f"),
                    cell(seeds("after", "mean_answer_bytes"), "%.1f")))
    return md


def probe_score(target_json):
    """The key of a probe target's scores: test R^2 of a quantity, or test
    accuracy of a class (fbt probe's value target)."""
    return "test_accuracy" if "test_accuracy" in target_json else "test_r2"


def probe_rows(raw):
    """[(target, model, regime, [per layer: the score per seed])] and, per
    target, the random-feature floor per seed."""
    first = raw["runs"][str(raw["seeds"][0])]
    rows, floors = [], {}
    probed = [label for label, r in first.items() if r.get("probe")]
    for target in first[probed[0]]["probe"]["targets"]:
        floors[target] = [x for label in probed for x in per_seed(
            raw, lambda res: res[label]["probe"]["targets"][target]["random"])]
        for label in probed:
            key = probe_score(first[label]["probe"]["targets"][target])
            regs = first[label]["probe"]["targets"][target][key]
            for reg, layers in regs.items():
                rows.append((target, label, reg, [
                    per_seed(raw, lambda res: res[label]["probe"]["targets"][target][key][reg][l])
                    for l in range(len(layers))]))
    return rows, floors


def probe_floor(raw, target, floors):
    """The floor's words for a target: random features, and for a class the
    share of its most common value."""
    text = "random features: %.3f" % stats(floors[target])["mean"]
    first = raw["runs"][str(raw["seeds"][0])]
    for r in first.values():
        t = (r.get("probe") or {}).get("targets", {}).get(target, {})
        if "majority" in t:
            return "test accuracy; %s; the most common value: %.3f" % (text, t["majority"])
    return text


def probe_table(raw):
    """The probes' test scores (R^2, or accuracy for a class) per target,
    model, regime and layer (mean +- the 95% t half-width over the seeds),
    and the floors."""
    rows, floors = probe_rows(raw)
    layers = len(rows[0][3])
    md = []
    for target in floors:
        md += ["", "**%s** (%s)" % (target, probe_floor(raw, target, floors)), "",
               "| model | regime | " + " | ".join(
                   "layer %d" % l if l < layers - 1 else "top" for l in range(layers)) + " |",
               "|---|---|" + "---|" * layers]
        for t, label, reg, per_layer in rows:
            if t == target:
                md.append("| %s | %s | " % (label, reg) + " | ".join(
                    "%.3f" % stats(xs)["mean"] +
                    (" +- %.3f" % stats(xs)["half"] if len(xs) > 1 else "") for xs in per_layer) +
                    " |")
        # Paired over the seeds: the FBT's fused passes against its own
        # standard prefill, layer by layer.
        fbt = {reg: per for t, label, reg, per in rows if t == target and label == "fbt"}
        if "standard" in fbt and len(fbt) > 1:
            md += ["", "%s, fused:N minus standard (same weights, paired over the seeds; mean "
                   "[95%% t-interval] (min to max)):" % target, "",
                   "| regime | " + " | ".join(
                       "layer %d" % l if l < layers - 1 else "top" for l in range(layers)) + " |",
                   "|---|" + "---|" * layers]
            for reg, per in fbt.items():
                if reg != "standard":
                    md.append("| %s | " % reg + " | ".join(
                        ci(stats([a - b for a, b in zip(per[l], fbt["standard"][l])]), "%+.3f")
                        for l in range(layers)) + " |")
        md += handed_table(raw, target, fbt, layers)
    return md[1:]


def handed_table(raw, target, fbt, layers):
    """Each fused pass's layers minus the state that pass was handed (the
    previous pass's carried state at t-1), paired over the seeds: the fused
    input holds that state by construction, so only a layer reading more than
    it has computed something from it. Empty for results without it."""
    first = raw["runs"][str(raw["seeds"][0])]["fbt"]["probe"]["targets"][target]
    if not first.get("handed_state"):
        return []
    md = ["", "%s, fused:N minus the state it was handed (the previous pass's carried state "
          "at t-1; paired over the seeds):" % target, "",
          "| regime | handed state | " + " | ".join(
              "layer %d" % l if l < layers - 1 else "top" for l in range(layers)) + " |",
          "|---|---|" + "---|" * layers]
    for reg in first["handed_state"]:
        handed = per_seed(raw, lambda res: res["fbt"]["probe"]["targets"][target][
            "handed_state"][reg])
        md.append("| %s | %.3f | " % (reg, stats(handed)["mean"]) + " | ".join(
            ci(stats([a - b for a, b in zip(fbt[reg][l], handed)]), "%+.3f")
            for l in range(layers)) + " |")
    return md


CONTRACTION_PASSES = (2, 3, 4, 8, 16, 32)
# A change of the state below this is f32 rounding, not the map's.
ROUNDING = 1e-5


def contraction_table(raw):
    """The FBT's fed-back map over passes (fbt eval --contraction): the ratio
    of successive state changes, d_{k+1} / d_k with d_k the change from pass
    k to k+1, where pass k+1 can still change most of the prompt (k at most
    half its length: later passes are exact by causality and say nothing);
    then the state's RMS along soft generation and soft's per-position loss
    against standard's. A ratio near or above 1 is a map that does not
    contract. [] where no run measured it."""
    runs = [res["fbt"]["contraction"] for res in raw["runs"].values()
            if res.get("fbt", {}).get("contraction")]
    if not runs:
        return []
    c0 = runs[0]
    length = c0.get("prompt_length", 0)
    ks = [k for k in CONTRACTION_PASSES if k + 1 <= len(c0["contraction"]) and 2 * k <= length]
    prompts = ("%d prompts" % c0["prompts"]) if "prompts" in c0 else "Prompts"
    out = ["%s of %d tokens; d_k is the change of the state from pass k to k+1, over the "
           "positions pass k+1 can still change; mean [95%% t-interval] (min to max) over %d "
           "seeds." % (prompts, length, len(runs)), "",
           "| pass k | d_k | d_{k+1} / d_k |", "|---|---|---|"]
    for k in ks:
        d = stats([r["contraction"][k - 1] for r in runs])
        ratio = stats([r["contraction"][k] / r["contraction"][k - 1] for r in runs])
        out.append("| %d | %s | %s |" % (k, ci(d, "%.3g"), ci(ratio, "%.3f") if d["mean"] >=
                                         ROUNDING else "(f32 rounding: says nothing)"))
    rms = [r.get("soft_state_rms") or [] for r in runs]
    if all(rms):
        n = min(len(x) for x in rms)
        at = sorted({0, n // 4, n // 2, n - 1})
        out += ["", "Soft generation (greedy, %d tokens after the prompt; the context caps it): "
                "the carried state's RMS." % n, "",
                "| " + " | ".join("token %d" % (i + 1) for i in at) + " | largest |",
                "|" + "---|" * (len(at) + 1),
                "| " + " | ".join(ci(stats([x[i] for x in rms]), "%.3f") for i in at) +
                " | " + ci(stats([max(x[:n]) for x in rms]), "%.3f") + " |"]
    soft = [r.get("soft_loss_by_position") or [] for r in runs]
    std = [r.get("standard_loss_by_position") or [] for r in runs]
    if all(soft) and all(std):
        n = min(len(x) for x in soft)
        quarters = [(q * n // 4, (q + 1) * n // 4) for q in range(4)]
        def gap(a, b, i):
            return sum(soft[i][a:b]) / (b - a) - sum(std[i][a:b]) / (b - a)
        out += ["", "Teacher-forced over %d windows of the context: soft minus standard loss "
                "(nats per token) by quarter of the positions; a divergence along the "
                "recurrence grows with the position." % runs[0].get("sequences", 0), "",
                "| " + " | ".join("positions %d-%d" % (a + 1, b) for a, b in quarters) + " |",
                "|" + "---|" * 4,
                "| " + " | ".join(ci(stats([gap(a, b, i) for i in range(len(runs))]), "%+.3f")
                                  for a, b in quarters) + " |"]
    return out


def tables(raw):
    """{file: text} of every table the results build."""
    split = part(raw)
    spec = raw["spec"]
    # The recipe as the frontend resolved it (fbtc --describe --json's
    # "spec"); results recorded before describe carried it give the spec as
    # written, whose omitted keys took the defaults named below.
    resolved = raw.get("describe", {}).get("fbt", {}).get("spec", spec)
    fb, tr = resolved.get("feedback", {}), resolved.get("training", {})
    weights = {int(k): w for k, w in raw["schedule_weights"].items()}
    md = ["# Experiment: %s" % spec.get("name", "fbt"), "",
          "Data: %s. Every model trained under %d seeds (%s); losses on the **%s** part "
          "(%s), inference mode, nats per token." % (
              raw["data"]["name"], len(raw["seeds"]), ", ".join(map(str, raw["seeds"])), split,
              windows_scored(raw, split)),
          "",
          "FBT recipe: fusion %s, state %s, gate_norm %s, token_residual %s, aux_loss_weight %s; "
          "schedule %s, grad_passes %s." % (
              fb.get("fusion", "glu"), fb.get("state", "post_norm"), fb.get("gate_norm", True),
              fb.get("token_residual", True), fb.get("aux_loss_weight", 1.0),
              ", ".join("K=%d %.0f%%" % (k, 100 * w) for k, w in sorted(weights.items())),
              tr.get("grad_passes", 2)),
          "",
          "Command: `%s` at commit %s." % (" ".join(raw["command"]), raw["commit"]), "",
          "## Models", ""] + models_table(raw) + [
          "", "## Held-out loss per regime (continuation after a plain prompt)", ""] + \
        loss_table(raw, split) + ["", "## Feedback regimes against standard, same weights", ""] + \
        paired_table(raw, split) + ["", "## Tokens and FLOPs", ""]
    te = equivalence_table(raw, split) + [""] + curve_table(raw, split)
    md += te + ["", "## FBT per pass (whole windows, state fed back from t = 1; mean over seeds)",
                ""] + passes_table(raw, split)
    out = {"tokens_equivalence.md": "\n".join(te) + "\n"}
    ct = contraction_table(raw)
    if ct:
        md += ["", "## Contraction of the fed-back map (fbt eval --contraction)", ""] + ct
    if raw.get("depth"):
        d = depth_table(raw) + [""] + gain_table(raw)
        out["depth.md"] = "\n".join(d) + "\n"
        ops = raw["depth"]["ops"]
        what = ("a position carried through k permutations of 5 elements" if ops == "perm5"
                else "a digit through k updates %s mod 10" % " ".join(ops)) + \
            " (guessing gets %.0f%%)" % (100 * depth_chance(raw))
        md += ["", "## Depth task (greedy exact match, mean +- 95% t half-width over seeds)", "",
               "The task: %s, %.0f%% of the training bytes; asked: held-out problems only, at "
               "the depths whose held-out set holds as many as asked." % (
                   what, 100 * raw["depth"]["mix"]), ""] + d
    if raw.get("sft"):
        t = sft_table(raw)
        out["sft.md"] = "\n".join(t) + "\n"
        md += ["", "## Instruction tuning (SFT stage)", "",
               "Each of the FBT and the same-tokens plain model tuned from its weights for %d "
               "steps (peak rate %g, loss on the answers alone) on %d conversations asking "
               "sums of two two-digit numbers, answered plainly or with worked steps "
               "(scripts/sft_task.py); held-out questions asked before and after, greedy, "
               "exact match of the answer line." % (
                   raw["sft"]["steps"], raw["sft"]["lr"], raw["sft"]["count"]), ""] + t
    if raw.get("probe"):
        t = probe_table(raw)
        out["probe.md"] = "\n".join(t) + "\n"
        classes = any("accuracy" in line for line in t if line.startswith("**"))
        md += ["", "## Probes (fbt probe, test R^2%s)" % (
                   "; accuracy for the value target" if classes else ""), "",
               "Ridge probes of each layer's residual stream (block inputs, then the top "
               "state), fitted on 3/5 of the held-out windows, the regularization chosen on "
               "1/5 and R^2 given on the last 1/5; standard is plain prefill, fused:N the N-th "
               "pass of fused prefill. Mean +- the 95% t half-width over the seeds." +
               (" The value target (the depth task's running value, on its held-out "
                "problems) is a class: one ridge probe per value, the highest taken, scored "
                "by accuracy." if classes else ""), ""] + t
    md += ["", "## Plots", ""]
    for png, what in [("tokens_equivalence.png", "held-out loss against training tokens"),
                      ("probe.png", "probe R^2 per layer and regime"),
                      ("depth.png", "depth task accuracy against k"),
                      ("val_curves.png", "validation per pass against training FLOPs")]:
        if (png != "depth.png" or raw.get("depth")) and (png != "probe.png" or raw.get("probe")):
            md.append("![%s](%s)" % (what, png))
    out["report.md"] = "\n".join(md) + "\n"
    return out


def plots(raw, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    split = part(raw)
    first = raw["runs"][str(raw["seeds"][0])]
    # Tokens-equivalence of the first seed's curve, every seed's regimes.
    tokens_equivalence.plot(os.path.join(out, "tokens_equivalence.png"), plain_curve(first, split),
                            tokens_equivalence.table(plain_curve(first, split), {
                                k: v["loss"] for k, v in losses(first["fbt"], split)["regimes"].items()
                                if k in REGIMES}),
                            first["fbt"]["tokens"], raw["spec"].get("name", ""))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for label, r in first.items():
        if r.get("alias_of"):
            continue
        evals = r["metrics"]["evals"]
        xs = [e["step"] * r["tokens"] / r["steps"] * r["flops_per_token"] for e in evals]
        ax.plot(xs, [e["val_pass_losses"][0] for e in evals], label=label + " pass 1",
                linestyle="-" if r["kind"] == "fbt" else "--")
    ax.set_xlabel("training FLOPs (mean over the schedule)")
    ax.set_ylabel("validation loss (nats/token)")
    ax.set_title("Validation, seed %d" % raw["seeds"][0])
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "val_curves.png"), dpi=120)
    plt.close(fig)
    if raw.get("depth"):
        ks, rows = depth_rows(raw)
        fig, ax = plt.subplots(figsize=(7.5, 4.5))
        for label, reg, acc in rows:
            ys = [stats(acc[k])["mean"] for k in ks]
            err = [stats(acc[k])["half"] or 0 for k in ks]
            ax.errorbar([int(k) for k in ks], ys, yerr=err, marker=".", capsize=2,
                        linestyle="-" if label == "fbt" else "--", label="%s %s" % (label, reg))
        chance = 0.2 if raw["depth"]["ops"] == "perm5" else 0.1  # 5 positions, 10 digits
        ax.axhline(chance, color="black", linestyle=":", linewidth=1, label="guessing")
        ax.set_xlabel("k (updates)")
        ax.set_ylabel("exact match (held-out problems)")
        ax.set_ylim(0, 1)
        ax.legend(fontsize=6, ncol=2)
        fig.tight_layout()
        fig.savefig(os.path.join(out, "depth.png"), dpi=120)
        plt.close(fig)
    if raw.get("probe"):
        probe_plot(raw, out, plt)


def probe_plot(raw, out, plt):
    """A heat map per target (row) and model (column): R^2 by regime and layer."""
    rows, floors = probe_rows(raw)
    targets = list(floors)
    models = sorted({label for _, label, _, _ in rows}, key=lambda l: l != "fbt")
    fig, axes = plt.subplots(len(targets), len(models), squeeze=False,
                             figsize=(3.4 * len(models), 2.9 * len(targets)))
    for i, target in enumerate(targets):
        for j, label in enumerate(models):
            ax = axes[i][j]
            mine = [(reg, [stats(xs)["mean"] for xs in per]) for t, l, reg, per in rows
                    if t == target and l == label]
            grid = [vals for _, vals in mine]
            im = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto")
            ax.set_yticks(range(len(mine)))
            ax.set_yticklabels([reg for reg, _ in mine], fontsize=7)
            n = len(grid[0])
            ax.set_xticks(range(n))
            ax.set_xticklabels([str(k) if k < n - 1 else "top" for k in range(n)], fontsize=7)
            ax.set_title("%s, %s (%s, random %.2f)" % (
                target, label, "accuracy" if "accuracy" in probe_floor(raw, target, floors)
                else "R^2", stats(floors[target])["mean"]), fontsize=8)
            for y, vals in enumerate(grid):
                for x, v in enumerate(vals):
                    ax.text(x, y, "%.2f" % v, ha="center", va="center", fontsize=6,
                            color="white" if v < 0.5 else "black")
        axes[i][0].set_ylabel("regime")
    for ax in axes[-1]:
        ax.set_xlabel("layer")
    fig.tight_layout()
    fig.colorbar(im, ax=axes.ravel().tolist(), shrink=0.6, label="test R^2 (accuracy)")
    fig.savefig(os.path.join(out, "probe.png"), dpi=120)
    plt.close(fig)


def write(folder, out=None, split=None):
    raw = loaded(folder)
    out = out or folder
    os.makedirs(out, exist_ok=True)
    if split:  # a report folder of its own, rebuildable from what it holds
        raw["report_split"] = split
        with open(os.path.join(out, "results.json"), "w") as f:
            json.dump(raw, f, indent=1)
    for name, text in tables(raw).items():
        with open(os.path.join(out, name), "w") as f:
            f.write(text)
    plots(raw, out)


def check(folder):
    """The tables of `folder` that differ from what its results build."""
    bad = []
    for name, text in tables(loaded(folder)).items():
        path = os.path.join(folder, name)
        have = open(path).read() if os.path.exists(path) else None
        if have != text:
            bad.append(name)
    return bad


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("folder", help="a folder with the runner's results.json")
    ap.add_argument("--out", help="write there instead (default: the folder)")
    ap.add_argument("--split", choices=["validation", "test"],
                    help="with --out: show this part instead of the run's own")
    ap.add_argument("--check", action="store_true",
                    help="write nothing; exit 1 when a committed table differs")
    args = ap.parse_args()
    if args.check:
        bad = check(args.folder)
        for name in bad:
            print("%s: %s differs from what results.json builds" % (args.folder, name))
        if not bad:
            print("%s: every table is what results.json builds" % args.folder)
        return 1 if bad else 0
    if args.split and not args.out:
        sys.exit("experiment_report: --split rebuilds into another folder: give --out")
    write(args.folder, args.out, args.split)
    print("report: " + os.path.join(args.out or args.folder, "report.md"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
