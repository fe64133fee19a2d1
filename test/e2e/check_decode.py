"""Checks the compiled decoding regimes against the PyTorch reference.

usage: check_decode.py --fbt FBT --bundle B.fbtb --spec SPEC.json
                       --mode standard|soft|fused:N [--workdir DIR] [--alone]

Builds parameters (seed 7, perturbed norms) and rows of tokens (BOS first, no
other BOS) with different prompt lengths, runs `fbt score` (teacher-forced:
prefill each row's prompt, then feed the rest one token at a time) and
compares every predicted position's logits with the reference in fp64:
  standard   the K=1 forward over the whole row (prompt length 1)
  soft       the sequential soft recurrence: plain inputs over the prompt,
             u_t = fuse(e_t, h_{t-1}) after it
  fused:N    N prefill passes over the prompt (pass k>1 fused with pass
             k-1's shifted states), then the soft recurrence from there
Tolerance: max abs error <= 1e-4 (fp32 against fp64 over tens of positions;
--atol sets another).
With --alone it also scores every row by itself and requires the batched
logits to equal the lone ones (max abs difference <= 1e-5).
With --weights int8|bf16 (a bundle compiled with those inference weights)
the reference multiplies by the weight matrices rounded as the bundle's steps
read them (scripts/quant_quality.py's rounding: int8 in groups of 32 with
half scales, Q8_0's rule; bf16 to nearest even), the embedding's lookup
unrounded; the tolerance stays: the kernels must compute exactly that
product. With --activations int8 as well (fbtc --inference-activations int8)
every product's input rows are quantized per group of 32 too, as the
kernels do (d = max|x| / 127 in f32, q = x / d rounded to nearest even);
those of the prompt stay f32 (the prefill's products are wide: a library
GEMM of the dequantized weights). Standard mode only, its prompts one
token long. With --kv-cache f16 (fbtc --inference-kv-cache f16) attention
reads the keys and values rounded to f16, as the steps store them.
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
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import quant_quality as Q  # noqa: E402

ATOL = 1e-4
ALONE_ATOL = 1e-5


def reference_logits(p, cfg, row, prompt_len, mode):
    ids = np.asarray([row])
    if mode == "standard":
        return R.prefill(p, cfg, ids)[1][0]
    if mode == "soft":
        return R.soft_decode_teacher_forced(p, cfg, ids, prompt_len=prompt_len)[1][0]
    n = int(mode.split(":")[1]) if ":" in mode else 2
    s_n, logits_n, u_n = R.fused_prefill(p, cfg, ids[:, :prompt_len], n)
    e = R.embed(p, ids)
    inputs = [u_n[:, t] for t in range(prompt_len)]
    states = [s_n[:, t] for t in range(prompt_len)]
    logits = [logits_n[:, t] for t in range(prompt_len)]
    for t in range(prompt_len, ids.shape[1]):
        inputs.append(R.fuse(p, cfg, e[:, t], states[-1]))
        h = R.stack(p, cfg, torch.stack(inputs, dim=1))[:, t]
        states.append(R.carried(p, cfg, h))
        logits.append(R.head(p, cfg, h))
    return torch.stack(logits, dim=1)[0]


def quantized_rows(x):
    """x with its rows quantized per group of 32 as the int8-activation
    kernels do, then widened back (fp64)."""
    xs = x.to(torch.float32).numpy()
    out = np.empty_like(xs)
    for at in range(0, xs.shape[-1], 32):
        g = xs[..., at:at + 32]
        d = (np.abs(g).max(axis=-1, keepdims=True) / np.float32(127)).astype(np.float32)
        inv = np.where(d > 0, np.float32(1) / np.where(d > 0, d, 1), 0).astype(np.float32)
        out[..., at:at + 32] = np.rint(g * inv) * d
    return torch.from_numpy(out.astype(np.float64))


def with_int8_activations():
    """Every product by a weight quantizes its input rows, the prefill's
    and the decode steps' alike (the head's too)."""
    product = R.linear

    def linear(x, w):
        return product(quantized_rows(x), w)
    R.linear = linear
    R.head = lambda p, cfg, h: linear(R.rms_norm(h, p["model.norm.weight"], cfg.eps), HEAD[0])


HEAD = [None]  # the head's weight as the steps read it (with_inference_weights)


def with_inference_weights(params, cfg, form):
    """The parameters the steps of a bundle with `form` inference weights
    multiply by: every matrix rounded (the tied head too, through R.head);
    the embedding's lookup keeps the table unrounded."""
    if form == "f32":
        return params
    def rounded(name, w):
        r = Q.rounded(name, w.to(torch.float32).numpy(), "int8-g32" if form == "int8" else form)
        return torch.from_numpy(r.astype(np.float64))
    table = "model.embed_tokens.weight"
    out = {k: (rounded(k, v) if v.dim() == 2 and k != table else v) for k, v in params.items()}
    HEAD[0] = rounded(table, params[table])
    R.head = lambda p, cfg, h: R.linear(R.rms_norm(h, p["model.norm.weight"], cfg.eps), HEAD[0])
    return out


def run_score(args, workdir, tokens, lengths, tag):
    path = os.path.join(workdir, "tokens-%s.safetensors" % tag)
    st.save_file({"input_ids": torch.tensor(tokens, dtype=torch.int32),
                  "prompt_lengths": torch.tensor(lengths, dtype=torch.int32)}, path)
    out = os.path.join(workdir, "logits-%s.safetensors" % tag)
    cmd = [args.fbt, "score", args.bundle, "--ckpt", os.path.join(workdir, "params.safetensors"),
           "--tokens", path, "--mode", args.mode, "--out", out]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print("FAIL: fbt score exited with %d: %s" % (r.returncode, r.stderr.strip()))
        sys.exit(1)
    return np.asarray(st.load_file(out)["logits"], dtype=np.float64)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fbt", required=True)
    ap.add_argument("--bundle", required=True)
    ap.add_argument("--spec", required=True)
    ap.add_argument("--mode", required=True)
    ap.add_argument("--workdir")
    ap.add_argument("--length", type=int, default=20)
    ap.add_argument("--alone", action="store_true")
    ap.add_argument("--weights", choices=["f32", "int8", "bf16"], default="f32")
    ap.add_argument("--activations", choices=["f32", "int8"], default="f32")
    ap.add_argument("--kv-cache", choices=["f32", "f16"], default="f32")
    ap.add_argument("--atol", type=float, default=ATOL)
    args = ap.parse_args()
    workdir = args.workdir or tempfile.mkdtemp()
    os.makedirs(workdir, exist_ok=True)

    cfg = R.load_config(args.spec)
    params = R.init_params(cfg, 7, dtype=torch.float64, norm_noise=0.1)
    st.save_file({k: v.to(torch.float32) for k, v in params.items()},
                 os.path.join(workdir, "params.safetensors"))
    import json
    with open(args.spec) as f:
        batch = json.load(f).get("inference", {}).get("batch_size", 1)
    gen = np.random.default_rng(11)
    prompt_lengths = [1, 5, 12][:max(1, batch)] if args.mode == "standard" else [3, 7, 12][:max(1, batch)]
    if args.mode == "standard":
        prompt_lengths = [1] * len(prompt_lengths)
    rows = []
    for _ in prompt_lengths:
        row = gen.integers(1, cfg.V, size=args.length)
        row[0] = cfg.bos_token_id
        rows.append(row.tolist())

    got = run_score(args, workdir, rows, prompt_lengths, "batch")
    params = with_inference_weights(params, cfg, args.weights)
    if args.activations == "int8":
        if args.mode != "standard":
            ap.error("--activations int8 is for --mode standard")
        with_int8_activations()
    R.KV_CACHE_F16 = args.kv_cache == "f16"
    worst, failed = 0.0, False
    for b, (row, plen) in enumerate(zip(rows, prompt_lengths)):
        ref = reference_logits(params, cfg, row, plen, args.mode).detach().numpy()
        err = float(np.abs(got[b, plen - 1:] - ref[plen - 1:]).max())
        worst = max(worst, err)
        ok = err <= args.atol
        failed |= not ok
        print("row %d  prompt %2d  positions %2d..%2d  max abs error %.3e  %s"
              % (b, plen, plen - 1, len(row) - 1, err, "ok" if ok else "FAIL"))
    if args.alone:
        for b, (row, plen) in enumerate(zip(rows, prompt_lengths)):
            lone = run_score(args, workdir, [row], [plen], "row%d" % b)
            diff = float(np.abs(lone[0, plen - 1:] - got[b, plen - 1:]).max())
            ok = diff <= ALONE_ATOL
            failed |= not ok
            print("row %d  batched vs alone  max abs difference %.3e  %s"
                  % (b, diff, "ok" if ok else "FAIL"))
    print("%s: %s, worst error %.3e" % ("FAIL" if failed else "PASS", args.mode, worst))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
