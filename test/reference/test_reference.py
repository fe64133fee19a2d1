"""Self-tests of the reference implementation (fbt_reference.py).

Run with either
    python3 -m pytest -q test/reference               (where pytest is installed)
    python3 test/reference/test_reference.py          (unittest; ends with "N passed, M failed")

The plain run also prints the reference values of the random numbers and the feedback-mask
examples, for checking independent implementations (the compiler's kernels) against them.
"""

import contextlib
import io
import json
import math
import os
import struct
import sys
import tempfile
import unittest

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fbt_reference as R  # noqa: E402
import safetensors_io as st  # noqa: E402

torch.set_num_threads(1)

F64 = torch.float64


def micro_config(**changes):
    """The gradient-check size: D=8, L=1, H=2, F=12, V=16."""
    cfg = R.Config(V=16, D=8, L=1, H=2, F=12, max_position_embeddings=16).resolved()
    return cfg.replace(**changes)


def small_config(**changes):
    """A little wider and deeper, for the exactness property."""
    cfg = R.Config(V=32, D=16, L=2, H=2, F=24, max_position_embeddings=16).resolved()
    return cfg.replace(**changes)


def random_ids(cfg, B, T, seed, bos_at=()):
    """Tokens drawn from every id except BOS, then BOS written at (b, t) in bos_at."""
    rng = np.random.default_rng(seed)
    choices = np.array([v for v in range(cfg.V) if v != cfg.bos_token_id])
    ids = rng.choice(choices, size=(B, T))
    for b, t in bos_at:
        ids[b, t] = cfg.bos_token_id
    return ids


def next_token_targets(ids):
    """targets[b, t] = ids[b, t+1], -1 at the last position."""
    targets = np.full(ids.shape, -1, dtype=np.int64)
    targets[:, :-1] = ids[:, 1:]
    return targets


def max_abs(a, b):
    return float((a - b).abs().max())


# --------------------------------------------------------------------------------------
# (c) The random numbers
# --------------------------------------------------------------------------------------
#
# Reference values, each computed step by step with 64-bit wrapping integers:
#   key = mix(seed ^ (stream * 0xD1B54A32D192ED03)),  z = mix(key + i),
#   uniform = (z >> 40) * 2^-24  (= top24 / 16777216)
#
#   seed  stream  i          key                 z                   top24     uniform
#   0     0       0          0xe220a8397b1dcdaf  0xa706dd2f4d197e6f  10946269  0.6524484753608704
#   0     0       1          0xe220a8397b1dcdaf  0x2a98f501af37e97f   2791669  0.16639643907546997
#   1234  0       0          0xbb0cf61b2f181cdb  0x9e17e35f6d9238ed  10360803  0.6175519824028015
#   1234  2       5          0x7ec5ecd57fbdd2e4  0xf792749fa4a5faea  16224884  0.967078447341919
#   1234  3       5          0x488675f96263a0eb  0x82cf94346f8aa2c9   8572820  0.5109798908233643
#   7     1       123456789  0x6078bf180ff8632f  0xc5e0e91ff0cbc7ce  12968169  0.7729631066322327
#
# Independent anchors for mix itself (the published SplitMix64 outputs): the generator
# seeded with 0 first returns mix(0) = 0xE220A8397B1DCDAF, seeded with 1234567 it first
# returns mix(1234567) = 6457827717110365317.

RNG_REFERENCE = [
    # (seed, stream, i, key, z, top24)
    (0, 0, 0, 0xE220A8397B1DCDAF, 0xA706DD2F4D197E6F, 10946269),
    (0, 0, 1, 0xE220A8397B1DCDAF, 0x2A98F501AF37E97F, 2791669),
    (1234, 0, 0, 0xBB0CF61B2F181CDB, 0x9E17E35F6D9238ED, 10360803),
    (1234, 2, 5, 0x7EC5ECD57FBDD2E4, 0xF792749FA4A5FAEA, 16224884),
    (1234, 3, 5, 0x488675F96263A0EB, 0x82CF94346F8AA2C9, 8572820),
    (7, 1, 123456789, 0x6078BF180FF8632F, 0xC5E0E91FF0CBC7CE, 12968169),
]


def rng_reference_lines():
    lines = ["uniform(seed, stream, i) reference values:",
             "  seed  stream  i          key                 z                   "
             "top24     uniform"]
    for seed, stream, i, _, _, _ in RNG_REFERENCE:
        key = R.stream_key(seed, stream)
        z = R.mix64_int((key + i) & R.MASK64)
        lines.append("  %-5d %-7d %-10d 0x%016x  0x%016x  %8d  %r" %
                     (seed, stream, i, key, z, z >> 40, R.uniform_scalar(seed, stream, i)))
    return lines


class RandomNumbers(unittest.TestCase):
    def test_splitmix64_anchors(self):
        self.assertEqual(R.mix64_int(0), 0xE220A8397B1DCDAF)
        self.assertEqual(R.mix64_int(1234567), 6457827717110365317)
        self.assertEqual(int(R.mix64(np.uint64(1234567))), 6457827717110365317)

    def test_reference_values(self):
        for seed, stream, i, key, z, top24 in RNG_REFERENCE:
            self.assertEqual(R.stream_key(seed, stream), key)
            self.assertEqual(R.mix64_int((key + i) & R.MASK64), z)
            expected = top24 * 2.0 ** -24
            self.assertEqual(R.uniform_scalar(seed, stream, i), expected)
            self.assertEqual(R.uniform(seed, stream, [i])[0], expected)

    def test_vectorized_equals_scalar(self):
        # Counters near 2^64 wrap when added to the key.
        idx = [0, 1, 2, 1000, 2**32 + 3, 2**63 + 11, 2**64 - 1]
        for seed, stream in [(0, 0), (1234, 2), (2**64 - 1, 7), (99, 12345)]:
            vec = R.uniform(seed, stream, np.array(idx, dtype=np.uint64))
            for i, u in zip(idx, vec):
                self.assertEqual(u, R.uniform_scalar(seed, stream, i))

    def test_jitter_noise_elements(self):
        """Element i of pass k's noise is jitter * (2 * uniform(seed, k, i) - 1), row-major."""
        noise = R.jitter_noise((2, 3, 4), 1234, 2, 0.02, F64)
        self.assertEqual(float(noise.reshape(-1)[5]), 0.02 * (2 * (16224884 * 2.0 ** -24) - 1))
        self.assertEqual(float(noise[1, 2, 3]), 0.02 * (2 * R.uniform_scalar(1234, 2, 23) - 1))

    def test_range_and_fp32_exact(self):
        u = R.uniform(1234, 2, np.arange(100000, dtype=np.uint64))
        self.assertTrue((u >= 0).all() and (u < 1).all())
        self.assertTrue((u.astype(np.float32).astype(np.float64) == u).all())
        self.assertAlmostEqual(float(u.mean()), 0.5, delta=0.01)


# --------------------------------------------------------------------------------------
# (d) The feedback mask
# --------------------------------------------------------------------------------------
#
# bos_token_id = 0, T = 12, seed = 1234. Documents (b, t0, n) and drawn prefixes
# 1 + floor(u * n), u = uniform(1234, 0, b*T + t0):
#   row 0 ids 5 3 7 0 9 4 2 8 0 6 1 3
#     (0, 0, 3)  u = 0.6175519824028015  prefix 2
#     (0, 3, 5)  u = 0.42954349517822266 prefix 3
#     (0, 8, 4)  u = 0.31216156482696533 prefix 2
#   row 1 ids 0 2 2 0 0 5 6 7 9 1 4 0
#     (1, 0, 3)  u = 0.42952483892440796 prefix 2
#     (1, 3, 1)  u = 0.5148642659187317  prefix 1
#     (1, 4, 7)  u = 0.8837361335754395  prefix 7   (the whole document stays plain)
#     (1, 11, 1) u = 0.7450771927833557  prefix 1

MASK_IDS = np.array([[5, 3, 7, 0, 9, 4, 2, 8, 0, 6, 1, 3],
                     [0, 2, 2, 0, 0, 5, 6, 7, 9, 1, 4, 0]])
MASK_SEED = 1234
MASK_PREFIXES = [(0, 0, 3, 2), (0, 3, 5, 3), (0, 8, 4, 2),
                 (1, 0, 3, 2), (1, 3, 1, 1), (1, 4, 7, 7), (1, 11, 1, 1)]
MASK_WITH_MIXIN = np.array([[0, 0, 1, 0, 0, 0, 1, 1, 0, 0, 1, 1],
                            [0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0]])
MASK_WITHOUT_MIXIN = np.array([[0, 1, 1, 0, 1, 1, 1, 1, 0, 1, 1, 1],
                               [0, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 0]])


def mask_example_lines():
    cfg = micro_config()
    lines = ["feedback mask examples (bos_token_id 0, seed %d):" % MASK_SEED]
    for b in range(MASK_IDS.shape[0]):
        lines.append("  row %d ids            %s" % (b, " ".join("%2d" % x for x in MASK_IDS[b])))
    for b, t0, n, prefix in R.prefix_lengths(MASK_IDS, cfg, MASK_SEED):
        u = R.uniform(MASK_SEED, 0, [b * MASK_IDS.shape[1] + t0])[0]
        lines.append("  document b=%d t0=%-2d n=%d: u=%r prefix=%d" % (b, t0, n, u, prefix))
    with_mixin = R.feedback_mask(MASK_IDS, cfg, MASK_SEED, prefix_mixin=True)
    without = R.feedback_mask(MASK_IDS, cfg, MASK_SEED, prefix_mixin=False)
    for b in range(MASK_IDS.shape[0]):
        lines.append("  row %d mask, mix-in    %s" % (b, " ".join("%2d" % x for x in with_mixin[b])))
        lines.append("  row %d mask, no mix-in %s" % (b, " ".join("%2d" % x for x in without[b])))
    return lines


class FeedbackMask(unittest.TestCase):
    def test_prefixes(self):
        got = R.prefix_lengths(MASK_IDS, micro_config(), MASK_SEED, prefix_mixin=True)
        self.assertEqual(got, MASK_PREFIXES)

    def test_with_prefix_mixin(self):
        m = R.feedback_mask(MASK_IDS, micro_config(), MASK_SEED, prefix_mixin=True)
        np.testing.assert_array_equal(m, MASK_WITH_MIXIN)

    def test_without_prefix_mixin(self):
        # The seed plays no part without mix-in.
        for seed in (MASK_SEED, 0, 99):
            m = R.feedback_mask(MASK_IDS, micro_config(), seed, prefix_mixin=False)
            np.testing.assert_array_equal(m, MASK_WITHOUT_MIXIN)

    def test_prefix_within_document(self):
        cfg = micro_config()
        ids = random_ids(cfg, 4, 40, seed=3, bos_at=[(0, 5), (1, 0), (1, 1), (2, 39), (3, 20)])
        for seed in range(20):
            for b, t0, n, prefix in R.prefix_lengths(ids, cfg, seed):
                self.assertTrue(1 <= prefix <= n)
            m = R.feedback_mask(ids, cfg, seed)
            self.assertTrue((m[:, 0] == 0).all())
            self.assertTrue((m[ids == cfg.bos_token_id] == 0).all())


# --------------------------------------------------------------------------------------
# The pieces, each against a second formulation
# --------------------------------------------------------------------------------------


class Pieces(unittest.TestCase):
    def test_rope_is_complex_rotation(self):
        """rotate_half pairs x[i] with x[i + Dh/2] and turns the pair by pos * theta^(-2i/Dh)."""
        T, Dh, theta = 5, 8, 10000.0
        x = torch.randn(2, 3, T, Dh, dtype=F64, generator=torch.Generator().manual_seed(0))
        cos, sin = R.rope_cos_sin(T, Dh, theta, F64)
        got = R.rope(x, cos, sin)
        half = Dh // 2
        z = torch.complex(x[..., :half], x[..., half:])
        freq = torch.tensor([theta ** (-2.0 * i / Dh) for i in range(half)], dtype=F64)
        angle = torch.arange(T, dtype=F64)[:, None] * freq[None, :]
        z = z * torch.polar(torch.ones_like(angle), angle)
        expected = torch.cat([z.real, z.imag], dim=-1)
        self.assertLess(max_abs(got, expected), 1e-14)

    def test_attention_against_loops(self):
        cfg = micro_config()
        p = R.init_params(cfg, seed=3)
        pre = "model.layers.0."
        B, T, D, H, Dh = 2, 5, cfg.D, cfg.H, cfg.Dh
        x = torch.randn(B, T, D, dtype=F64, generator=torch.Generator().manual_seed(1))
        got = R.attention(x, p, pre, cfg)
        q = x @ p[pre + "self_attn.q_proj.weight"].t()
        k = x @ p[pre + "self_attn.k_proj.weight"].t()
        v = x @ p[pre + "self_attn.v_proj.weight"].t()
        out = torch.zeros(B, T, D, dtype=F64)
        for b in range(B):
            for h in range(H):
                cols = slice(h * Dh, (h + 1) * Dh)
                for t in range(T):
                    qt = rope_one(q[b, t, cols], t, cfg.theta)
                    scores = torch.stack([qt @ rope_one(k[b, j, cols], j, cfg.theta)
                                          for j in range(t + 1)]) / math.sqrt(Dh)
                    weights = torch.exp(scores - scores.max())
                    weights = weights / weights.sum()
                    out[b, t, cols] = sum(weights[j] * v[b, j, cols] for j in range(t + 1))
        expected = out @ p[pre + "self_attn.o_proj.weight"].t()
        self.assertLess(max_abs(got, expected), 1e-14)

    def test_norm_mlp_loss_against_torch(self):
        cfg = micro_config()
        p = R.init_params(cfg, seed=4, norm_noise=0.1)
        gen = torch.Generator().manual_seed(2)
        x = torch.randn(2, 5, cfg.D, dtype=F64, generator=gen)
        w = p["model.norm.weight"]
        expected = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + cfg.eps) * w
        self.assertLess(max_abs(R.rms_norm(x, w, cfg.eps), expected), 1e-14)
        pre = "model.layers.0."
        F_ = torch.nn.functional
        expected = F_.linear(F_.silu(F_.linear(x, p[pre + "mlp.gate_proj.weight"])) *
                             F_.linear(x, p[pre + "mlp.up_proj.weight"]),
                             p[pre + "mlp.down_proj.weight"])
        self.assertLess(max_abs(R.mlp(x, p, pre), expected), 1e-14)
        logits = torch.randn(2, 5, cfg.V, dtype=F64, generator=gen)
        targets = np.array([[1, 2, 3, 4, -1], [-1, 5, 6, -1, -1]])
        expected = F_.cross_entropy(logits.reshape(-1, cfg.V),
                                    torch.as_tensor(targets).reshape(-1), ignore_index=-1)
        self.assertLess(abs(float(R.cross_entropy(logits, targets) - expected)), 1e-14)


def rope_one(x, pos, theta):
    """RoPE of one head vector at one position, pair by pair (i, i + Dh/2)."""
    Dh = x.shape[0]
    half = Dh // 2
    out = x.clone()
    for i in range(half):
        angle = pos * theta ** (-2.0 * i / Dh)
        c, s = math.cos(angle), math.sin(angle)
        out[i] = x[i] * c - x[i + half] * s
        out[i + half] = x[i + half] * c + x[i] * s
    return out


# --------------------------------------------------------------------------------------
# (a) The exactness property
# --------------------------------------------------------------------------------------


class Exactness(unittest.TestCase):
    """Mask 1 for t >= 1, no jitter: pass k equals the sequential soft states for t < k."""

    def check(self, cfg, B=2, T=7, tol=1e-12):
        p = R.init_params(cfg, seed=11, dtype=F64, norm_noise=0.1)
        ids = random_ids(cfg, B, T, seed=5)
        with torch.no_grad():
            seq_h, seq_logits = R.soft_decode_teacher_forced(p, cfg, ids)
            states, logits, _ = R.multipass(p, cfg, ids, T, seed=0, jitter=False,
                                            mask=R.full_mask(B, T))
        # The states must move from pass to pass, else the property says nothing.
        self.assertGreater(max_abs(states[0], seq_h), 1e-3)
        for k in range(1, T + 1):
            err = max_abs(states[k - 1][:, :k], seq_h[:, :k])
            self.assertLess(err, tol, "pass %d, positions < %d" % (k, k))
            err = max_abs(logits[k - 1][:, :k], seq_logits[:, :k])
            self.assertLess(err, tol, "pass %d logits" % k)
        # After T passes, every position.
        self.assertLess(max_abs(states[-1], seq_h), tol)
        self.assertLess(max_abs(logits[-1], seq_logits), tol)
        # And the objective's pass-T loss is the soft decoding's loss.
        targets = next_token_targets(ids)
        with torch.no_grad():
            _, pass_losses, _ = R.train_objective(p, cfg, ids, targets, T, seed=0,
                                                  jitter=False, mask=R.full_mask(B, T))
            soft_loss = R.cross_entropy(seq_logits, targets)
        self.assertLess(abs(float(pass_losses[-1] - soft_loss)), tol)

    def test_glu(self):
        self.check(small_config(fusion="glu"))

    def test_add(self):
        self.check(small_config(fusion="add"))

    def test_concat(self):
        self.check(small_config(fusion="concat"))

    def test_with_prompt(self):
        """Mask 0 on a prompt of P positions = soft decoding after a plain prefill of P."""
        cfg = small_config()
        B, T, P = 2, 7, 3
        p = R.init_params(cfg, seed=12, dtype=F64, norm_noise=0.1)
        ids = random_ids(cfg, B, T, seed=6)
        mask = np.ones((B, T))
        mask[:, :P] = 0
        with torch.no_grad():
            seq_h, _ = R.soft_decode_teacher_forced(p, cfg, ids, prompt_len=P)
            states, _, _ = R.multipass(p, cfg, ids, T, seed=0, jitter=False, mask=mask)
        self.assertLess(max_abs(states[-1], seq_h), 1e-12)


# --------------------------------------------------------------------------------------
# (b) Gradients against finite differences
# --------------------------------------------------------------------------------------


def objective_with_fixed_states(p, cfg, ids, targets, seed, states):
    """The K-pass objective with pass k fed the given states[k-2] (shifted) as constants."""
    e = R.embed(p, ids)
    mask = R.feedback_mask(ids, cfg, seed)
    u0 = R.plain(cfg, e)
    losses = [R.cross_entropy(R.head(p, cfg, R.stack(p, cfg, u0)), targets)]
    for k in range(2, len(states) + 1):
        s = R.shift_right(states[k - 2])
        s = s + R.jitter_noise(s.shape, seed, k, cfg.jitter, s.dtype)
        u = R.select(mask, R.fuse(p, cfg, e, s), u0)
        losses.append(R.cross_entropy(R.head(p, cfg, R.stack(p, cfg, u)), targets))
    return R.total_loss(losses, cfg)


class Gradients(unittest.TestCase):
    """fp64 autograd of the full objective (jitter, prefix mix-in, BOS) vs central differences."""

    B, T = 2, 6
    coords_per_tensor = 4
    step = 1e-6

    def check(self, cfg, K, seed=1234):
        """Checks a few coordinates of every tensor; returns the autograd gradients.

        With detach_state the gradient is that of the objective whose carried states are
        constants (computed at the unperturbed parameters), so the finite differences
        hold those states fixed.
        """
        p = R.init_params(cfg, seed=21, dtype=F64, norm_noise=0.1)
        # Norm scales perturbed so that their gradients are exercised (norm_noise above);
        # a BOS mid-row so both documents and prefixes are in play.
        ids = random_ids(cfg, self.B, self.T, seed=8, bos_at=[(0, 3), (1, 2)])
        targets = next_token_targets(ids)
        if K > 1:
            # The feedback path must be in use somewhere, else K>1 tests nothing.
            self.assertGreater(R.feedback_mask(ids, cfg, seed).sum(), 0)

        with torch.no_grad():
            base_states, _, _ = R.multipass(p, cfg, ids, K, seed)

        def objective(params):
            with torch.no_grad():
                if cfg.detach_state:
                    loss = objective_with_fixed_states(params, cfg, ids, targets, seed,
                                                       base_states)
                else:
                    loss, _, _ = R.train_objective(params, cfg, ids, targets, K, seed)
            return float(loss)

        _, _, grads = R.loss_and_grads(p, cfg, ids, targets, K, seed)
        rng = np.random.default_rng(K * 100 + len(cfg.fusion))
        worst = 0.0
        for name, w in p.items():
            flat = w.reshape(-1)
            picks = rng.choice(flat.numel(), size=min(self.coords_per_tensor, flat.numel()),
                               replace=False)
            for j in picks:
                j = int(j)
                plus = {n: x.clone() for n, x in p.items()}
                minus = {n: x.clone() for n, x in p.items()}
                plus[name].view(-1)[j] += self.step
                minus[name].view(-1)[j] -= self.step
                fd = (objective(plus) - objective(minus)) / (2 * self.step)
                ad = float(grads[name].reshape(-1)[j])
                err = abs(fd - ad)
                worst = max(worst, err / (1e-6 + abs(ad)))
                self.assertLess(err, 1e-8 + 1e-5 * abs(ad),
                                "%s[%d]: autograd %r, finite difference %r" % (name, j, ad, fd))
        return grads

    def test_k1(self):
        grads = self.check(micro_config(), K=1)
        # The feedback weights are unused in a single pass.
        self.assertEqual(float(grads["feedback.value_proj.weight"].abs().max()), 0.0)

    def test_k2(self):
        grads = self.check(micro_config(), K=2)
        self.assertGreater(float(grads["feedback.value_proj.weight"].abs().max()), 0.0)
        self.assertGreater(float(grads["feedback.gate_proj.weight"].abs().max()), 0.0)

    def test_k3(self):
        self.check(micro_config(), K=3)

    def test_k3_without_prefix_mixin(self):
        self.check(micro_config(prefix_mixin=False), K=3)

    def test_add_k2(self):
        self.check(micro_config(fusion="add"), K=2)

    def test_concat_k2(self):
        self.check(micro_config(fusion="concat"), K=2)

    def test_detach_state_k3(self):
        self.check(micro_config(detach_state=True), K=3)

    def test_detach_changes_gradients_not_losses(self):
        cfg = micro_config()
        p = R.init_params(cfg, seed=21, dtype=F64, norm_noise=0.1)
        ids = random_ids(cfg, self.B, self.T, seed=8, bos_at=[(0, 3)])
        targets = next_token_targets(ids)
        l1, pl1, g1 = R.loss_and_grads(p, cfg, ids, targets, 3, 1234)
        l2, pl2, g2 = R.loss_and_grads(p, cfg.replace(detach_state=True), ids, targets, 3, 1234)
        self.assertEqual(pl1, pl2)
        diff = max(float((g1[n] - g2[n]).abs().max()) for n in g1)
        self.assertGreater(diff, 1e-8)


# --------------------------------------------------------------------------------------
# AdamW against torch.optim.AdamW + clip_grad_norm_
# --------------------------------------------------------------------------------------


class Optimizer(unittest.TestCase):
    def test_matches_torch_adamw(self):
        cfg = micro_config(grad_clip=0.5)  # small enough to clip
        p = R.init_params(cfg, seed=31, dtype=F64, norm_noise=0.1)
        ids = random_ids(cfg, 2, 6, seed=9, bos_at=[(0, 3)])
        targets = next_token_targets(ids)
        lrs = [1e-2, 5e-3, 2.5e-3]
        record = R.train_steps(p, cfg, ids, targets, 2, 1234, lrs)

        leaves = R.with_grad(p)
        groups = [
            {"params": [w for n, w in leaves.items() if R.decayed(n)],
             "weight_decay": cfg.weight_decay},
            {"params": [w for n, w in leaves.items() if not R.decayed(n)], "weight_decay": 0.0},
        ]
        opt = torch.optim.AdamW(groups, lr=lrs[0], betas=(cfg.beta1, cfg.beta2),
                                eps=cfg.adam_epsilon)
        for step, lr in enumerate(lrs):
            for g in opt.param_groups:
                g["lr"] = lr
            opt.zero_grad()
            loss, _, _ = R.train_objective(leaves, cfg, ids, targets, 2, 1234)
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(list(leaves.values()), cfg.grad_clip)
            self.assertAlmostEqual(float(norm), record["grad_norm"][step], places=12)
            self.assertAlmostEqual(float(loss), record["loss"][step], places=12)
            opt.step()
        self.assertGreater(record["grad_norm"][0], cfg.grad_clip)
        for name, w in leaves.items():
            self.assertLess(max_abs(w.detach(), record["params"][name]), 1e-12, name)

    def test_decay_sets(self):
        cfg = micro_config()
        names = [n for n in R.param_shapes(cfg) if R.decayed(n)]
        self.assertNotIn("model.embed_tokens.weight", names)
        self.assertFalse(any("norm" in n for n in names))
        self.assertIn("feedback.gate_proj.weight", names)
        self.assertIn("model.layers.0.mlp.down_proj.weight", names)


# --------------------------------------------------------------------------------------
# Decoding regimes
# --------------------------------------------------------------------------------------


class Decoding(unittest.TestCase):
    def setUp(self):
        self.cfg = small_config()
        self.p = R.init_params(self.cfg, seed=41, dtype=F64, norm_noise=0.1)
        self.prompt = random_ids(self.cfg, 2, 4, seed=10)

    def test_fused_prefill_one_pass_is_prefill(self):
        with torch.no_grad():
            h1, l1, _ = R.fused_prefill(self.p, self.cfg, self.prompt, 1)
            h, l = R.prefill(self.p, self.cfg, self.prompt)
        self.assertEqual(max_abs(h1, h), 0.0)
        self.assertEqual(max_abs(l1, l), 0.0)

    def test_standard_is_teacher_forced_prefill(self):
        with torch.no_grad():
            toks, step_logits = R.generate_greedy(self.p, self.cfg, self.prompt, 5, "standard")
            full = np.concatenate([self.prompt, toks.numpy()], axis=1)
            _, logits = R.prefill(self.p, self.cfg, full)
        P = self.prompt.shape[1]
        self.assertLess(max_abs(step_logits, logits[:, P - 1:P - 1 + 5]), 1e-12)

    def test_soft_is_teacher_forced_soft(self):
        with torch.no_grad():
            toks, step_logits = R.generate_greedy(self.p, self.cfg, self.prompt, 5, "soft")
            full = np.concatenate([self.prompt, toks.numpy()], axis=1)
            P = self.prompt.shape[1]
            _, logits = R.soft_decode_teacher_forced(self.p, self.cfg, full, prompt_len=P)
        self.assertLess(max_abs(step_logits, logits[:, P - 1:P - 1 + 5]), 1e-12)

    def test_fused_one_is_soft(self):
        with torch.no_grad():
            a, la = R.generate_greedy(self.p, self.cfg, self.prompt, 4, "soft")
            b, lb = R.generate_greedy(self.p, self.cfg, self.prompt, 4, "fused[1]")
        self.assertTrue(torch.equal(a, b))
        self.assertEqual(max_abs(la, lb), 0.0)

    def test_fused_first_step_reads_last_pass(self):
        with torch.no_grad():
            _, step_logits = R.generate_greedy(self.p, self.cfg, self.prompt, 3, "fused", n=3)
            _, logits, _ = R.fused_prefill(self.p, self.cfg, self.prompt, 3)
            _, plain = R.prefill(self.p, self.cfg, self.prompt)
        self.assertEqual(max_abs(step_logits[:, 0], logits[:, -1]), 0.0)
        self.assertGreater(max_abs(logits[:, -1], plain[:, -1]), 1e-6)


# --------------------------------------------------------------------------------------
# Config and parameters
# --------------------------------------------------------------------------------------

SPECS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "specs")


class ConfigAndParams(unittest.TestCase):
    def test_tiny_spec(self):
        cfg = R.load_config(os.path.join(SPECS, "tiny.json"))
        self.assertEqual((cfg.V, cfg.D, cfg.L, cfg.H, cfg.F), (256, 64, 2, 4, 172))
        self.assertEqual(cfg.Dh, 16)
        self.assertAlmostEqual(cfg.depth_scaling, 0.5)
        self.assertEqual((cfg.batch_size, cfg.sequence_length), (8, 64))
        self.assertEqual(cfg.fusion, "glu")
        self.assertEqual(cfg.deep_passes, 3)

    def test_depth_scaling(self):
        base = {"vocab_size": 16, "hidden_size": 8, "num_hidden_layers": 8,
                "num_attention_heads": 2, "intermediate_size": 12}
        for value, expected in [(True, 0.25), (False, 1.0), (0.3, 0.3)]:
            cfg = R.config_from_dict(dict(base, feedback={"depth_scaling": value}))
            self.assertAlmostEqual(cfg.depth_scaling, expected)
        self.assertAlmostEqual(R.config_from_dict(base).depth_scaling, 0.25)

    def test_param_names_and_shapes(self):
        cfg = micro_config()
        shapes = R.param_shapes(cfg)
        self.assertEqual(len(shapes), 1 + 9 * cfg.L + 1 + 2)
        self.assertEqual(shapes["model.layers.0.mlp.down_proj.weight"], (8, 12))
        self.assertEqual(shapes["model.layers.0.mlp.gate_proj.weight"], (12, 8))
        self.assertEqual(R.param_shapes(cfg.replace(fusion="concat"))["feedback.proj.weight"],
                         (8, 16))
        self.assertNotIn("feedback.value_proj.weight", R.param_shapes(cfg.replace(fusion="none")))
        p = R.init_params(cfg, seed=7)
        self.assertEqual(list(p), list(shapes))
        self.assertTrue(torch.equal(p["model.norm.weight"], torch.ones(8, dtype=F64)))
        q = R.init_params(cfg, seed=7)
        self.assertTrue(all(torch.equal(p[n], q[n]) for n in p))

    def test_fp32_close_to_fp64(self):
        cfg = micro_config()
        p64 = R.init_params(cfg, seed=7, norm_noise=0.1)
        p32 = R.cast_params(p64, torch.float32)
        ids = random_ids(cfg, 2, 6, seed=1, bos_at=[(1, 3)])
        targets = next_token_targets(ids)
        l64, pl64, g64 = R.loss_and_grads(p64, cfg, ids, targets, 3, 1234)
        l32, pl32, g32 = R.loss_and_grads(p32, cfg, ids, targets, 3, 1234)
        self.assertAlmostEqual(l64, l32, delta=1e-5)
        for n in g64:
            self.assertLess(max_abs(g64[n], g32[n].double()), 1e-6, n)


# --------------------------------------------------------------------------------------
# File formats and the end-to-end driver (without a runtime)
# --------------------------------------------------------------------------------------


class Files(unittest.TestCase):
    def test_safetensors_round_trip(self):
        tensors = {"a": np.arange(6, dtype=np.float32).reshape(2, 3),
                   "ids": np.array([[1, -1]], dtype=np.int32),
                   "seed": np.array([1234], dtype=np.int64),
                   "x": np.array([0.5], dtype=np.float64)}
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "t.safetensors")
            st.save_file(tensors, path)
            back = st.load_file(path)
            with open(path, "rb") as f:
                n = struct.unpack("<Q", f.read(8))[0]
                header = json.loads(f.read(n))
        self.assertEqual(n % 8, 0)
        for name, array in tensors.items():
            self.assertEqual(back[name].dtype, array.dtype)
            np.testing.assert_array_equal(back[name], array)
            begin = header[name]["data_offsets"][0]
            self.assertEqual(begin % array.dtype.itemsize, 0, name)

    def test_driver_emulated(self):
        """check_train_step.py --emulate on a micro spec: the fp32 reference passes the checks."""
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
        import check_train_step
        spec = {"name": "micro", "vocab_size": 16, "hidden_size": 8, "num_hidden_layers": 1,
                "num_attention_heads": 2, "intermediate_size": 12,
                "max_position_embeddings": 16,
                "training": {"batch_size": 2, "sequence_length": 8}}
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "micro.json")
            with open(path, "w") as f:
                json.dump(spec, f)
            log = io.StringIO()
            with contextlib.redirect_stdout(log):
                rc = check_train_step.main(["--spec", path, "--passes", "3", "--steps", "2",
                                            "--emulate", "--workdir", tmp])
            self.assertEqual(rc, 0, log.getvalue())
            self.assertIn("PASS", log.getvalue())
            for name in ("params.safetensors", "batch.safetensors", "out.safetensors"):
                self.assertTrue(os.path.exists(os.path.join(tmp, name)))


# --------------------------------------------------------------------------------------


def main():
    print("\n".join(rng_reference_lines()))
    print("\n".join(mask_example_lines()))
    suite = unittest.defaultTestLoader.loadTestsFromModule(sys.modules[__name__])
    result = unittest.TextTestRunner(verbosity=1).run(suite)
    failed = len(result.failures) + len(result.errors)
    passed = result.testsRun - failed - len(result.skipped)
    print("%d passed, %d failed" % (passed, failed))
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
