"""Reference implementation of the Full-Bandwidth Transformer math (DESIGN.md section 2).

This module is the numerics oracle of the test suite: the compiled steps are checked
against it. It is written plainly, one function per piece of math, in PyTorch on the CPU,
in whatever floating-point type the parameters have (fp64 for exactness and gradient
checks, fp32 to see what fp32 rounding alone does). Importing it has no side effects.

Conventions (HF Llama layout): weights are [out, in] and a projection is y = x @ W^T.
Shapes: B batch rows, T positions, D width, H heads of Dh = D / H, F MLP width, V vocab.

Contents
  Config, config_from_dict, load_config        the model spec, with the frontend's defaults
  param_shapes, init_params, decayed           the parameters, by their checkpoint names
  mix64, uniform, uniform_scalar               the counter-based random numbers
  feedback_mask, prefix_lengths                where the fused input replaces the embedding
  rms_norm, rope, attention, mlp, stack, head  the transformer
  fuse, shift_right, jitter_noise              the feedback path
  multipass, train_objective, loss_and_grads   the K-pass training objective
  adamw_step                                   gradient clipping + AdamW
  prefill, soft_decode_teacher_forced,
  fused_prefill, generate_greedy               the decoding regimes
"""

import dataclasses
import json
import math
from collections import OrderedDict

import numpy as np
import torch

# --------------------------------------------------------------------------------------
# Config
# --------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Config:
    """A model spec with every default resolved. The defaults are the frontend's
    (frontend/Spec.h); test/reference/check_defaults.py fails when one differs from
    what fbtc resolves."""

    V: int  # vocab_size
    D: int  # hidden_size
    L: int  # num_hidden_layers
    H: int  # num_attention_heads
    F: int  # intermediate_size
    eps: float = 1e-5  # rms_norm_eps
    theta: float = 10000.0  # rope_theta
    rope_factor: float = 1.0  # rope_scaling.factor (1: none)
    rope_type: str = "linear"  # rope_scaling.rope_type: linear or dynamic
    bos_token_id: int = 0
    max_position_embeddings: int = 0  # 0: unset
    name: str = "fbt"

    # feedback
    fusion: str = "glu"  # glu | add | concat | none
    jitter: float = 0.02
    depth_scaling: float = 0.0  # the resolved residual scale `a` (0: unset, see resolved())
    detach_state: bool = False
    aux_loss_weight: float = 1.0
    prefix_mixin: bool = False
    # the recipe (DESIGN.md section 2): which state is carried, and the scale-free norms
    state: str = "post_norm"  # pre_norm | post_norm
    input_norm: bool = False  # plain inputs are norm(e)
    gate_norm: bool = True  # the gate reads norm(e)
    state_norm: bool = False  # the value path reads norm(s)
    output_norm: bool = False  # the fused input is norm(fuse(e, s))
    token_residual: bool = True  # glu: plain(e) + (W_U s) * sigmoid(W_G e), before the norm

    # training
    single_pass_fraction: float = 0.25
    passes: int = 2
    deep_pass_fraction: float = 0.03
    deep_passes: int = 0  # 0: unset, resolved to passes + 1
    grad_passes: int = 2  # 0: every pass trained
    batch_size: int = 8
    sequence_length: int = 64
    steps: int = 1000
    learning_rate: float = 1e-3
    beta1: float = 0.9
    beta2: float = 0.95
    adam_epsilon: float = 1e-8
    weight_decay: float = 0.1
    warmup_steps: int = 100
    min_learning_rate: float = 1e-4
    grad_clip: float = 1.0  # 0 turns clipping off
    seed: int = 1234

    @property
    def Dh(self):
        """Head dimension."""
        return self.D // self.H

    def resolved(self):
        """This config with the defaults that depend on other fields filled in."""
        changes = {}
        if self.depth_scaling == 0.0:
            changes["depth_scaling"] = 1.0 / math.sqrt(2.0 * self.L)
        if self.deep_passes == 0:
            changes["deep_passes"] = self.passes + 1
        if self.max_position_embeddings == 0:
            changes["max_position_embeddings"] = self.sequence_length
        return dataclasses.replace(self, **changes)

    def replace(self, **changes):
        """A copy with some fields changed (depth_scaling must then be a number)."""
        return dataclasses.replace(self, **changes)


def resolve_depth_scaling(value, num_layers):
    """The spec's feedback.depth_scaling: true -> 1/sqrt(2L), false -> 1.0, a number -> itself."""
    if isinstance(value, bool):
        return 1.0 / math.sqrt(2.0 * num_layers) if value else 1.0
    return float(value)


# The paper's recipe (a spec's "recipe": "paper"): the defaults its feedback
# and training keys start from, as the paper states the method; keys the spec
# gives override them. Written out here apart from the frontend's, so that
# check_defaults.py compares two readings of the preset.
PAPER_RECIPE = {
    "feedback": {"fusion": "glu", "state": "pre_norm", "input_norm": False,
                 "gate_norm": False, "state_norm": False, "output_norm": False,
                 "token_residual": False, "prefix_mixin": True},
    "training": {"single_pass_fraction": 0.75, "grad_passes": 0},
}


def config_from_dict(spec):
    """A Config from a parsed JSON spec (the keys of specs/*.json)."""
    recipe = spec.get("recipe", "fbt")
    if recipe not in ("fbt", "paper"):
        raise ValueError("recipe: expected fbt or paper, got %r" % recipe)
    fb = dict(PAPER_RECIPE["feedback"] if recipe == "paper" else {}, **spec.get("feedback", {}))
    tr = dict(PAPER_RECIPE["training"] if recipe == "paper" else {}, **spec.get("training", {}))
    L = int(spec["num_hidden_layers"])
    fields = dict(
        V=int(spec["vocab_size"]),
        D=int(spec["hidden_size"]),
        L=L,
        H=int(spec["num_attention_heads"]),
        F=int(spec["intermediate_size"]),
        eps=float(spec.get("rms_norm_eps", 1e-5)),
        theta=float(spec.get("rope_theta", 10000.0)),
        rope_factor=rope_factor(spec.get("rope_scaling")),
        rope_type=rope_type(spec.get("rope_scaling")),
        bos_token_id=int(spec.get("bos_token_id", 0)),
        max_position_embeddings=int(spec.get("max_position_embeddings", 0)),
        name=str(spec.get("name", "fbt")),
        fusion=str(fb.get("fusion", "glu")),
        jitter=float(fb.get("jitter", 0.02)),
        depth_scaling=resolve_depth_scaling(fb.get("depth_scaling", True), L),
        detach_state=bool(fb.get("detach_state", False)),
        aux_loss_weight=float(fb.get("aux_loss_weight", 1.0)),
        prefix_mixin=bool(fb.get("prefix_mixin", False)),
        state=str(fb.get("state", "post_norm")),
        input_norm=bool(fb.get("input_norm", False)),
        gate_norm=bool(fb.get("gate_norm", True)),
        state_norm=bool(fb.get("state_norm", False)),
        output_norm=bool(fb.get("output_norm", False)),
        token_residual=bool(fb.get("token_residual", True)),
    )
    int_keys = ["passes", "deep_passes", "grad_passes", "batch_size", "sequence_length",
                "steps", "warmup_steps", "seed"]
    float_keys = ["single_pass_fraction", "deep_pass_fraction", "learning_rate", "beta1",
                  "beta2", "adam_epsilon", "weight_decay", "min_learning_rate", "grad_clip"]
    for key in int_keys:
        if key in tr:
            fields[key] = int(tr[key])
    for key in float_keys:
        if key in tr:
            fields[key] = float(tr[key])
    cfg = Config(**fields).resolved()
    if cfg.fusion not in ("glu", "add", "concat", "none"):
        raise ValueError("feedback.fusion: expected one of glu, add, concat, none, got %r"
                         % cfg.fusion)
    if cfg.state not in ("pre_norm", "post_norm"):
        raise ValueError("feedback.state: expected pre_norm or post_norm, got %r" % cfg.state)
    if cfg.D % cfg.H != 0 or cfg.Dh % 2 != 0:
        raise ValueError("num_attention_heads: expected a divisor of hidden_size giving an "
                         "even head dimension")
    return cfg


def load_config(path):
    """A Config from a JSON spec file."""
    with open(path, "r", encoding="utf-8") as f:
        return config_from_dict(json.load(f))


# --------------------------------------------------------------------------------------
# Parameters
# --------------------------------------------------------------------------------------


def param_shapes(cfg):
    """Ordered {name: shape} of every parameter, in checkpoint order."""
    V, D, F = cfg.V, cfg.D, cfg.F
    shapes = OrderedDict()
    shapes["model.embed_tokens.weight"] = (V, D)
    for l in range(cfg.L):
        pre = "model.layers.%d." % l
        shapes[pre + "input_layernorm.weight"] = (D,)
        shapes[pre + "self_attn.q_proj.weight"] = (D, D)
        shapes[pre + "self_attn.k_proj.weight"] = (D, D)
        shapes[pre + "self_attn.v_proj.weight"] = (D, D)
        shapes[pre + "self_attn.o_proj.weight"] = (D, D)
        shapes[pre + "post_attention_layernorm.weight"] = (D,)
        shapes[pre + "mlp.gate_proj.weight"] = (F, D)
        shapes[pre + "mlp.up_proj.weight"] = (F, D)
        shapes[pre + "mlp.down_proj.weight"] = (D, F)
    shapes["model.norm.weight"] = (D,)
    if cfg.fusion == "glu":
        shapes["feedback.value_proj.weight"] = (D, D)  # W_U
        shapes["feedback.gate_proj.weight"] = (D, D)  # W_G
    elif cfg.fusion == "add":
        shapes["feedback.value_proj.weight"] = (D, D)  # W_U
    elif cfg.fusion == "concat":
        shapes["feedback.proj.weight"] = (D, 2 * D)  # W, applied to [e; s]
    return shapes


def is_norm(name):
    return name.endswith("layernorm.weight") or name == "model.norm.weight"


def decayed(name):
    """AdamW weight decay applies to every matrix except the embedding; never to norms."""
    return not is_norm(name) and name != "model.embed_tokens.weight"


def init_params(cfg, seed, dtype=torch.float64, norm_noise=0.0):
    """Ordered {name: tensor}: matrices ~ N(0, 0.02^2), norms = 1 (+ norm_noise * N(0, 1)).

    `norm_noise` > 0 perturbs the norm scales so that their gradients are exercised.
    """
    gen = torch.Generator().manual_seed(seed)
    params = OrderedDict()
    for name, shape in param_shapes(cfg).items():
        if is_norm(name):
            w = torch.ones(shape, dtype=torch.float64)
            if norm_noise:
                w = w + norm_noise * torch.randn(shape, generator=gen, dtype=torch.float64)
        else:
            w = 0.02 * torch.randn(shape, generator=gen, dtype=torch.float64)
        params[name] = w.to(dtype)
    return params


def cast_params(params, dtype):
    return OrderedDict((n, p.detach().to(dtype)) for n, p in params.items())


def with_grad(params):
    """Leaf copies of the parameters that record gradients."""
    return OrderedDict((n, p.detach().clone().requires_grad_(True)) for n, p in params.items())


# --------------------------------------------------------------------------------------
# Counter-based random numbers (the same definition as fbt.jitter and fbt.feedback_mask)
# --------------------------------------------------------------------------------------

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15  # added before each mix (the splitmix64 increment)
MIX1 = 0xBF58476D1CE4E5B9
MIX2 = 0x94D049BB133111EB
STREAM_MULT = 0xD1B54A32D192ED03


def mix64_int(z):
    """splitmix64's finalizer on a Python int, 64-bit wrapping."""
    z = (z + GOLDEN) & MASK64
    z = ((z ^ (z >> 30)) * MIX1) & MASK64
    z = ((z ^ (z >> 27)) * MIX2) & MASK64
    return z ^ (z >> 31)


def stream_key(seed, stream):
    """mix(seed ^ (stream * 0xD1B54A32D192ED03)): the per-(seed, stream) key."""
    return mix64_int((seed & MASK64) ^ ((stream * STREAM_MULT) & MASK64))


def uniform_scalar(seed, stream, i):
    """uniform(seed, stream, i) in [0, 1), one value, with Python ints (the plain definition)."""
    z = mix64_int((stream_key(seed, stream) + i) & MASK64)
    return (z >> 40) * 2.0 ** -24


def mix64(z):
    """splitmix64's finalizer on a numpy uint64 array (numpy's uint64 arithmetic wraps)."""
    z = np.asarray(z, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = z + np.uint64(GOLDEN)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(MIX1)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(MIX2)
    return z ^ (z >> np.uint64(31))


def uniform(seed, stream, indices):
    """uniform(seed, stream, i) for an array of counters i: float64 array in [0, 1).

    Each value has 24 random bits, so it is exact in fp32 as well.
    """
    key = np.uint64(stream_key(seed, stream))
    i = np.asarray(indices, dtype=np.uint64)
    with np.errstate(over="ignore"):
        z = mix64(key + i)
    return (z >> np.uint64(40)).astype(np.float64) * 2.0 ** -24


# --------------------------------------------------------------------------------------
# Feedback mask
# --------------------------------------------------------------------------------------


def documents(row, bos_token_id):
    """[(t0, n)] for one row of ids: a document starts at 0 or at a BOS, ends before the next BOS."""
    T = len(row)
    starts = [0] + [t for t in range(1, T) if row[t] == bos_token_id]
    ends = starts[1:] + [T]
    return [(t0, t1 - t0) for t0, t1 in zip(starts, ends)]


def prefix_lengths(ids, cfg, seed, prefix_mixin=None):
    """[(b, t0, n, prefix)] for every document of every row.

    With prefix mix-in the plain prefix is 1 + floor(u * n), u = uniform(seed, 0, b*T + t0);
    without it, 1 (only the document's first position).
    """
    if prefix_mixin is None:
        prefix_mixin = cfg.prefix_mixin
    ids = np.asarray(ids)
    B, T = ids.shape
    out = []
    for b in range(B):
        for t0, n in documents(list(ids[b]), cfg.bos_token_id):
            if prefix_mixin:
                u = uniform(seed, 0, [b * T + t0])[0]
                prefix = 1 + int(math.floor(u * n))
            else:
                prefix = 1
            out.append((b, t0, n, prefix))
    return out


def feedback_mask(ids, cfg, seed, prefix_mixin=None):
    """m[b, t] as a float64 numpy array: 0 at t=0, at BOS and in plain prefixes, else 1."""
    ids = np.asarray(ids)
    m = np.ones(ids.shape, dtype=np.float64)
    for b, t0, n, prefix in prefix_lengths(ids, cfg, seed, prefix_mixin):
        m[b, t0:t0 + prefix] = 0.0
    # Already covered (t=0 and every BOS start a document), stated for clarity.
    m[:, 0] = 0.0
    m[ids == cfg.bos_token_id] = 0.0
    return m


def full_mask(B, T):
    """The mask of the exactness property: 1 for t >= 1, 0 at t = 0."""
    m = np.ones((B, T), dtype=np.float64)
    m[:, 0] = 0.0
    return m


# --------------------------------------------------------------------------------------
# The transformer
# --------------------------------------------------------------------------------------


def linear(x, w):
    """y = x @ W^T with W stored [out, in]."""
    return x @ w.t()


def rms_norm(x, w, eps):
    """x / sqrt(mean(x^2) + eps) * w over the last axis."""
    return x / torch.sqrt((x * x).mean(dim=-1, keepdim=True) + eps) * w


def rope_type(scaling):
    """Hugging Face's rope_scaling type: linear or dynamic (the ones fbtc takes)."""
    if not scaling:
        return "linear"
    kind = scaling.get("rope_type", scaling.get("type"))
    if kind not in ("linear", "dynamic"):
        raise ValueError("rope_scaling type %r is not supported (linear, dynamic)" % kind)
    return kind


def rope_factor(scaling):
    """Hugging Face's rope_scaling factor (1: none)."""
    rope_type(scaling)
    return float(scaling["factor"]) if scaling else 1.0


def rope_base_and_divisor(cfg, Dh):
    """The base and the position divisor RoPE's angles use.

    linear: positions divided by the factor (transformers' linear type).
    dynamic: transformers' NTK formula, base * (factor * L / P - (factor - 1))^(Dh / (Dh - 2))
    with P = max_position_embeddings, evaluated at the extended length L = factor * P (a
    compiled step's shape is fixed, as vLLM fixes it); positions as they are.
    """
    f = cfg.rope_factor
    if cfg.rope_type == "linear" or f == 1.0:
        return cfg.theta, f
    P = float(cfg.max_position_embeddings or 1)
    L = f * P
    return cfg.theta * ((f * L / P) - (f - 1)) ** (Dh / (Dh - 2)), 1.0


def rope_cos_sin(T, Dh, theta, dtype, start=0, factor=1.0):
    """cos and sin [T, Dh] for positions start..start+T-1 (HF Llama: halves duplicated),
    each divided by `factor` (linear RoPE scaling, as transformers does it).

    The angles are computed in fp64 and rounded once to `dtype`.
    """
    i = torch.arange(Dh // 2, dtype=torch.float64)
    inv_freq = theta ** (-2.0 * i / Dh)  # [Dh/2]
    pos = torch.arange(start, start + T, dtype=torch.float64) / factor
    angle = pos[:, None] * inv_freq[None, :]  # [T, Dh/2]
    angle = torch.cat([angle, angle], dim=-1)  # [T, Dh]
    return torch.cos(angle).to(dtype), torch.sin(angle).to(dtype)


def rotate_half(x):
    """[x1, x2] -> [-x2, x1] on the last axis (halves, not interleaved pairs)."""
    half = x.shape[-1] // 2
    x1, x2 = x[..., :half], x[..., half:]
    return torch.cat([-x2, x1], dim=-1)


def rope(x, cos, sin):
    """Rotary position embedding on x [B, H, T, Dh]."""
    return x * cos + rotate_half(x) * sin


# True: attention reads the keys (after RoPE) and values rounded to f16
# through f32, as the inference steps of a bundle with an f16 KV cache do
# (fbtc --inference-kv-cache f16), the prefill's included.
KV_CACHE_F16 = False


def attention(x, p, pre, cfg):
    """Causal multi-head softmax attention with RoPE, then o_proj. x: [B, T, D]."""
    B, T, D = x.shape
    H, Dh = cfg.H, cfg.Dh

    def heads(y):  # [B, T, D] -> [B, H, T, Dh]
        return y.reshape(B, T, H, Dh).transpose(1, 2)

    q = heads(linear(x, p[pre + "self_attn.q_proj.weight"]))
    k = heads(linear(x, p[pre + "self_attn.k_proj.weight"]))
    v = heads(linear(x, p[pre + "self_attn.v_proj.weight"]))
    base, divisor = rope_base_and_divisor(cfg, Dh)
    cos, sin = rope_cos_sin(T, Dh, base, x.dtype, factor=divisor)
    q = rope(q, cos, sin)
    k = rope(k, cos, sin)

    if KV_CACHE_F16:
        k, v = (y.to(torch.float32).to(torch.float16).to(y.dtype) for y in (k, v))

    scores = (q @ k.transpose(-1, -2)) / math.sqrt(Dh)  # [B, H, T(query), T(key)]
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)  # key > query
    scores = scores.masked_fill(future, float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    out = probs @ v  # [B, H, T, Dh]
    out = out.transpose(1, 2).reshape(B, T, D)
    return linear(out, p[pre + "self_attn.o_proj.weight"])


def mlp(x, p, pre):
    """SwiGLU: down(silu(gate(x)) * up(x))."""
    gate = linear(x, p[pre + "mlp.gate_proj.weight"])
    up = linear(x, p[pre + "mlp.up_proj.weight"])
    silu = gate * torch.sigmoid(gate)
    return linear(silu * up, p[pre + "mlp.down_proj.weight"])


def block(z, p, l, cfg):
    """One pre-norm layer: z + a*Attn(RMSNorm1(z)), then + a*MLP(RMSNorm2(.))."""
    pre = "model.layers.%d." % l
    a = cfg.depth_scaling
    z = z + a * attention(rms_norm(z, p[pre + "input_layernorm.weight"], cfg.eps), p, pre, cfg)
    z = z + a * mlp(rms_norm(z, p[pre + "post_attention_layernorm.weight"], cfg.eps), p, pre)
    return z


def stack(p, cfg, u):
    """The layers on inputs u [B, T, D]; returns h [B, T, D], the top residual stream."""
    z = u
    for l in range(cfg.L):
        z = block(z, p, l, cfg)
    return z


def head(p, cfg, h):
    """logits = RMSNorm_f(h) @ E^T (the LM head is the tied embedding)."""
    return linear(rms_norm(h, p["model.norm.weight"], cfg.eps), p["model.embed_tokens.weight"])


def embed(p, ids):
    """e[b, t] = E[ids[b, t]]."""
    ids = torch.as_tensor(np.asarray(ids), dtype=torch.long)
    return p["model.embed_tokens.weight"][ids]


def cross_entropy(logits, targets):
    """Mean of logsumexp(logits) - logits[target] over positions whose target != -1."""
    targets = torch.as_tensor(np.asarray(targets), dtype=torch.long)
    valid = targets != -1
    safe = torch.where(valid, targets, torch.zeros_like(targets))
    nll = torch.logsumexp(logits, dim=-1) - logits.gather(-1, safe[..., None])[..., 0]
    return nll[valid].sum() / valid.sum()


# --------------------------------------------------------------------------------------
# The feedback path
# --------------------------------------------------------------------------------------


def normalize(x, eps):
    """x / rms(x) over the last dimension, no scale (fbt.normalize)."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


def plain(cfg, e):
    """The plain input at a position: e, or norm(e) with input_norm."""
    return normalize(e, cfg.eps) if cfg.input_norm else e


def carried(p, cfg, h):
    """The state a position carries to the next: h, or RMSNorm_f(h) (post_norm)."""
    return rms_norm(h, p["model.norm.weight"], cfg.eps) if cfg.state == "post_norm" else h


def fuse(p, cfg, e, s):
    """fuse(e, s): the raw token embedding e combined with the carried state s.

    glu: out_norm?([plain(e) +] (W_U state_norm?(s)) * sigmoid(W_G gate_norm?(e))),
    the plain term with token_residual.
    add and concat read the plain input; none returns it.
    """
    if cfg.fusion == "none":  # no feedback path: the plain input
        return plain(cfg, e)
    if cfg.state_norm:
        s = normalize(s, cfg.eps)
    if cfg.fusion == "glu":  # (W_U s) * sigmoid(W_G e): state on the value path, token gates
        g = normalize(e, cfg.eps) if cfg.gate_norm else e
        u = linear(s, p["feedback.value_proj.weight"]) * torch.sigmoid(
            linear(g, p["feedback.gate_proj.weight"]))
        if cfg.token_residual:
            u = plain(cfg, e) + u
    elif cfg.fusion == "add":  # e + W_U s
        u = plain(cfg, e) + linear(s, p["feedback.value_proj.weight"])
    elif cfg.fusion == "concat":  # W [e; s], e first
        u = linear(torch.cat([plain(cfg, e), s], dim=-1), p["feedback.proj.weight"])
    else:
        raise ValueError("unknown fusion %r" % cfg.fusion)
    return normalize(u, cfg.eps) if cfg.output_norm else u


def shift_right(h):
    """s[:, t] = h[:, t-1], zero at t = 0."""
    return torch.cat([torch.zeros_like(h[:, :1]), h[:, :-1]], dim=1)


def jitter_noise(shape, seed, stream, amplitude, dtype):
    """amplitude * (2 * uniform(seed, stream, i) - 1), i the row-major flat index."""
    n = int(np.prod(shape))
    u = uniform(seed, stream, np.arange(n, dtype=np.uint64)).reshape(shape)
    return torch.from_numpy(amplitude * (2.0 * u - 1.0)).to(dtype)


def select(mask, on_true, on_false):
    """Per position: mask[b, t] ? on_true[b, t] : on_false[b, t] (mask holds 0.0 / 1.0)."""
    m = torch.as_tensor(np.asarray(mask)) != 0
    return torch.where(m[..., None], on_true, on_false)


# --------------------------------------------------------------------------------------
# The K-pass training objective
# --------------------------------------------------------------------------------------


def first_trained_pass(K, grad_passes):
    """With grad_passes G in (0, K-1), passes 2..K-G run forward only."""
    return 2 if grad_passes <= 0 or grad_passes >= K - 1 else K - grad_passes + 1


def multipass(p, cfg, ids, K, seed, jitter=True, mask=None):
    """Runs the K passes. Returns (states [s_1..s_K], logits [l_1..l_K], inputs [u_1..u_K]),
    s_k the carried states of pass k (carried(h_k)).

    jitter: True -> cfg.jitter, False -> none, a number -> that amplitude.
    mask:   None -> feedback_mask(ids, cfg, seed); else a [B, T] array of 0/1 to use instead.
    """
    amplitude = cfg.jitter if jitter is True else (0.0 if jitter is False else float(jitter))
    e = embed(p, ids)
    if mask is None and K > 1:
        mask = feedback_mask(ids, cfg, seed)
    first = first_trained_pass(K, cfg.grad_passes)
    states, logits, inputs = [], [], []
    u0 = plain(cfg, e)  # pass 1: the plain inputs
    u = u0
    for k in range(1, K + 1):
        if k > 1:
            s = shift_right(states[-1])
            if cfg.detach_state or (k == first and first > 2):
                s = s.detach()
            if amplitude:
                s = s + jitter_noise(s.shape, seed, k, amplitude, s.dtype)  # stream k
            u = select(mask, fuse(p, cfg, e, s), u0)
        h = stack(p, cfg, u)
        inputs.append(u)
        states.append(carried(p, cfg, h))
        logits.append(head(p, cfg, h))
    return states, logits, inputs


def loss_weights(K, cfg):
    """[1, lambda/(K-1) ...]; with grad_passes G: [1, 0 .., lambda/G x G]."""
    first = first_trained_pass(K, cfg.grad_passes)
    w = [0.0] * K
    for k in range(first, K + 1):
        w[k - 1] = cfg.aux_loss_weight / (K - first + 1)
    w[0] = 1.0
    return w


def total_loss(pass_losses, cfg):
    """L = L_1 + lambda * mean(L_2..L_K) (the mean over the trained passes)."""
    return sum(w * l for w, l in zip(loss_weights(len(pass_losses), cfg), pass_losses))


def train_objective(p, cfg, ids, targets, K, seed, jitter=True, mask=None):
    """(total loss, [L_1..L_K], [s_1..s_K]); differentiate the total with autograd."""
    states, logits, _ = multipass(p, cfg, ids, K, seed, jitter, mask)
    pass_losses = [cross_entropy(lg, targets) for lg in logits]
    return total_loss(pass_losses, cfg), pass_losses, states


def loss_and_grads(params, cfg, ids, targets, K, seed, jitter=True, mask=None):
    """(total loss float, [pass losses floats], OrderedDict of gradients) at `params`."""
    p = with_grad(params)
    loss, pass_losses, _ = train_objective(p, cfg, ids, targets, K, seed, jitter, mask)
    grads = torch.autograd.grad(loss, list(p.values()), allow_unused=True)
    out = OrderedDict()
    for (name, w), g in zip(p.items(), grads):
        out[name] = torch.zeros_like(w).detach() if g is None else g.detach()
    return float(loss), [float(x) for x in pass_losses], out


# --------------------------------------------------------------------------------------
# Optimizer: global-norm clipping + AdamW
# --------------------------------------------------------------------------------------


def adamw_init(params):
    return {"step": 0,
            "m": OrderedDict((n, torch.zeros_like(w)) for n, w in params.items()),
            "v": OrderedDict((n, torch.zeros_like(w)) for n, w in params.items())}


def adamw_step(params, grads, state, cfg, lr):
    """One step; returns (new params, new state, grad norm before clipping).

    g = sqrt(sum of grad^2 over all parameters); grad *= min(1, clip / (g + 1e-6));
    m = b1 m + (1-b1) grad; v = b2 v + (1-b2) grad^2;
    decayed matrices: p *= 1 - lr * wd; then p -= lr / (1-b1^t) * m / (sqrt(v)/sqrt(1-b2^t) + eps).
    `state` None starts from zero moments; t counts from 1.
    """
    if state is None:
        state = adamw_init(params)
    b1, b2 = cfg.beta1, cfg.beta2
    t = state["step"] + 1
    norm = math.sqrt(sum(float((g.double() ** 2).sum()) for g in grads.values()))
    clip = 1.0
    if cfg.grad_clip > 0:
        clip = min(1.0, cfg.grad_clip / (norm + 1e-6))
    new_params, new_m, new_v = OrderedDict(), OrderedDict(), OrderedDict()
    for name, w in params.items():
        g = grads[name] * clip
        m = b1 * state["m"][name] + (1 - b1) * g
        v = b2 * state["v"][name] + (1 - b2) * g * g
        w = w.detach()
        if decayed(name):
            w = w * (1 - lr * cfg.weight_decay)
        step_size = lr / (1 - b1 ** t)
        denom = torch.sqrt(v) / math.sqrt(1 - b2 ** t) + cfg.adam_epsilon
        new_params[name] = w - step_size * m / denom
        new_m[name], new_v[name] = m, v
    return new_params, {"step": t, "m": new_m, "v": new_v}, norm


def train_steps(params, cfg, ids, targets, K, seed, lrs, jitter=True):
    """len(lrs) steps on one batch and seed. Returns a dict with per-step loss, pass_losses,
    grad_norm, the first step's gradients (before clipping) and the final params."""
    state = None
    record = {"loss": [], "pass_losses": [], "grad_norm": [], "first_grads": None}
    for lr in lrs:
        loss, pass_losses, grads = loss_and_grads(params, cfg, ids, targets, K, seed, jitter)
        if record["first_grads"] is None:
            record["first_grads"] = grads
        params, state, norm = adamw_step(params, grads, state, cfg, lr)
        record["loss"].append(loss)
        record["pass_losses"].append(pass_losses)
        record["grad_norm"].append(norm)
    record["params"] = params
    record["state"] = state
    return record


# --------------------------------------------------------------------------------------
# Decoding regimes
# --------------------------------------------------------------------------------------
#
# A KV cache holds, per layer, the keys and values of earlier positions; with causal
# attention they depend only on the inputs at those positions. So "decode one step with the
# cache" equals "run the stack on all inputs chosen so far and read the last position",
# which is what these helpers do (O(T^2), fine at test sizes).


def prefill(p, cfg, ids):
    """Plain inputs over every position: (carried states [B, T, D], logits [B, T, V])."""
    h = stack(p, cfg, plain(cfg, embed(p, ids)))
    return carried(p, cfg, h), head(p, cfg, h)


def soft_decode_teacher_forced(p, cfg, ids, prompt_len=1):
    """The sequential soft recurrence over the given tokens.

    Step t uses u_t = plain(e_t) for t < max(1, prompt_len) and u_t = fuse(e_t, s_{t-1})
    after, s the carried state; h_t is the top state of position t when the stack runs on
    u_0..u_t. Returns (carried states [B, T, D], logits [B, T, V]).
    """
    e = embed(p, ids)
    T = e.shape[1]
    inputs, hs, states = [], [], []
    for t in range(T):
        if t < max(1, prompt_len):
            u_t = plain(cfg, e[:, t])
        else:
            u_t = fuse(p, cfg, e[:, t], states[-1])
        inputs.append(u_t)
        h = stack(p, cfg, torch.stack(inputs, dim=1))[:, t]
        hs.append(h)
        states.append(carried(p, cfg, h))
    return torch.stack(states, dim=1), head(p, cfg, torch.stack(hs, dim=1))


def fused_prefill(p, cfg, ids, n):
    """Pass 1 plain over the prompt, passes 2..n fused (mask 1 for t >= 1, no jitter).

    Returns (s_n, logits_n, u_n): the last pass's carried states, logits and inputs (u_n
    is what the fresh KV cache of pass n was built from).
    """
    ids = np.asarray(ids)
    states, logits, inputs = multipass(p, cfg, ids, n, seed=0, jitter=False,
                                       mask=full_mask(*ids.shape))
    return states[-1], logits[-1], inputs[-1]


def parse_regime(regime, n=None):
    """'standard' | 'soft' | 'fused' (with n) | 'fused[n]' -> (kind, n)."""
    if regime.startswith("fused[") and regime.endswith("]"):
        return "fused", int(regime[len("fused["):-1])
    if regime == "fused":
        return "fused", 2 if n is None else int(n)
    if regime in ("standard", "soft"):
        return regime, 1
    raise ValueError("unknown decoding regime %r" % regime)


def generate_greedy(p, cfg, prompt, max_new_tokens, regime="standard", n=None):
    """Greedy decoding of max_new_tokens after `prompt` [B, P] (rows of equal length).

    standard:  every input is the plain embedding.
    soft:      plain prefill, then u_t = fuse(e_t, s_{t-1}) for every generated token.
    fused[n]:  fused_prefill with n passes, then as soft (fused[1] is soft).
    Returns (tokens [B, N] int64, logits [B, N, V] of each step's choice).
    """
    kind, n = parse_regime(regime, n)
    prompt = np.asarray(prompt)
    if kind == "fused":
        states, logits, inputs = fused_prefill(p, cfg, prompt, n)
    else:
        inputs = plain(cfg, embed(p, prompt))
        h = stack(p, cfg, inputs)
        states, logits = carried(p, cfg, h), head(p, cfg, h)
    last_s = states[:, -1]
    last_logits = logits[:, -1]
    tokens, step_logits = [], []
    for step in range(max_new_tokens):
        tok = torch.argmax(last_logits, dim=-1)
        tokens.append(tok)
        step_logits.append(last_logits)
        if step == max_new_tokens - 1:
            break
        e = p["model.embed_tokens.weight"][tok]
        u = plain(cfg, e) if kind == "standard" else fuse(p, cfg, e, last_s)
        inputs = torch.cat([inputs, u[:, None]], dim=1)
        last_h = stack(p, cfg, inputs)[:, -1]
        last_s = carried(p, cfg, last_h)
        last_logits = head(p, cfg, last_h)
    return torch.stack(tokens, dim=1), torch.stack(step_logits, dim=1)
