"""GPU against CPU numerics on the tiny spec, in two halves.

  prepare DIR FBT CPU_BUNDLE SPEC     where the compiler and a BLAS are (the CPU side)
  check DIR FBT GPU_BUNDLE [--precision bf16|fp32] [--json FILE]   on the GPU machine
  emulate DIR [--precision bf16|fp32]  where prepare ran: the tolerances' margins

prepare writes the inputs into DIR: params.safetensors (seed 7, norm scales
perturbed, as the end-to-end checks make them), batch.safetensors (one [B, T]
batch with documents, seed 1234, a learning rate per step) and
tokens.safetensors (rows that start with BOS, prompts of 3, 7 and 12 tokens),
then the CPU results of the same commands check runs on the GPU:
  fbt step  --passes K --steps 2   K = 1, 2  -> cpu-step-k<K>.safetensors
  fbt score --mode M               standard, soft -> cpu-score-<M>.safetensors

check runs them with the GPU bundle and compares, one PASS/FAIL line each:
  loss of every pass and step, grad norm   relative error
  every gradient (first step)              max |gpu - cpu| / max |cpu|
  parameters after the two steps           max |gpu - cpu| against sum(lr); AdamW
      moves an element by about lr a step whatever its gradient's size, so where
      rounding flips a near-zero gradient's sign the element differs by up to 2 lr:
      the share of elements off by more than lr / 2 is bounded too
  logits of every predicted position       max |gpu - cpu| / max |cpu|
The tolerances (TOLERANCES) suit bf16 GEMMs with fp32 accumulation, or exact
fp32 GEMMs. emulate runs the same comparison on the fp32 PyTorch reference with
every GEMM's operands (forward and backward) rounded to bf16: what rounding alone
uses of each tolerance. check needs torch (for arrays) and nothing else;
prepare and emulate also need numpy and test/reference.
"""

import argparse
import json
import os
import struct
import subprocess
import sys
import tempfile

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PASSES = (1, 2)
STEPS = 2
MODES = ("standard", "soft")
PROMPTS = (3, 7, 12)
ROW_LENGTH = 40

# `emulate` shows what rounding alone uses of them: with bf16 GEMM operands the
# worst gradient is 1.1e-2 of its max, logits 3e-3, the loss 3e-6, 0.2% of the
# parameters off by over lr/2 and the worst by 1.9 sum(lr) (Adam's second step
# can move an element by more than lr); in fp32, 1e-6 for every gradient.
# The default GPU bundle also stores the training step's activations in bf16
# (each stored value rounded by up to 2^-9 relative, many times along the
# step), which emulate does not model: the training tolerances allow for it
# (the decoding steps keep f32 activations).
TOLERANCES = {
    # bf16 activations and tensor-core GEMMs (8-bit mantissa), fp32
    # accumulation, parameters and optimizer state
    "bf16": {"loss": 1e-2, "grad_norm": 3e-2, "grad": 5e-2, "logits": 2e-2,
             "param_max_lr": 4.0, "param_share": 0.05},
    # fp32 GEMMs: only the order of summation differs from the CPU
    "fp32": {"loss": 1e-5, "grad_norm": 1e-4, "grad": 1e-4, "logits": 1e-4,
             "param_max_lr": 0.02, "param_share": 0.001},
}


def load(path):
    """{name: float64 tensor} from a safetensors file (F32, I32, I64 only)."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header, data = json.loads(raw[8:8 + n]), bytearray(raw[8 + n:])
    types = {"F32": (torch.float32, 4), "I32": (torch.int32, 4), "I64": (torch.int64, 8)}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        (dtype, size), (begin, end) = types[info["dtype"]], info["data_offsets"]
        t = (torch.frombuffer(data, dtype=dtype, count=(end - begin) // size, offset=begin)
             if end > begin else torch.zeros(0, dtype=dtype))
        out[name] = t.reshape(info["shape"]).to(torch.float64)
    return out


def run(cmd, env=None):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True, env=env)
    if r.returncode != 0:
        raise RuntimeError("%s exited with %d: %s" % (" ".join(cmd[:2]), r.returncode,
                                                      r.stdout.strip()[-500:]))


def run_all(fbt, bundle, d, out_dir, env=None):
    """fbt step for each K and fbt score for each mode: {tag: results file}."""
    files = {}
    for k in PASSES:
        files["k%d" % k] = os.path.join(out_dir, "step-k%d.safetensors" % k)
        run([fbt, "step", bundle, "--params", os.path.join(d, "params.safetensors"),
             "--batch", os.path.join(d, "batch.safetensors"), "--passes", str(k),
             "--steps", str(STEPS), "--out", files["k%d" % k]], env)
    for m in MODES:
        files[m] = os.path.join(out_dir, "score-%s.safetensors" % m)
        run([fbt, "score", bundle, "--ckpt", os.path.join(d, "params.safetensors"),
             "--tokens", os.path.join(d, "tokens.safetensors"), "--mode", m,
             "--out", files[m]], env)
    return files


def prepare(args):
    import numpy as np
    sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
    sys.path.insert(0, os.path.join(ROOT, "test", "reference"))
    import check_train_step as C
    import fbt_reference as R
    import safetensors_io as st

    d = args.dir
    os.makedirs(d, exist_ok=True)
    cfg = R.load_config(args.spec)
    params = C.make_params(cfg)
    ids, targets, seed, lrs = C.make_batch(cfg, STEPS)
    st.save_file({n: w.numpy().astype(np.float32) for n, w in params.items()},
                 os.path.join(d, "params.safetensors"))
    st.save_file({"input_ids": ids, "targets": targets,
                  "seed": np.array([seed], dtype=np.int64), "lr": lrs},
                 os.path.join(d, "batch.safetensors"))
    rows = np.random.default_rng(11).integers(1, cfg.V, size=(len(PROMPTS), ROW_LENGTH))
    rows[:, 0] = cfg.bos_token_id
    st.save_file({"input_ids": rows.astype(np.int32),
                  "prompt_lengths": np.array(PROMPTS, dtype=np.int32)},
                 os.path.join(d, "tokens.safetensors"))
    files = run_all(args.fbt, args.bundle, d, d)
    for tag, path in files.items():
        os.replace(path, os.path.join(d, "cpu-" + os.path.basename(path)))
    print("numerics inputs and CPU results in %s" % d)


class Report:
    """PASS/FAIL rows: (what, error, tolerance, ok), printed as they come."""

    def __init__(self, precision):
        self.precision, self.rows = precision, []

    def add(self, what, err, tol, note=""):
        ok = bool(err <= tol)  # NaN fails
        self.rows.append({"check": what, "error": float(err), "tolerance": tol, "ok": ok})
        print("  [%s] %-46s %10.3e <= %.1e  %s%s" % (self.precision, what, err, tol,
                                                    "PASS" if ok else "FAIL", note))
        sys.stdout.flush()


def rel(got, ref):
    return float(((got - ref).abs() / ref.abs().clamp_min(1e-30)).max())


def of_max(got, ref):
    return float((got - ref).abs().max() / ref.abs().max().clamp_min(1e-30))


def compare_step(rep, k, cpu, gpu, lrs, tol):
    rep.add("K=%d loss of each pass and step (rel)" % k,
            rel(gpu["pass_losses"], cpu["pass_losses"]), tol["loss"])
    rep.add("K=%d global grad norm (rel)" % k, rel(gpu["grad_norm"], cpu["grad_norm"]),
            tol["grad_norm"])
    names = sorted(n[5:] for n in cpu if n.startswith("grad."))
    for n in names:
        rep.add("K=%d grad[%s]" % (k, n.replace("model.", "").replace(".weight", "")),
                of_max(gpu["grad." + n], cpu["grad." + n]), tol["grad"])
    lr = float(lrs.sum())
    worst, worst_name, off, count = 0.0, "", 0, 0
    for n in names:
        diff = (gpu[n] - cpu[n]).abs()
        if float(diff.max()) >= worst:
            worst, worst_name = float(diff.max()), n
        off += int((diff > lr / 2).sum())
        count += diff.numel()
    rep.add("K=%d params after %d steps, max err / sum(lr)" % (k, STEPS), worst / lr,
            tol["param_max_lr"], "  (worst: %s)" % worst_name)
    rep.add("K=%d params: share off by > sum(lr)/2" % k, off / count, tol["param_share"])


def compare_logits(rep, mode, cpu, gpu):
    errs = []
    for row, plen in enumerate(PROMPTS):
        errs.append(of_max(gpu[row, plen - 1:], cpu[row, plen - 1:]))
    rep.add("%s decoding logits, max err / max|cpu|" % mode, max(errs),
            TOLERANCES[rep.precision]["logits"])


def compare_all(rep, d, files):
    """Every check of the results in `files` against the CPU's in `d`."""
    lrs = load(os.path.join(d, "batch.safetensors"))["lr"]
    for k in PASSES:
        cpu = load(os.path.join(d, "cpu-step-k%d.safetensors" % k))
        compare_step(rep, k, cpu, load(files["k%d" % k]), lrs, TOLERANCES[rep.precision])
    for m in MODES:
        cpu = load(os.path.join(d, "cpu-score-%s.safetensors" % m))["logits"]
        compare_logits(rep, m, cpu, load(files[m])["logits"])


def emulate(d, out_dir, precision):
    """The results the GPU would give if GEMM rounding were its only difference: the
    fp32 reference with every GEMM's operands rounded to `precision` (bf16 or fp32)."""
    import numpy as np
    sys.path[:0] = [os.path.join(ROOT, "test", p) for p in ("e2e", "reference")]
    import check_decode as D
    import check_train_step as C
    import fbt_reference as R
    import safetensors_io as st

    def rounded(x):
        return x.to(torch.bfloat16).to(x.dtype) if precision == "bf16" else x

    class Gemm(torch.autograd.Function):  # y = x W^T; the backward GEMMs round too
        @staticmethod
        def forward(ctx, x, w):
            ctx.save_for_backward(x, w)
            return rounded(x) @ rounded(w).t()

        @staticmethod
        def backward(ctx, g):
            x, w = ctx.saved_tensors
            g2, x2 = rounded(g).reshape(-1, g.shape[-1]), rounded(x).reshape(-1, x.shape[-1])
            return rounded(g) @ rounded(w), g2.t() @ x2

    R.linear = Gemm.apply
    cfg = R.load_config(os.path.join(d, "..", "tiny.json"))
    params = C.make_params(cfg)
    ids, targets, seed, lrs = C.make_batch(cfg, STEPS)
    files = {}
    for k in PASSES:
        files["k%d" % k] = os.path.join(out_dir, "step-k%d.safetensors" % k)
        st.save_file(C.emulated_output(params, cfg, ids, targets, k, seed, lrs), files["k%d" % k])
    tokens = st.load_file(os.path.join(d, "tokens.safetensors"))
    rows = list(zip(tokens["input_ids"].tolist(), tokens["prompt_lengths"].tolist()))
    with torch.no_grad():
        for m in MODES:
            files[m] = os.path.join(out_dir, "score-%s.safetensors" % m)
            logits = [D.reference_logits(R.cast_params(params, torch.float32), cfg, r, n, m)
                      for r, n in rows]
            st.save_file({"logits": torch.stack(logits).numpy().astype(np.float32)}, files[m])
    return files


def check(args):
    d = args.dir
    rep = Report(args.precision)
    env = dict(os.environ)
    if args.env:
        name, _, value = args.env.partition("=")
        env[name] = value
    with tempfile.TemporaryDirectory(prefix="fbt-gpu-") as tmp:
        if args.cmd == "emulate":
            files = emulate(d, tmp, args.precision)
        else:
            files = run_all(args.fbt, args.bundle, d, tmp, env)
        compare_all(rep, d, files)
    failed = [r for r in rep.rows if not r["ok"]]
    print("  [%s] %s: %d of %d checks passed" % (args.precision, "FAIL" if failed else "PASS",
                                                len(rep.rows) - len(failed), len(rep.rows)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"precision": args.precision, "checks": rep.rows,
                       "passed": not failed}, f, indent=1)
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("dir"), p.add_argument("fbt"), p.add_argument("bundle"), p.add_argument("spec")
    c = sub.add_parser("check")
    c.add_argument("dir"), c.add_argument("fbt"), c.add_argument("bundle")
    c.add_argument("--precision", choices=sorted(TOLERANCES), default="bf16")
    c.add_argument("--env", help="NAME=VALUE set for fbt (e.g. the exact-fp32 GEMM switch)")
    c.add_argument("--json", help="write the checks here")
    e = sub.add_parser("emulate")
    e.add_argument("dir")
    e.add_argument("--precision", choices=sorted(TOLERANCES), default="bf16")
    e.set_defaults(env=None, json=None)
    args = ap.parse_args()
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    return prepare(args) if args.cmd == "prepare" else check(args)


if __name__ == "__main__":
    sys.exit(main())
