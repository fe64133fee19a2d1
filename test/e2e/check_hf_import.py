"""An imported checkpoint holds the Hugging Face folder's weights as they are.

usage: check_hf_import.py HF_DIR CKPT.safetensors

Reads the folder's shards itself (model.safetensors.index.json, bf16 widened
by shifting its bits, as bf16 is the top half of an f32) and checks that the
checkpoint holds every weight, f32 and exactly equal, under the same name,
and nothing else: no lm_head.weight (tied), no rotary_emb.inv_freq (RoPE
recomputes it). Prints "match: N tensors" or the first difference.
"""
import json
import os
import struct
import sys

import numpy as np


def read(path):
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    out = {}
    for name, t in header.items():
        begin, end = t["data_offsets"]
        raw = data[8 + n + begin:8 + n + end]
        if t["dtype"] == "BF16":
            bits = np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16
            values = bits.view(np.float32)
        else:
            assert t["dtype"] == "F32", (name, t["dtype"])
            values = np.frombuffer(raw, dtype="<f4")
        out[name] = (t["dtype"], values.reshape(t["shape"]))
    return out


def main():
    folder, ckpt = sys.argv[1], sys.argv[2]
    index = json.load(open(os.path.join(folder, "model.safetensors.index.json")))
    theirs = {}
    for shard in sorted(set(index["weight_map"].values())):
        theirs.update(read(os.path.join(folder, shard)))
    ours = read(ckpt)
    expected = {k: v for k, v in theirs.items()
                if "rotary_emb.inv_freq" not in k and k != "lm_head.weight"}
    if sorted(ours) != sorted(expected):
        sys.exit("names differ: only ours %s, only theirs %s"
                 % (sorted(set(ours) - set(expected)), sorted(set(expected) - set(ours))))
    for name, (_, want) in expected.items():
        dtype, got = ours[name]
        if dtype != "F32" or got.shape != want.shape or not np.array_equal(got, want):
            sys.exit("tensor %s differs (%s %s, theirs %s)" % (name, dtype, got.shape, want.shape))
    print("match: %d tensors" % len(expected))


if __name__ == "__main__":
    main()
