#!/usr/bin/env python3
"""What lower-precision inference weights cost in held-out loss, per regime.

    /usr/bin/python3 scripts/quant_quality.py --bundle M.fbtb --run DIR [--run DIR ...]
        [--windows 1024] [--split test] [--prompt-fraction F] [--json OUT.json]
    /usr/bin/python3 scripts/quant_quality.py --compiled f32=A.fbtb --compiled int8=B.fbtb
        [--compiled bf16=C.fbtb] --run DIR [--run DIR ...] [--prompt TEXT] [--json OUT.json]
    /usr/bin/python3 scripts/quant_quality.py --from OUT.json   (the table again)

For each trained run (a folder of `fbt train`: latest.safetensors and its
run.json, which names its data and parts), writes checkpoints whose
weight matrices are rounded as an inference form would store them, and
scores every one with `fbt eval` on the same held-out windows (standard,
soft, fused:2, fused:3):

  f32             the run's own weights
  bf16            every matrix rounded to bfloat16 (nearest even)
  int8-g32        every matrix as int8 with a scale per group of 32 along its
                  rows (llama.cpp's Q8_0 rule: d = max|x| / 127, q =
                  round(x / d), d kept in half precision); a row whose length
                  is not a multiple of 32 ends in a shorter group
  int8-g32-trunk  the same, but the feedback path (feedback.*) left f32
  int8-row        int8 with one scale per row (per output channel)

Activations stay f32 (the compiled steps are unchanged): this measures the
weights' rounding alone. Norm scales and other vectors stay f32, as in
every inference form. Prints, per form and regime, the loss and its change
from f32 in percent: the mean over the runs, its 95% t-interval, and the
largest.

With --compiled FORM=BUNDLE (one of them f32) it scores each run's own
checkpoint with bundles compiled with `fbtc --inference-weights FORM`: the
generated kernels themselves (the session rounds the weights as it loads
them). With --prompt it also decodes the prompt greedily (--tokens new
tokens) in standard, soft and fused:2 with each bundle and says whether the
text is the f32 bundle's. With --spec (the runs' spec) it records each
run's training tokens and FLOPs (from its metrics' pass schedule), printed
above the table: every form scores the same checkpoints, so both are the
same for all of them.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "test",
                                "reference"))
import safetensors_io as st  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import experiment  # noqa: E402
import experiment_report  # noqa: E402

REGIMES = ["standard", "soft", "fused:2", "fused:3"]
GREEDY = ["standard", "soft", "fused:2"]
FORMS = ["f32", "bf16", "int8-g32", "int8-g32-trunk", "int8-row"]


def bf16(w):
    bits = w.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16 << 16  # nearest even
    return bits.astype(np.uint32).view(np.float32)


def int8_groups(w, group):
    """Rows of w in groups of `group` (the last shorter), each scaled by its
    max|x| / 127 kept in half precision, rounded half away from zero."""
    out = np.empty_like(w)
    cols = w.shape[-1]
    for at in range(0, cols, group):
        x = w[..., at:at + group].astype(np.float32)
        d = np.abs(x).max(axis=-1, keepdims=True) / np.float32(127)
        inv = np.where(d > 0, np.float32(1) / np.where(d > 0, d, 1), 0).astype(np.float32)
        q = np.clip(np.trunc(x * inv + np.copysign(np.float32(0.5), x)), -127, 127)
        out[..., at:at + group] = q * d.astype(np.float16).astype(np.float32)
    return out


def rounded(name, w, form):
    if w.ndim != 2 or name.startswith("optimizer.") or form == "f32":
        return w
    if form == "bf16":
        return bf16(w)
    if form == "int8-g32-trunk" and name.startswith("feedback."):
        return w
    if form in ("int8-g32", "int8-g32-trunk"):
        return int8_groups(w, 32)
    if form == "int8-row":
        return int8_groups(w, w.shape[-1])
    raise ValueError(form)


def evaluate(fbt, bundle, ckpt, run, windows, split, prompt_fraction=None):
    """fbt eval's loss per regime, on the run's own data and parts (each
    window's first `prompt_fraction` prefilled, fbt eval's 0.25 if None)."""
    data = []
    if prompt_fraction is not None:
        data = ["--prompt-fraction", repr(prompt_fraction)]
    if run.get("data"):
        data = ["--data", run["data"], "--val-fraction", repr(run.get("val_fraction", 0.1)),
                "--test-fraction", repr(run.get("test_fraction", 0.1))]
    out = subprocess.run([fbt, "eval", bundle, "--ckpt", ckpt, "--json", "--windows",
                          str(windows), "--split", split] + data, check=True,
                         capture_output=True, text=True).stdout
    regimes = json.loads(out)["regimes"]
    return {r: regimes[r]["loss"] for r in REGIMES}


def generate(fbt, bundle, ckpt, prompt, tokens, mode):
    return subprocess.run([fbt, "generate", bundle, "--ckpt", ckpt, "--mode", mode, "--prompt",
                           prompt, "--max-new-tokens", str(tokens), "--temperature", "0"],
                          check=True, capture_output=True, text=True).stdout


def training(fbt, spec, run):
    """The run's training tokens and FLOPs: each step's tokens at the FLOPs
    per token of its number of passes (`fbtc --describe` of `spec`, fbtc
    beside `fbt` in the build)."""
    fbtc = os.path.join(os.path.dirname(os.path.dirname(fbt)), "fbtc", "fbtc")
    describe = json.loads(subprocess.run([fbtc, spec, "--describe", "--json"], check=True,
                                         capture_output=True, text=True).stdout)
    per_step = describe["training"]["tokens_per_step"]
    steps, _ = experiment.read_metrics(os.path.join(run, "metrics.jsonl"))
    return {"tokens": per_step * len(steps),
            "flops": sum(per_step * experiment.flops_per_token(describe, s["passes"])
                         for s in steps)}


def compiled(args):
    """{run: {form: losses}, and "greedy": {form: {mode: same as f32}} with --prompt}."""
    bundles = dict(c.split("=", 1) for c in args.compiled)
    if "f32" not in bundles:
        raise SystemExit("quant_quality.py: --compiled needs an f32=BUNDLE")
    results = {}
    for run in args.run:
        ckpt = os.path.join(run, "latest.safetensors")
        with open(os.path.join(run, "run.json")) as f:
            recorded = json.load(f)
        results[run] = {form: evaluate(args.fbt, bundle, ckpt, recorded, args.windows, args.split,
                                       args.prompt_fraction)
                        for form, bundle in bundles.items()}
        if args.spec:
            results[run]["training"] = training(args.fbt, args.spec, run)
        if args.prompt:
            text = {form: {m: generate(args.fbt, bundle, ckpt, args.prompt, args.tokens, m)
                           for m in GREEDY} for form, bundle in bundles.items()}
            results[run]["greedy"] = {form: {m: text[form][m] == text["f32"][m] for m in GREEDY}
                                      for form in bundles if form != "f32"}
        print("%s: %s" % (run, json.dumps(results[run])), flush=True)
    return list(bundles), results


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fbt", default=os.path.join(os.environ.get("FBT_BUILD_DIR", "build"),
                                                  "tools", "fbt", "fbt"))
    ap.add_argument("--bundle")
    ap.add_argument("--run", action="append", help="a run folder (repeatable)")
    ap.add_argument("--from", dest="saved", help="print the table of a --json file and stop")
    ap.add_argument("--windows", type=int, default=1024)
    ap.add_argument("--split", default="test")
    ap.add_argument("--prompt-fraction", type=float,
                    help="each window's first F is the prompt the regimes prefill (fbt eval "
                         "--prompt-fraction; its default 0.25)")
    ap.add_argument("--json", help="also write the raw results here")
    ap.add_argument("--compiled", action="append", metavar="FORM=BUNDLE",
                    help="score with this bundle of inference weights FORM (repeatable)")
    ap.add_argument("--prompt", help="with --compiled: also compare greedy text")
    ap.add_argument("--tokens", type=int, default=120)
    ap.add_argument("--spec", help="with --compiled: the runs' spec, for their training FLOPs")
    args = ap.parse_args()
    if args.saved:
        with open(args.saved) as f:
            saved = json.load(f)
        args.windows, args.split = saved["windows"], saved["split"]
        args.prompt_fraction = saved.get("prompt_fraction")
        print(table(saved["runs"], args, saved["forms"],
                    experiment_training(args.saved, saved.get("training_from"))))
        return
    if args.compiled and args.run:
        forms, results = compiled(args)
        report(results, args, forms)
        save(results, args, forms)
        return
    if not args.bundle or not args.run:
        ap.error("--bundle and --run are required (or --compiled, or --from)")

    results = {}
    for run in args.run:
        ckpt = os.path.join(run, "latest.safetensors")
        tensors = st.load_file(ckpt)
        metadata = st.load_metadata(ckpt)
        results[run] = {}
        with open(os.path.join(run, "run.json")) as f:
            recorded = json.load(f)  # the run's data and parts
        with tempfile.TemporaryDirectory(prefix="quant-") as work:
            for form in FORMS:
                path = os.path.join(work, "latest.safetensors")
                st.save_file({n: rounded(n, w, form) for n, w in tensors.items()}, path,
                             metadata)
                results[run][form] = evaluate(args.fbt, args.bundle, path, recorded,
                                              args.windows, args.split,
                                              args.prompt_fraction)
                print("%s %s: %s" % (run, form, " ".join(
                    "%s %.4f" % (r, results[run][form][r]) for r in REGIMES)), flush=True)
    report(results, args, FORMS)
    save(results, args, FORMS)


def report(results, args, forms):
    print("\n" + table(results, args, forms))


def seed_of(run):
    """A run folder's seed-<N> component (the folder itself if none)."""
    return next((part for part in run.split("/") if part.startswith("seed-")), run)


def experiment_training(saved, source):
    """The training of runs from an experiment (`source`, its results.json,
    relative to the `saved` file): [{tokens, flops}] of its FBT runs."""
    if not source:
        return None
    with open(os.path.join(os.path.dirname(saved), source)) as f:
        raw = json.load(f)
    runs = [raw["runs"][str(s)]["fbt"] for s in raw["seeds"]]
    return [{"tokens": r["tokens"], "flops": experiment_report.training_flops(raw, r)}
            for r in runs]


def trained(results, given):
    """The line on the runs' training: each run's own record, or `given`
    (from the experiment that trained them)."""
    per_run = given or [results[run]["training"] for run in results
                        if "training" in results[run]]
    if not per_run:
        return None
    return ("each run trained on %.3g tokens, %.3g training FLOPs (mean over the runs); every "
            "form scores the same checkpoints, so both are the same for each form"
            % (np.mean([t["tokens"] for t in per_run]), np.mean([t["flops"] for t in per_run])))


def table(results, args, forms, given_training=None):
    """The loss per form and regime, and its change from f32 with its 95%
    t-interval over the runs; the runs' training tokens and FLOPs; with
    greedy text, how often it is the f32 bundle's."""
    runs = list(results)
    prompt = ("" if getattr(args, "prompt_fraction", None) is None else
              ", each window's first %g prefilled" % args.prompt_fraction)
    lines = ["%d runs (%s), %d windows of the %s part%s; loss (nats per token), mean over the "
             "runs, and its change from f32 in percent: mean [95%% t-interval], largest"
             % (len(runs), ", ".join(seed_of(r) for r in runs), args.windows,
                args.split, prompt)]
    line = trained(results, given_training)
    if line:
        lines.append(line)
    lines += ["", "| form | " + " | ".join(REGIMES) + " |", "|---|" + "---|" * len(REGIMES)]
    for form in forms:
        cells = []
        for r in REGIMES:
            loss = np.mean([results[run][form][r] for run in runs])
            change = [100 * (results[run][form][r] / results[run]["f32"][r] - 1) for run in runs]
            s = experiment_report.stats(change)
            interval = ("[%+.3f, %+.3f]" % (s["mean"] - s["half"], s["mean"] + s["half"])
                        if s["half"] is not None else "[one run]")
            cells.append("%.4f" % loss if form == "f32" else "%.4f (%+.3f%% %s, %+.3f%%)" % (
                loss, s["mean"], interval, max(change, key=abs)))
        lines.append("| %s | %s |" % (form, " | ".join(cells)))
    greedy = [results[run]["greedy"] for run in runs if "greedy" in results[run]]
    if greedy:
        lines.append("")
        for form in greedy[0]:
            same = sum(g[form][m] for g in greedy for m in GREEDY)
            lines.append("greedy text, %s against f32 (%s; %d runs): identical in %d of %d" % (
                form, ", ".join(GREEDY), len(greedy), same, len(greedy) * len(GREEDY)))
    return "\n".join(lines)


def save(results, args, forms):
    if args.json:
        with open(args.json, "w") as f:
            saved = {"command": sys.argv, "windows": args.windows, "split": args.split,
                     "regimes": REGIMES, "forms": forms, "runs": results}
            if args.prompt_fraction is not None:
                saved["prompt_fraction"] = args.prompt_fraction
            json.dump(saved, f, indent=1)


if __name__ == "__main__":
    main()
