"""Writes a small Hugging Face LlamaForCausalLM folder, as the hub holds them.

usage: make_hf_llama.py OUT_DIR [--seed S]

OUT_DIR gets what `fbt import` reads, written here byte by byte from the
formats' own descriptions (not by fbt, so the import is checked against
files it did not write):
  config.json          LlamaForCausalLM, tied embeddings, D=64 L=2 H=4 F=128,
                       vocab_size padded past the tokenizer's
  model-0000N-of-00002.safetensors + model.safetensors.index.json
                       the weights in two shards: matrices in bf16, norms in
                       f32, and a stored rotary_emb.inv_freq (which older
                       checkpoints hold and RoPE recomputes)
  tokenizer.json       a byte-level BPE (GPT-2's pre-tokenizer and byte
                       symbols, bytes in GPT-2's id order) with merges
                       learned here from a short text, and <|endoftext|> as
                       an added special token
The weights are random; the rows of tokens the text never uses (non-ASCII
bytes, <|endoftext|>) are small, as a trained model's are, so greedy text
stays printable.
"""
import argparse
import collections
import json
import os
import re
import struct

import numpy as np

TEXT = """Once upon a time there was a little robot who lived in a quiet town.
Every morning the robot walked to the market, said hello to the baker and
bought two loaves of bread. The baker smiled, because the robot always
counted the coins twice. One day the market was closed, and the robot
wondered where everyone had gone. It found them in the park, dancing
under the trees, and the robot danced too, until the sun went down.
def add(a, b):
    return a + b
print(add(2, 3))
"""

D, L, H, F = 64, 2, 4, 128
MERGES = 120


def byte_symbols():
    """GPT-2's bytes_to_unicode, in its id order: (byte, symbol) pairs."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + \
        list(range(0xAE, 0x100))
    order, symbols, extra = list(printable), [chr(b) for b in printable], 0
    for b in range(256):
        if b not in printable:
            order.append(b)
            symbols.append(chr(256 + extra))
            extra += 1
    return list(zip(order, symbols))


def learn_merges(symbol_of):
    """Byte-pair merges by frequency over TEXT's words (a plain split: any
    merge list is a valid vocabulary; GPT-2's regex decides at encode time)."""
    words = collections.Counter(re.findall(r" ?[A-Za-z]+| ?[0-9]+| ?[^\sA-Za-z0-9]+|\s+", TEXT))
    seqs = {w: [symbol_of[b] for b in w.encode()] for w in words}
    merges = []
    for _ in range(MERGES):
        pairs = collections.Counter()
        for w, n in words.items():
            s = seqs[w]
            for a, b in zip(s, s[1:]):
                pairs[(a, b)] += n
        if not pairs:
            break
        (a, b), _ = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))
        merges.append((a, b))
        for w in seqs:
            s, out, i = seqs[w], [], 0
            while i < len(s):
                if i + 1 < len(s) and s[i] == a and s[i + 1] == b:
                    out.append(a + b)
                    i += 2
                else:
                    out.append(s[i])
                    i += 1
            seqs[w] = out
    return merges


def tokenizer_json(pairs, merges):
    vocab = {sym: i for i, (_, sym) in enumerate(pairs)}
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    eot = len(vocab)
    vocab["<|endoftext|>"] = eot
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                  "use_regex": True}
    return {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": eot, "content": "<|endoftext|>", "single_word": False,
                          "lstrip": False, "rstrip": False, "normalized": True,
                          "special": True}],
        "normalizer": None, "pre_tokenizer": byte_level, "post_processor": byte_level,
        "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": "", "end_of_word_suffix": "",
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": [[a, b] for a, b in merges]},
    }, eot


def bf16_bytes(x):
    """Round to nearest even, as torch's float32 -> bfloat16 does."""
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype("<u2").tobytes()


def write_safetensors(path, tensors):
    """tensors: name -> (dtype, shape, bytes), laid out in the given order."""
    header, offset = {"__metadata__": {"format": "pt"}}, 0
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {"dtype": dtype, "shape": list(shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for _, (_, _, data) in tensors.items():
            f.write(data)


def weights(rng, vocab, used):
    def matrix(rows, cols, std):
        return rng.normal(0, std, (rows, cols)).astype(np.float32)
    embed = matrix(vocab, D, 1.0)
    embed[~used] *= 0.05
    out = collections.OrderedDict()
    out["model.embed_tokens.weight"] = embed
    for layer in range(L):
        p = "model.layers.%d." % layer
        for n in ("q_proj", "k_proj", "v_proj", "o_proj"):
            out[p + "self_attn.%s.weight" % n] = matrix(D, D, 0.25)
        out[p + "mlp.gate_proj.weight"] = matrix(F, D, 0.2)
        out[p + "mlp.up_proj.weight"] = matrix(F, D, 0.2)
        out[p + "mlp.down_proj.weight"] = matrix(D, F, 0.15)
        out[p + "input_layernorm.weight"] = 1 + rng.normal(0, 0.1, D).astype(np.float32)
        out[p + "post_attention_layernorm.weight"] = \
            1 + rng.normal(0, 0.1, D).astype(np.float32)
    out["model.norm.weight"] = 1 + rng.normal(0, 0.1, D).astype(np.float32)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)

    pairs = byte_symbols()
    symbol_of = dict(pairs)
    merges = learn_merges(symbol_of)
    tok, eot = tokenizer_json(pairs, merges)
    vocab = (eot + 1 + 7) // 8 * 8 + 8  # padded, as hub models pad theirs
    used = np.zeros(vocab, dtype=bool)
    for b in TEXT.encode():
        used[[i for i, (byte, _) in enumerate(pairs) if byte == b][0]] = True
    used[len(pairs):eot] = True  # the merges' tokens
    with open(os.path.join(args.out, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tok, f, ensure_ascii=False, indent=2)

    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama",
        "vocab_size": vocab, "hidden_size": D, "intermediate_size": F,
        "num_hidden_layers": L, "num_attention_heads": H, "num_key_value_heads": H,
        "hidden_act": "silu", "max_position_embeddings": 256, "rms_norm_eps": 1e-5,
        "rope_theta": 10000.0, "rope_scaling": None, "attention_bias": False,
        "mlp_bias": False, "tie_word_embeddings": True, "bos_token_id": eot,
        "eos_token_id": eot, "torch_dtype": "bfloat16", "initializer_range": 0.02,
        "pretraining_tp": 1, "use_cache": True, "transformers_version": "4.46.0",
    }
    with open(os.path.join(args.out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)

    w = weights(np.random.default_rng(args.seed), vocab, used)
    shards = [collections.OrderedDict(), collections.OrderedDict()]
    for name, x in w.items():
        shard = shards[0 if name.startswith("model.embed") or ".0." in name else 1]
        if x.ndim == 2:
            shard[name] = ("BF16", x.shape, bf16_bytes(x))
        else:
            shard[name] = ("F32", x.shape, x.astype("<f4").tobytes())
    inv = 1.0 / (10000.0 ** (np.arange(0, D // H, 2, dtype=np.float32) / (D // H)))
    shards[0]["model.layers.0.self_attn.rotary_emb.inv_freq"] = ("F32", inv.shape,
                                                                 inv.astype("<f4").tobytes())
    weight_map = {}
    for i, shard in enumerate(shards):
        name = "model-%05d-of-%05d.safetensors" % (i + 1, len(shards))
        write_safetensors(os.path.join(args.out, name), shard)
        weight_map.update({t: name for t in shard})
    with open(os.path.join(args.out, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": sum(len(d) for s in shards
                                                  for _, (_, _, d) in s.items())},
                   "weight_map": weight_map}, f, indent=2)
    print("wrote %s: vocab %d (tokenizer %d, %d merges), D=%d L=%d H=%d F=%d, 2 shards"
          % (args.out, vocab, eot + 1, len(merges), D, L, H, F))


if __name__ == "__main__":
    main()
