#!/usr/bin/env python3
"""What lower-precision inference weights cost in held-out loss, per regime.

    /usr/bin/python3 scripts/quant_quality.py --bundle M.fbtb --run DIR [--run DIR ...]
        [--windows 1024] [--split test] [--json OUT.json]
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
weights' rounding alone, the quality side of `fbtc --inference-weights`
before its kernels exist. Norm scales and other vectors stay f32, as in
every inference form. Prints, per form and regime, the loss and its change
from f32 (mean over the runs, and the largest), in percent.
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

REGIMES = ["standard", "soft", "fused:2", "fused:3"]
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


def evaluate(fbt, bundle, ckpt, run, windows, split):
    """fbt eval's loss per regime, on the run's own data and parts."""
    data = []
    if run.get("data"):
        data = ["--data", run["data"], "--val-fraction", repr(run.get("val_fraction", 0.1)),
                "--test-fraction", repr(run.get("test_fraction", 0.1))]
    out = subprocess.run([fbt, "eval", bundle, "--ckpt", ckpt, "--json", "--windows",
                          str(windows), "--split", split] + data, check=True,
                         capture_output=True, text=True).stdout
    regimes = json.loads(out)["regimes"]
    return {r: regimes[r]["loss"] for r in REGIMES}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fbt", default=os.path.join(os.environ.get("FBT_BUILD_DIR", "build"),
                                                  "tools", "fbt", "fbt"))
    ap.add_argument("--bundle")
    ap.add_argument("--run", action="append", help="a run folder (repeatable)")
    ap.add_argument("--from", dest="saved", help="print the table of a --json file and stop")
    ap.add_argument("--windows", type=int, default=1024)
    ap.add_argument("--split", default="test")
    ap.add_argument("--json", help="also write the raw results here")
    args = ap.parse_args()
    if args.saved:
        with open(args.saved) as f:
            saved = json.load(f)
        args.windows, args.split = saved["windows"], saved["split"]
        print(table(saved["runs"], args))
        return
    if not args.bundle or not args.run:
        ap.error("--bundle and --run are required (or --from)")

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
                                              args.windows, args.split)
                print("%s %s: %s" % (run, form, " ".join(
                    "%s %.4f" % (r, results[run][form][r]) for r in REGIMES)), flush=True)
    report(results, args)
    save(results, args)


def report(results, args):
    print("\n" + table(results, args))


def table(results, args):
    """The loss per form and regime, and its change from f32."""
    runs = list(results)
    lines = ["%d runs, %d windows of the %s part; loss (nats per token), mean over the runs, "
             "and its change from f32 in percent (mean; largest in parentheses)"
             % (len(runs), args.windows, args.split), "",
             "| form | " + " | ".join(REGIMES) + " |", "|---|" + "---|" * len(REGIMES)]
    for form in FORMS:
        cells = []
        for r in REGIMES:
            loss = np.mean([results[run][form][r] for run in runs])
            change = [100 * (results[run][form][r] / results[run]["f32"][r] - 1) for run in runs]
            cells.append("%.4f" % loss if form == "f32" else "%.4f (%+.3f%%, %+.3f%%)" % (
                loss, np.mean(change), max(change, key=abs)))
        lines.append("| %s | %s |" % (form, " | ".join(cells)))
    return "\n".join(lines)


def save(results, args):
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"command": sys.argv, "windows": args.windows, "split": args.split,
                       "regimes": REGIMES, "forms": FORMS, "runs": results}, f, indent=1)


if __name__ == "__main__":
    main()
