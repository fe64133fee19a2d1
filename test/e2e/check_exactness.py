"""The exactness property on compiled code (DESIGN.md section 2).

usage: check_exactness.py --fbt FBT --bundle B.fbtb --spec SPEC.json [--workdir DIR]

The bundle is compiled from a spec with T = sequence_length passes, no jitter
and no prefix mix-in, so the feedback mask is 1 for t >= 1. Then the last
pass of the compiled training step must equal soft decoding over the same
tokens, position by position: this script runs `fbt step` (the parallel
T-pass objective) and `fbt score --mode soft` (the compiled recurrent
decoder, prompt length 1) on the same rows and compares the pass-T loss with
the loss of the decoder's logits (relative error <= 1e-5), and also checks
that the earlier passes' losses are not already equal (the property is about
pass T, not a trivially constant loss).
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
import fbt_reference as R  # noqa: E402
import safetensors_io as st  # noqa: E402


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print("FAIL: %s exited with %d: %s" % (cmd[1], r.returncode, r.stderr.strip()))
        sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fbt", required=True)
    ap.add_argument("--bundle", required=True)
    ap.add_argument("--spec", required=True)
    ap.add_argument("--workdir")
    args = ap.parse_args()
    wd = args.workdir or tempfile.mkdtemp()
    os.makedirs(wd, exist_ok=True)
    spec = json.load(open(args.spec))
    cfg = R.load_config(args.spec)
    B, T = spec["training"]["batch_size"], spec["training"]["sequence_length"]
    K = spec["training"]["passes"]
    assert K == T and spec["feedback"]["jitter"] == 0 and not spec["feedback"]["prefix_mixin"]

    params = R.init_params(cfg, 7, dtype=torch.float32, norm_noise=0.1)
    st.save_file(params, os.path.join(wd, "params.safetensors"))
    gen = np.random.default_rng(5)
    rows = gen.integers(1, cfg.V, size=(B, T + 1))
    rows[:, 0] = cfg.bos_token_id
    ids, targets = rows[:, :T], rows[:, 1:]
    st.save_file({"input_ids": torch.tensor(ids, dtype=torch.int32),
                  "targets": torch.tensor(targets, dtype=torch.int32),
                  "seed": torch.tensor([0], dtype=torch.int64),
                  "lr": torch.tensor([0.0], dtype=torch.float32)},
                 os.path.join(wd, "batch.safetensors"))
    run([args.fbt, "step", args.bundle, "--params", os.path.join(wd, "params.safetensors"),
         "--batch", os.path.join(wd, "batch.safetensors"), "--passes", str(K),
         "--out", os.path.join(wd, "step.safetensors")])
    pass_losses = np.asarray(st.load_file(os.path.join(wd, "step.safetensors"))["pass_losses"])[0]

    st.save_file({"input_ids": torch.tensor(ids, dtype=torch.int32),
                  "prompt_lengths": torch.ones(B, dtype=torch.int32)},
                 os.path.join(wd, "tokens.safetensors"))
    run([args.fbt, "score", args.bundle, "--ckpt", os.path.join(wd, "params.safetensors"),
         "--tokens", os.path.join(wd, "tokens.safetensors"), "--mode", "soft",
         "--out", os.path.join(wd, "logits.safetensors")])
    logits = torch.tensor(np.asarray(st.load_file(os.path.join(wd, "logits.safetensors"))["logits"]),
                          dtype=torch.float64)
    soft = float(torch.nn.functional.cross_entropy(
        logits.reshape(-1, cfg.V), torch.tensor(targets, dtype=torch.long).reshape(-1)))

    rel = abs(pass_losses[-1] - soft) / abs(soft)
    spread = abs(pass_losses[0] - soft) / abs(soft)
    print("pass losses (compiled %d-pass step): %s" % (K, " ".join("%.6f" % x for x in pass_losses)))
    print("soft decoding loss (compiled decoder): %.6f" % soft)
    print("pass %d vs soft decoding: relative difference %.3e" % (K, rel))
    print("pass 1 vs soft decoding: relative difference %.3e" % spread)
    ok = rel <= 1e-5 and spread > 1e-4
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
