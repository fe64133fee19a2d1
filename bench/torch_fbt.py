"""A PyTorch implementation of the FBT training step, the peer our compiled
steps are measured against (eager, fp32 on the CPU; bf16 autocast and
torch.compile on GPUs). It is written the way a PyTorch user would write it:
nn.Linear, F.scaled_dot_product_attention, torch.optim.AdamW, random jitter
from torch. The numerics oracle is test/reference/fbt_reference.py; this file
is for speed.

Devices: the model lives wherever `.to(device)` puts it; train_step takes an
optional autocast dtype (torch.bfloat16 on GPUs: bf16 GEMMs, fp32 params and
optimizer state) and decode allocates its KV cache beside the prompt.
compile_model applies torch.compile where the installed torch has it.
"""

import contextlib
import json
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def normalize(x, eps):
    """x / rms(x), no scale: the recipe's norms (fbt.normalize)."""
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)


class RMSNorm(nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(T, dh, theta, device, dtype):
    inv = 1.0 / theta ** (torch.arange(0, dh, 2, device=device, dtype=torch.float32) / dh)
    ang = torch.outer(torch.arange(T, device=device, dtype=torch.float32), inv)
    ang = torch.cat([ang, ang], dim=-1)
    return ang.cos().to(dtype), ang.sin().to(dtype)


def rope(x, cos, sin):
    """In the tables' precision, back in x's (bf16 under autocast)."""
    h = x.shape[-1] // 2
    return (x * cos + torch.cat([-x[..., h:], x[..., :h]], dim=-1) * sin).to(x.dtype)


def causal_attention(q, k, v):
    if hasattr(F, "scaled_dot_product_attention"):  # torch >= 2.0
        return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    T = q.shape[-2]
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])
    causal = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    return scores.masked_fill(~causal, float("-inf")).softmax(-1) @ v


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, f = c["hidden_size"], c["intermediate_size"]
        self.h = c["num_attention_heads"]
        self.n1, self.n2 = RMSNorm(d, c["rms_norm_eps"]), RMSNorm(d, c["rms_norm_eps"])
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.gate_up = nn.Linear(d, 2 * f, bias=False)
        self.down = nn.Linear(f, d, bias=False)

    def forward(self, z, a, cos, sin):
        B, T, D = z.shape
        q, k, v = self.qkv(self.n1(z)).view(B, T, 3, self.h, D // self.h).unbind(2)
        q, k, v = (t.transpose(1, 2) for t in (q, k, v))
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        y = causal_attention(q, k, v)
        z = z + a * self.o(y.transpose(1, 2).reshape(B, T, D))
        g, u = self.gate_up(self.n2(z)).chunk(2, dim=-1)
        return z + a * self.down(F.silu(g) * u)


class FBT(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, L = c["hidden_size"], c["num_hidden_layers"]
        self.c = c
        self.embed = nn.Embedding(c["vocab_size"], d)
        self.blocks = nn.ModuleList(Block(c) for _ in range(L))
        self.norm = RMSNorm(d, c["rms_norm_eps"])
        self.w_u = nn.Linear(d, d, bias=False)
        self.w_g = nn.Linear(d, d, bias=False)
        fb = c["feedback"]
        ds = fb.get("depth_scaling", True)
        self.a = 1 / math.sqrt(2 * L) if ds is True else (1.0 if ds is False else ds)
        # The recipe (DESIGN.md section 2; defaults as fbtc's).
        self.eps = c.get("rms_norm_eps", 1e-5)
        self.post_norm = fb.get("state", "post_norm") == "post_norm"
        self.input_norm = fb.get("input_norm", False)
        self.gate_norm = fb.get("gate_norm", True)
        self.state_norm = fb.get("state_norm", False)
        self.output_norm = fb.get("output_norm", False)
        self.token_residual = fb.get("token_residual", True)
        self.grad_passes = c["training"].get("grad_passes", 2)
        for p in self.parameters():
            if p.dim() == 2:
                nn.init.normal_(p, std=0.02)
        if fb.get("init", "normal") == "uniform":
            r = math.sqrt(3) * fb.get("init_std", 1 / math.sqrt(d))
            for w in (self.w_u.weight, self.w_g.weight):
                nn.init.uniform_(w, -r, r)

    def plain(self, e):
        return normalize(e, self.eps) if self.input_norm else e

    def fuse(self, e, s):
        """The fused input from the raw embedding e and the carried state s."""
        g = normalize(e, self.eps) if self.gate_norm else e
        if self.state_norm:
            s = normalize(s, self.eps)
        u = self.w_u(s) * torch.sigmoid(self.w_g(g))
        if self.token_residual:
            u = self.plain(e) + u
        return normalize(u, self.eps) if self.output_norm else u

    def carried(self, h):
        return self.norm(h) if self.post_norm else h

    def head_loss(self, h, targets):
        logits = F.linear(self.norm(h), self.embed.weight)
        return F.cross_entropy(logits.flatten(0, 1), targets.flatten())

    def passes(self, ids, targets, K, mask):
        """The K-pass objective; with grad_passes G the passes before the last G (after
        pass 1) run without autograd, the way fbt's compiled step skips their backward."""
        e = self.embed(ids)
        T = ids.shape[1]
        cos, sin = rope_tables(T, e.shape[-1] // self.blocks[0].h, self.c["rope_theta"],
                               e.device, e.dtype)
        G = self.grad_passes
        first = 2 if G <= 0 or G >= K - 1 else K - G + 1
        u0 = self.plain(e)
        losses, trained, s_prev = [], [], None
        for k in range(1, K + 1):
            with torch.set_grad_enabled(torch.is_grad_enabled() and (k == 1 or k >= first)):
                u = u0
                if k > 1:
                    s = F.pad(s_prev[:, :-1], (0, 0, 1, 0))
                    if k == first and first > 2:
                        s = s.detach()
                    s = s + self.c["feedback"]["jitter"] * (2 * torch.rand_like(s) - 1)
                    u = torch.where(mask[..., None], self.fuse(e, s), u0)
                z = u
                for blk in self.blocks:
                    z = blk(z, self.a, cos, sin)
                s_prev = self.carried(z)
                loss = self.head_loss(z, targets)
            losses.append(loss)
            if k >= first:
                trained.append(loss)
        lam = self.c["feedback"]["aux_loss_weight"]
        total = losses[0] + (lam * sum(trained) / len(trained) if trained else 0)
        return total, losses


def load_spec(path):
    with open(path) as f:
        return json.load(f)


def make_optimizer(model, c, fused=False):
    """AdamW as the spec says, no decay on the embedding and norms; fused: the
    single-kernel CUDA implementation (torch >= 2.0)."""
    t = c["training"]
    decay = [p for n, p in model.named_parameters() if p.dim() == 2 and "embed" not in n]
    rest = [p for n, p in model.named_parameters() if not (p.dim() == 2 and "embed" not in n)]
    return torch.optim.AdamW([{"params": decay, "weight_decay": t["weight_decay"]},
                              {"params": rest, "weight_decay": 0.0}],
                             lr=t["learning_rate"], betas=(t["beta1"], t["beta2"]),
                             eps=t["adam_epsilon"], **({"fused": True} if fused else {}))


def autocast(device, dtype):
    """torch.autocast(device, dtype), or nothing when dtype is None."""
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type=torch.device(device).type, dtype=dtype)


def compile_model(model, regional=True):
    """torch.compile on the model: on each block and on the head (regional, the
    recipe that bounds compile time: the blocks share one compiled graph), or on
    the whole K-pass objective. Raises where torch has no torch.compile."""
    if not hasattr(torch, "compile"):
        raise RuntimeError("torch %s has no torch.compile" % torch.__version__)
    if not regional:
        model.passes = torch.compile(model.passes)
        return model
    import torch._dynamo as dynamo_module
    dynamo = dynamo_module.config
    for knob in ("cache_size_limit", "recompile_limit"):  # one graph per block otherwise
        if hasattr(dynamo, knob):
            setattr(dynamo, knob, max(64, getattr(dynamo, knob)))
    for blk in model.blocks:
        if hasattr(blk, "compile"):  # nn.Module.compile (torch >= 2.2)
            blk.compile()
        else:
            blk.forward = torch.compile(blk.forward)
    model.head_loss = torch.compile(model.head_loss)
    return model


def train_step(model, opt, ids, targets, K, mask, clip, amp=None):
    """One optimizer step; amp: an autocast dtype for the forward (None: off)."""
    opt.zero_grad(set_to_none=True)
    with autocast(ids.device, amp):
        loss, _ = model.passes(ids, targets, K, mask)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
    opt.step()
    return loss


# ---- decoding with a KV cache (the peer for decode latency) ----

def block_step(blk, z, a, cos, sin, cache, pos):
    """One position through a block; cache holds (k, v) [B, H, S, Dh]."""
    B, _, D = z.shape
    q, k, v = blk.qkv(blk.n1(z)).view(B, 1, 3, blk.h, D // blk.h).unbind(2)
    q, k, v = (t.transpose(1, 2) for t in (q, k, v))
    q, k = rope(q, cos[pos:pos + 1], sin[pos:pos + 1]), rope(k, cos[pos:pos + 1], sin[pos:pos + 1])
    cache[0][:, :, pos:pos + 1] = k
    cache[1][:, :, pos:pos + 1] = v
    keys, values = cache[0][:, :, :pos + 1], cache[1][:, :, :pos + 1]
    att = ((q @ keys.transpose(-2, -1)) / math.sqrt(q.shape[-1])).softmax(-1) @ values
    z = z + a * blk.o(att.transpose(1, 2).reshape(B, 1, D))
    g, u = blk.gate_up(blk.n2(z)).chunk(2, dim=-1)
    return z + a * blk.down(F.silu(g) * u)


@torch.no_grad()
def decode(model, prompt, new_tokens, soft):
    """Greedy decoding with a KV cache; soft fuses the previous state."""
    c = model.c
    B, P = prompt.shape
    S = P + new_tokens
    D, H = c["hidden_size"], c["num_attention_heads"]
    dev, dt = prompt.device, model.embed.weight.dtype
    cos, sin = rope_tables(S, D // H, c["rope_theta"], dev, dt)
    caches = [(torch.zeros(B, H, S, D // H, device=dev, dtype=dt),
               torch.zeros(B, H, S, D // H, device=dev, dtype=dt)) for _ in model.blocks]
    h, token = None, None
    for pos in range(S - 1):
        token = prompt[:, pos:pos + 1] if pos < P else token
        e = model.embed(token)
        u = model.fuse(e, h) if soft and pos >= P else model.plain(e)
        z = u
        for blk, cache in zip(model.blocks, caches):
            z = block_step(blk, z, model.a, cos, sin, cache, pos)
        h = model.carried(z)
        if pos >= P - 1:
            token = F.linear(model.norm(z), model.embed.weight).argmax(-1)
    return token
