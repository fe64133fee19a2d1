#!/usr/bin/env python3
"""Checks the compiled training step of a bundle against the PyTorch reference.

    check_train_step.py --fbt FBT --bundle BUNDLE.fbtb --spec SPEC.json --passes K
                        [--steps 3] [--workdir DIR] [--mask]

1. Makes the inputs: parameters from init_params(seed 7) with the norm scales perturbed
   (1 + 0.1 * randn) so their gradients are exercised; a batch of [B, T] token ids (B, T
   from the spec's training section) with BOS tokens inserted mid-row and two in a row;
   targets = the next token, -1 at the last position; seed 1234; one learning rate per step.
2. Writes params.safetensors (F32, the checkpoint names) and batch.safetensors
   (input_ids I32 [B, T], targets I32 [B, T], seed I64 [1], lr F32 [steps]).
3. Runs  FBT step BUNDLE --params params.safetensors --batch batch.safetensors
             --passes K --steps N --out out.safetensors
   and reads out.safetensors: loss F32 [N], pass_losses F32 [N, K], grad_norm F32 [N],
   grad.<name> (the first step's gradients, before clipping) and <name> (the parameters
   after N steps). Every step uses the same batch and seed.
4. Computes the same N steps with the reference in fp64 and compares:
     loss, pass losses, grad norm     relative error <= 1e-4
     every gradient                   max abs error <= 1e-5 + 1e-3 * max|reference|
     parameters after N steps         max abs error <= 1e-5 + 0.01 * sum(lr)
       (where a gradient is near zero, AdamW's m / sqrt(v) is decided by rounding, so an
       fp32 run may move such an element by up to lr per step differently: 1% of that;
       where the first gradient g is within a few Adam epsilons of zero, the step
       g / (|g| + eps) turns steeply with g, so each element is also allowed what the
       tensor's worst gradient error d can turn it: sum(lr) * (f(|g| + d) - f(|g| - d)),
       f(x) = x / (|x| + eps))
   With --steps 1 it also applies the reference AdamW to the runtime's own gradients and
   compares with the runtime's parameters (max abs error <= 1e-7 + 4 fp32 ulps of max|p|):
   the optimizer alone.
   prints the worst error of every tensor and exits 1 on any failure, naming the tensors.

The jitter, fusion, prefix mix-in and optimizer settings come from --spec, which must be the
spec the bundle was compiled from (for a run without jitter, compile and pass a spec whose
feedback.jitter is 0).

--emulate runs no binary: it writes out.safetensors from the reference itself in fp32, which
checks this script and shows how much of each tolerance fp32 arithmetic alone uses.
"""

import argparse
import os
import subprocess
import sys
import tempfile
from collections import OrderedDict

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
import fbt_reference as R  # noqa: E402
import safetensors_io as st  # noqa: E402

PARAM_SEED = 7
BATCH_SEED = 1234
SCALAR_RTOL = 1e-4
GRAD_ATOL, GRAD_RTOL = 1e-5, 1e-3
PARAM_ATOL = 1e-5
PARAM_LR_SHARE = 0.01
# One step from the runtime's own gradients (--steps 1 only): 1e-7 plus 4 fp32 ulps of the
# largest parameter (storing a norm scale near 1 in fp32 alone rounds by up to 6e-8).
OPTIMIZER_ATOL, OPTIMIZER_ULPS = 1e-7, 2.0 ** -21


def make_params(cfg):
    """fp32 parameters: init_params(seed 7), norm scales 1 + 0.1 * randn."""
    return R.init_params(cfg, PARAM_SEED, dtype=torch.float32, norm_noise=0.1)


def make_batch(cfg, steps, mask=False):
    """(ids [B, T] int32, targets [B, T] int32, seed, lr float32 [steps]).

    mask: targets as instruction data has them: in each row the first 40% of the
    positions (a prompt) and every third one after (the user's turns) are ignored (-1),
    and row 0 has a stretch of four ignored targets between answers."""
    B, T = cfg.batch_size, cfg.sequence_length
    rng = np.random.default_rng(BATCH_SEED)
    tokens = np.array([v for v in range(cfg.V) if v != cfg.bos_token_id])
    ids = rng.choice(tokens, size=(B, T)).astype(np.int32)
    # A couple of documents: BOS a third and two thirds into row 0, two BOS in a row
    # mid-way through row 1 (a one-position document).
    bos = cfg.bos_token_id
    if T >= 3:
        ids[0, T // 3] = bos
        ids[0, 2 * T // 3] = bos
    if B > 1 and T >= 4:
        ids[1, T // 2] = bos
        ids[1, T // 2 + 1] = bos
    targets = np.full((B, T), -1, dtype=np.int32)
    targets[:, :-1] = ids[:, 1:]
    if mask:
        targets[:, : (2 * T) // 5] = -1
        targets[:, (2 * T) // 5 :: 3] = -1
        targets[0, (3 * T) // 5 : (3 * T) // 5 + 4] = -1
    # A decaying learning rate, so that each step's lr is seen to be used.
    lr = np.array([cfg.learning_rate * 0.5 ** i for i in range(steps)], dtype=np.float32)
    return ids, targets, BATCH_SEED, lr


def reference_steps(params32, cfg, ids, targets, K, seed, lrs, dtype):
    """The reference's N steps from the fp32 parameters, computed in `dtype`."""
    params = R.cast_params(params32, dtype)
    return R.train_steps(params, cfg, ids.astype(np.int64), targets.astype(np.int64), K,
                         seed, [float(lr) for lr in lrs])


def emulated_output(params32, cfg, ids, targets, K, seed, lrs):
    """What the runtime should write, computed by the reference in fp32."""
    rec = reference_steps(params32, cfg, ids, targets, K, seed, lrs, torch.float32)
    out = {
        "loss": np.array(rec["loss"], dtype=np.float32),
        "pass_losses": np.array(rec["pass_losses"], dtype=np.float32),
        "grad_norm": np.array(rec["grad_norm"], dtype=np.float32),
    }
    for name, g in rec["first_grads"].items():
        out["grad." + name] = g.numpy().astype(np.float32)
    for name, w in rec["params"].items():
        out[name] = w.numpy().astype(np.float32)
    return out


class Comparison:
    """Collects rows of (tensor, shape, max|ref|, worst error, tolerance, ok)."""

    def __init__(self):
        self.rows = []
        self.failures = []

    def _get(self, out, name, shape):
        if name not in out:
            self.failures.append("%s: missing from the runtime's output" % name)
            self.rows.append((name, "missing", "", "", "", "FAIL"))
            return None
        got = np.asarray(out[name], dtype=np.float64)
        if tuple(got.shape) != tuple(shape):
            self.failures.append("%s: shape %s, expected %s" % (name, list(got.shape),
                                                                list(shape)))
            self.rows.append((name, str(list(got.shape)), "", "", "", "FAIL"))
            return None
        if not np.isfinite(got).all():
            self.failures.append("%s: holds NaN or Inf" % name)
            self.rows.append((name, str(list(got.shape)), "", "non-finite", "", "FAIL"))
            return None
        return got

    def _row(self, name, ref, err, tol, ok, what):
        self.rows.append((name, str(list(ref.shape)), "%.3e" % np.abs(ref).max(),
                          "%.3e" % err, "%.3e" % tol, "ok" if ok else "FAIL"))
        if not ok:
            self.failures.append("%s: %s %.3e exceeds %.3e" % (name, what, err, tol))

    def relative(self, out, name, ref, rtol):
        """Elementwise |got - ref| <= rtol * |ref|; reports the worst relative error."""
        ref = np.asarray(ref, dtype=np.float64)
        got = self._get(out, name, ref.shape)
        if got is None:
            return
        rel = np.abs(got - ref) / np.maximum(np.abs(ref), 1e-30)
        err = float(rel.max())
        self._row(name, ref, err, rtol, err <= rtol, "relative error")

    def absolute(self, out, name, ref, atol, rtol_of_max=0.0):
        """max |got - ref| <= atol + rtol_of_max * max|ref|."""
        ref = np.asarray(ref, dtype=np.float64)
        got = self._get(out, name, ref.shape)
        if got is None:
            return
        err = float(np.abs(got - ref).max())
        tol = atol + rtol_of_max * float(np.abs(ref).max())
        self._row(name, ref, err, tol, err <= tol, "max abs error")

    def absolute_where(self, out, name, ref, tol, strict):
        """|got - ref| <= tol elementwise; reports the worst error and `strict`, the
        tolerance of the elements whose gradient is far from zero."""
        ref = np.asarray(ref, dtype=np.float64)
        got = self._get(out, name, ref.shape)
        if got is None:
            return
        diff = np.abs(got - ref)
        ok = bool((diff <= tol).all())
        self._row(name, ref, float(diff.max()), strict, ok, "max abs error")

    def print_table(self):
        header = ("tensor", "shape", "max|ref|", "max err", "tolerance", "")
        widths = [max(len(str(r[i])) for r in self.rows + [header]) for i in range(6)]
        for row in [header] + self.rows:
            print("  ".join(str(c).ljust(w) for c, w in zip(row, widths)).rstrip())


def compare(out, rec, names, lrs, cfg):
    c = Comparison()
    param_atol = PARAM_ATOL + PARAM_LR_SHARE * float(sum(lrs))
    c.relative(out, "loss", np.array(rec["loss"]), SCALAR_RTOL)
    c.relative(out, "pass_losses", np.array(rec["pass_losses"]), SCALAR_RTOL)
    c.relative(out, "grad_norm", np.array(rec["grad_norm"]), SCALAR_RTOL)
    for name in names:
        c.absolute(out, "grad." + name, rec["first_grads"][name].numpy(), GRAD_ATOL, GRAD_RTOL)
    for name in names:
        g_ref = rec["first_grads"][name].numpy().astype(np.float64)
        g_out = out.get("grad." + name)
        noise = (float(np.abs(np.asarray(g_out, dtype=np.float64) - g_ref).max())
                 if g_out is not None and np.shape(g_out) == g_ref.shape else 0.0)
        eps = cfg.adam_epsilon

        def step(x):
            return x / (np.abs(x) + eps)
        turn = step(np.abs(g_ref) + noise) - step(np.abs(g_ref) - noise)
        tol = param_atol + float(sum(lrs)) * turn
        c.absolute_where(out, name, rec["params"][name].numpy(), tol, param_atol)
    return c


def check_optimizer_alone(c, out, params32, cfg, lr, names):
    """With one step: the reference AdamW applied to the runtime's own gradients must give
    the runtime's parameters (this separates optimizer errors from gradient rounding, which
    Adam amplifies on near-zero gradients)."""
    grads = OrderedDict()
    for name in names:
        if "grad." + name not in out:
            return
        grads[name] = torch.from_numpy(np.asarray(out["grad." + name], dtype=np.float64))
    new, _, _ = R.adamw_step(R.cast_params(params32, torch.float64), grads, None, cfg, float(lr))
    for name in names:
        if name not in out:
            continue  # already reported missing
        got = c._get(out, name, new[name].shape)
        if got is None:
            continue
        ref = new[name].numpy()
        err = float(np.abs(got - ref).max())
        tol = OPTIMIZER_ATOL + OPTIMIZER_ULPS * float(np.abs(ref).max())
        c._row("adamw(runtime grads) -> " + name, ref, err, tol, err <= tol, "max abs error")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fbt", help="the fbt runtime binary")
    ap.add_argument("--bundle", help="a bundle compiled from --spec")
    ap.add_argument("--spec", required=True, help="the model spec the bundle was compiled from")
    ap.add_argument("--passes", type=int, required=True, help="K, the passes of the step")
    ap.add_argument("--steps", type=int, default=3, help="training steps to run (default 3)")
    ap.add_argument("--workdir", help="where to write the files (default: a temporary folder)")
    ap.add_argument("--mask", action="store_true",
                    help="ignore the targets instruction data masks (see make_batch)")
    ap.add_argument("--emulate", action="store_true",
                    help="run no binary; emulate the runtime with the fp32 reference")
    args = ap.parse_args(argv)
    if not args.emulate and not (args.fbt and args.bundle):
        ap.error("--fbt and --bundle are required (or --emulate)")
    if args.passes < 1 or args.steps < 1:
        ap.error("--passes and --steps must be at least 1")

    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    cfg = R.load_config(args.spec)
    params = make_params(cfg)
    ids, targets, seed, lrs = make_batch(cfg, args.steps, args.mask)

    with tempfile.TemporaryDirectory(prefix="fbt-check-") as tmp:
        workdir = args.workdir or tmp
        os.makedirs(workdir, exist_ok=True)
        params_path = os.path.join(workdir, "params.safetensors")
        batch_path = os.path.join(workdir, "batch.safetensors")
        out_path = os.path.join(workdir, "out.safetensors")
        st.save_file({n: w.numpy().astype(np.float32) for n, w in params.items()}, params_path)
        st.save_file({"input_ids": ids, "targets": targets,
                      "seed": np.array([seed], dtype=np.int64), "lr": lrs}, batch_path)

        if args.emulate:
            st.save_file(emulated_output(params, cfg, ids, targets, args.passes, seed, lrs),
                         out_path)
        else:
            cmd = [args.fbt, "step", args.bundle, "--params", params_path,
                   "--batch", batch_path, "--passes", str(args.passes),
                   "--steps", str(args.steps), "--out", out_path]
            print("$ " + " ".join(cmd))
            try:
                proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      universal_newlines=True)
            except OSError as e:
                print("FAIL: cannot run %s: %s" % (args.fbt, e))
                return 1
            if proc.stdout:
                print(proc.stdout.rstrip())
            if proc.returncode != 0:
                print("FAIL: fbt step exited with status %d" % proc.returncode)
                return 1
            if not os.path.exists(out_path):
                print("FAIL: fbt step wrote no %s" % out_path)
                return 1
        out = st.load_file(out_path)

    rec = reference_steps(params, cfg, ids, targets, args.passes, seed, lrs, torch.float64)
    c = compare(out, rec, list(params), lrs, cfg)
    if args.steps == 1:
        check_optimizer_alone(c, out, params, cfg, lrs[0], list(params))
    print("spec %s, K=%d, %d steps, batch %dx%d, seed %d, jitter %g, fusion %s" %
          (cfg.name, args.passes, args.steps, cfg.batch_size, cfg.sequence_length, seed,
           cfg.jitter, cfg.fusion))
    print("losses (reference): " + ", ".join("%.6f" % x for x in rec["loss"]))
    c.print_table()
    if c.failures:
        print("FAIL: %d of %d checks" % (len(c.failures), len(c.rows)))
        for f in c.failures:
            print("  " + f)
        return 1
    print("PASS: %d checks" % len(c.rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
