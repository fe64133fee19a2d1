"""The PyTorch peer of the GPU check (bench/torch_fbt.py), one JSON line per result.

  gpu_peer.py train SPEC --passes 1 2 [--steps N] [--compile none|regional|full]
  gpu_peer.py decode SPEC --batch B --prompt P --tokens N

train: the same K-pass step as `fbt bench --train K` (the spec's batch and
sequence, AdamW, clipping), fp32 parameters and optimizer state (fused AdamW on
CUDA), the forward under torch.autocast(bfloat16) on CUDA: bf16 GEMMs with fp32
accumulation, like the compiled step. --compile regional compiles each block
and the head (one graph shared by the blocks), full the whole objective. Three
warm-up steps (they include compiling), then N timed steps.
decode: greedy decoding with a KV cache, fp32 weights (eager), standard and
soft; ms per decode step between the first and the last new token, as
bench/cpu_decode.py measures it.
Runs on CUDA when there is a GPU, else on the CPU (for dry runs).
"""

import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch_fbt as M  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def now():
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter()


def emit(obj):
    print(json.dumps(obj))
    sys.stdout.flush()


def train(args, c):
    torch.manual_seed(0)
    model = M.FBT(c).to(DEVICE)
    opt = M.make_optimizer(model, c, fused=DEVICE == "cuda")
    if args.compile != "none":
        M.compile_model(model, regional=args.compile == "regional")
    amp = torch.bfloat16 if DEVICE == "cuda" else None
    B, T, V = c["training"]["batch_size"], c["training"]["sequence_length"], c["vocab_size"]
    ids = torch.randint(1, V, (B, T), device=DEVICE)
    tgt = torch.randint(1, V, (B, T), device=DEVICE)
    mask = torch.ones(B, T, dtype=torch.bool, device=DEVICE)
    mask[:, 0] = False
    clip = c["training"]["grad_clip"]
    for k in args.passes:
        t0 = now()
        for _ in range(3):
            M.train_step(model, opt, ids, tgt, k, mask, clip, amp)
        t1 = now()
        for _ in range(args.steps):
            M.train_step(model, opt, ids, tgt, k, mask, clip, amp)
        s = now() - t1
        emit({"passes": k, "tokens_per_s": B * T * args.steps / s, "step_ms": 1e3 * s / args.steps,
              "warmup_s": t1 - t0, "compile": args.compile, "amp": "bf16" if amp else "none",
              "peak_mem_gib": torch.cuda.max_memory_allocated() / 2**30 if DEVICE == "cuda" else 0})


@torch.no_grad()
def decode(args, c):
    torch.manual_seed(0)
    model = M.FBT(c).to(DEVICE).eval()
    prompt = torch.randint(1, c["vocab_size"], (args.batch, args.prompt), device=DEVICE)
    out = {"batch": args.batch, "prompt_tokens": args.prompt, "new_tokens": args.tokens}
    for soft in (False, True):
        M.decode(model, prompt, 4, soft)
        t0 = now()
        M.decode(model, prompt, 1, soft)
        t1 = now()
        M.decode(model, prompt, args.tokens + 1, soft)
        t2 = now()
        out["soft" if soft else "standard"] = 1e3 * ((t2 - t1) - (t1 - t0)) / args.tokens
    emit(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=("train", "decode"))
    ap.add_argument("spec")
    ap.add_argument("--passes", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--steps", type=int, default=10)
    ap.add_argument("--compile", choices=("none", "regional", "full"), default="none")
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("--prompt", type=int, default=512)
    ap.add_argument("--tokens", type=int, default=64)
    args = ap.parse_args()
    if DEVICE == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = False  # fp32 means fp32 outside autocast
    (train if args.what == "train" else decode)(args, M.load_spec(args.spec))


if __name__ == "__main__":
    main()
