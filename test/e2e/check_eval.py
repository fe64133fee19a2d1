#!/usr/bin/env python3
"""Checks `fbt eval`'s losses against the PyTorch reference.

    check_eval.py --fbt FBT --bundle BUNDLE.fbtb --spec SPEC.json [--ckpt CKPT]
                  [--workdir DIR]

1. Takes the parameters of CKPT (a trained model, so that passes and regimes differ), or
   writes init_params(seed 7) with perturbed norm scales; writes a text file of random
   printable bytes (one document: BOS, then the bytes).
2. Runs  FBT eval BUNDLE --ckpt params --data text --windows B --json
   on the test part (one document, so the last tenth of the tokens): one batch of B
   windows of T tokens (the spec's training shape), spread over the part's W windows
   (window i of B at floor(i * W / B) * T).
3. Recomputes in fp64 with the reference, on the same windows:
     per pass k = 1..8   the mean next-token loss of pass k over whole windows, the state
                         fed back from t = 1 (no jitter, no prefix mix-in): what the
                         compiled eval_k8 step computes
     per regime          each window's first P = T/4 tokens are the prompt; the loss of
                         predicting tokens P..T from positions P-1..T-1, with the inputs
                         after the prompt standard (plain), soft (the sequential
                         recurrence) or fused:2 (two prefill passes, then soft): what the
                         compiled decoder computes, teacher-forced
   and compares: relative error <= 1e-4; and the standard errors beside the losses: over
   the windows for standard, and for soft's paired difference from standard. Prints each
   figure and PASS or FAIL.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
sys.path.insert(0, HERE)
import fbt_reference as R  # noqa: E402
import safetensors_io as st  # noqa: E402
from check_decode import reference_logits  # noqa: E402

RTOL = 1e-4


def ce(logits, targets):
    return float(R.cross_entropy(logits, targets))


def parse_args():
    """The command line (the usage above)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--fbt", required=True)
    ap.add_argument("--bundle", required=True)
    ap.add_argument("--spec", required=True)
    ap.add_argument("--ckpt")
    ap.add_argument("--workdir")
    return ap.parse_args()


def load_params(cfg, ckpt, workdir):
    """(parameters in fp64, their checkpoint): CKPT's, or init_params(seed 7)
    with perturbed norm scales, written to the workdir."""
    if ckpt:
        saved = st.load_file(ckpt)
        params = R.init_params(cfg, 7, dtype=torch.float64)
        for k in params:
            params[k] = torch.as_tensor(np.asarray(saved[k]), dtype=torch.float64)
        return params, ckpt
    params = R.init_params(cfg, 7, dtype=torch.float64, norm_noise=0.1)
    ckpt = os.path.join(workdir, "params.safetensors")
    st.save_file({k: v.to(torch.float32) for k, v in params.items()}, ckpt)
    return params, ckpt


def write_text(cfg, workdir):
    """(the text file, its test part's tokens): random printable bytes, one
    document (BOS, then the bytes)."""
    B, T = cfg.batch_size, cfg.sequence_length
    # Enough text that the test tenth holds one batch of windows, and more.
    gen = np.random.default_rng(5)
    n = 14 * (B * T + 1)
    text = bytes(gen.integers(32, 127, size=n).astype(np.uint8))
    data = os.path.join(workdir, "text.txt")
    with open(data, "wb") as f:
        f.write(text)
    tokens = [cfg.bos_token_id] + list(text)
    return data, tokens[len(tokens) - int(len(tokens) * 0.1):]


def reference_figures(params, cfg, ids, targets, P):
    """The figures fbt eval gives, recomputed in fp64 on the same windows: the
    loss per pass and per regime, and the standard errors beside them."""
    B = len(ids)
    with torch.no_grad():
        mask = R.feedback_mask(ids, cfg, 0, prefix_mixin=False)
        _, logits, _ = R.multipass(params, cfg, ids, 8, seed=0, jitter=False, mask=mask)
        want = {"pass %d" % (k + 1): ce(l, targets) for k, l in enumerate(logits)}
        cont = targets[:, P - 1:]
        per_window = {}
        for mode in ["standard", "soft", "fused:2"]:
            rows = [reference_logits(params, cfg, list(ids[w]), P, mode)[P - 1:]
                    for w in range(B)]
            want[mode] = ce(torch.stack(rows), cont)
            per_window[mode] = np.array([ce(rows[w][None], cont[w:w + 1]) for w in range(B)])
        se = lambda v: float(np.std(v, ddof=1) / math.sqrt(len(v)))  # noqa: E731
        want["standard s.e."] = se(per_window["standard"])
        want["soft - standard"] = float(np.mean(per_window["soft"] - per_window["standard"]))
        want["its s.e."] = se(per_window["soft"] - per_window["standard"])
    return want


def fbt_figures(got):
    """The same figures, by the same names, from fbt eval's JSON."""
    have = {"pass %d" % (k + 1): v for k, v in enumerate(got["passes"])}
    for mode in ["standard", "soft", "fused:2"]:
        have[mode] = got["regimes"][mode]["loss"]
    have["standard s.e."] = got["regimes"]["standard"]["se"]
    have["soft - standard"] = got["regimes"]["soft"]["minus_standard"]["mean"]
    have["its s.e."] = got["regimes"]["soft"]["minus_standard"]["se"]
    return have


def compare(want, got, expected_tokens, P, W):
    """Prints each figure against the reference, then bpb and the windows
    fbt eval says it took; True where any is off."""
    have = fbt_figures(got)
    failed = False
    for name, ref in want.items():
        err = abs(have[name] - ref) / max(abs(ref), 1e-3)
        ok = err <= RTOL
        failed |= not ok
        print("%-9s fbt %.6f  reference %.6f  relative error %.2e  %s"
              % (name, have[name], ref, err, "ok" if ok else "FAIL"))
    bpb = got["regimes"]["standard"]["bpb"]
    ok = abs(bpb - have["standard"] / math.log(2)) < 1e-9
    failed |= not ok
    print("bpb = loss / ln 2 (one byte per token)  %s" % ("ok" if ok else "FAIL"))
    ok = (got["tokens"] == expected_tokens and got["prompt_length"] == P
          and got["windows_in_part"] == W and got["split"] == "test")
    failed |= not ok
    print("tokens %d, prompt %d, %d of %d test windows  %s" % (
        got["tokens"], got["prompt_length"], got["windows"], got["windows_in_part"],
        "ok" if ok else "FAIL"))
    return failed


def main():
    """Runs fbt eval and checks it against the reference; 1 on any failure."""
    args = parse_args()
    workdir = args.workdir or tempfile.mkdtemp()
    os.makedirs(workdir, exist_ok=True)

    cfg = R.load_config(args.spec)
    B, T = cfg.batch_size, cfg.sequence_length
    params, ckpt = load_params(cfg, args.ckpt, workdir)
    data, test = write_text(cfg, workdir)
    W = (len(test) - 1) // T
    offsets = [(i * W // B) * T for i in range(B)]
    assert W > B and offsets[-1] > (B - 1) * T  # spread, not the first B windows

    cmd = [args.fbt, "eval", args.bundle, "--ckpt", ckpt, "--data", data,
           "--windows", str(B), "--json"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print("FAIL: fbt eval exited with %d: %s" % (r.returncode, r.stderr.strip()))
        return 1
    got = json.loads(r.stdout)

    ids = np.array([test[o:o + T] for o in offsets])
    targets = np.array([test[o + 1:o + T + 1] for o in offsets])
    P = max(1, min(T - 1, int(round(0.25 * T))))
    want = reference_figures(params, cfg, ids, targets, P)
    failed = compare(want, got, B * (T - P + 1), P, W)
    print("%s: %d figures" % ("FAIL" if failed else "PASS", len(want) + 2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
