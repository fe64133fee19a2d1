#!/usr/bin/env python3
"""fbt states against the PyTorch reference: every layer's residual stream (each block's
input, then the top-layer state) under plain prefill and each fused pass, per prompt, per
layer, per pass.

    check_states.py --fbt FBT --bundle B.fbtb --spec SPEC.json --passes N [--workdir DIR]
                    [--atol 1e-5]

The bundle must be compiled from SPEC with fbtc --with-states. Parameters are the
reference's (seed 7, norm scales perturbed); three prompts of different lengths, each
starting with the document separator, go through the batch together. Tolerance per
tensor: max abs error <= atol * (1 + max|reference|) (fp32 against fp64). Prints a line
per (pass, layer) and PASS or FAIL.
"""

import argparse
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


def residuals(p, cfg, u):
    """[u, z after block 0, .., h]: block l's input for l < L, then the top state."""
    out, z = [u], u
    for l in range(cfg.L):
        z = R.block(z, p, l, cfg)
        out.append(z)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fbt", required=True)
    ap.add_argument("--bundle", required=True)
    ap.add_argument("--spec", required=True)
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--workdir")
    ap.add_argument("--atol", type=float, default=1e-5)
    args = ap.parse_args()
    workdir = args.workdir or tempfile.mkdtemp()
    os.makedirs(workdir, exist_ok=True)

    cfg = R.load_config(args.spec)
    params = R.init_params(cfg, 7, dtype=torch.float64, norm_noise=0.1)
    ckpt = os.path.join(workdir, "params.safetensors")
    st.save_file({k: v.to(torch.float32) for k, v in params.items()}, ckpt)
    import json
    with open(args.spec) as f:
        longest = json.load(f).get("inference", {}).get("max_prompt_length", 64)
    gen = np.random.default_rng(5)
    lengths = [min(n, longest) for n in (23, 6, 14)]
    T = max(lengths)
    rows = np.zeros((len(lengths), T), dtype=np.int64)
    for b, n in enumerate(lengths):
        rows[b, :n] = gen.integers(1, cfg.V, size=n)
        rows[b, 0] = cfg.bos_token_id
        rows[b, 1:n][rows[b, 1:n] == cfg.bos_token_id] = 1  # one document per prompt
    tokens = os.path.join(workdir, "tokens.safetensors")
    st.save_file({"input_ids": torch.tensor(rows, dtype=torch.int32),
                  "prompt_lengths": torch.tensor(lengths, dtype=torch.int32)}, tokens)
    out = os.path.join(workdir, "states.safetensors")
    r = subprocess.run([args.fbt, "states", args.bundle, "--ckpt", ckpt, "--tokens", tokens,
                        "--passes", str(args.passes), "--out", out],
                       capture_output=True, text=True)
    if r.returncode != 0:
        print("FAIL: fbt states exited with %d: %s" % (r.returncode, r.stderr.strip()))
        return 1
    got = st.load_file(out)

    failed, worst = False, 0.0
    for k in range(1, args.passes + 1):
        for l in range(cfg.L + 1):
            err, big = 0.0, 0.0
            for b, n in enumerate(lengths):
                ids = rows[b:b + 1, :n]
                mask = R.full_mask(1, n)
                _, _, inputs = R.multipass(params, cfg, ids, k, seed=0, jitter=False, mask=mask)
                ref = residuals(params, cfg, inputs[-1])[l][0].detach().numpy()
                mine = np.asarray(got["pass%d.residual.%d" % (k, l)], dtype=np.float64)[b, :n]
                err = max(err, float(np.abs(mine - ref).max()))
                big = max(big, float(np.abs(ref).max()))
            tol = args.atol * (1 + big)
            ok = err <= tol
            failed |= not ok
            worst = max(worst, err)
            print("pass %d  layer %d  max|ref| %.3e  max abs error %.3e  tolerance %.3e  %s"
                  % (k, l, big, err, tol, "ok" if ok else "FAIL"))
    print("%s: %d passes x %d layers, worst error %.3e" % (
        "FAIL" if failed else "PASS", args.passes, cfg.L + 1, worst))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
