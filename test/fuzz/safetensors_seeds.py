"""safetensors_seeds.py OUT_DIR: small checkpoints for safetensors_fuzzer,
written by hand after the public format (8-byte little-endian header length,
the JSON header, the data): every dtype the reader takes, a scalar, an empty
tensor, metadata, and a header padded with spaces."""
import json
import os
import struct
import sys

out = sys.argv[1]


def write(name, tensors, metadata=None, pad=0):
    header, data = {}, b""
    for tname, dtype, shape, raw in tensors:
        header[tname] = {"dtype": dtype, "shape": shape,
                         "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if metadata:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode() + b" " * pad
    with open(os.path.join(out, name), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)


write("dtypes.safetensors", [
    ("f32", "F32", [2, 2], struct.pack("<4f", 1, -2, 0.5, 3)),
    ("bf16", "BF16", [3], struct.pack("<3H", 0x3F80, 0xC000, 0x7FC0)),
    ("f16", "F16", [2], struct.pack("<2H", 0x3C00, 0x7C00)),
    ("i32", "I32", [2], struct.pack("<2i", 7, -1)),
    ("i64", "I64", [1], struct.pack("<q", 1 << 40)),
    ("u8", "U8", [3], b"abc")], {"format": "pt", "step": "12"})
write("scalar.safetensors", [("s", "F32", [], struct.pack("<f", 2.5))])
write("empty.safetensors", [("e", "F32", [0, 4], b"")], pad=5)
write("model.safetensors", [
    ("model.embed_tokens.weight", "F32", [4, 2], struct.pack("<8f", *range(8))),
    ("model.norm.weight", "F32", [2], struct.pack("<2f", 1, 1))])
