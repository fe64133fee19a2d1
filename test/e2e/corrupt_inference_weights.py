"""Damages a file of inference weights (fbt quantize) in one named way, for
the loader's error tests.

usage: corrupt_inference_weights.py IN.safetensors OUT.safetensors KIND
KIND: flip-value       one int8 value's bit, the fingerprint left as written
      nan-scale | inf-scale | negative-scale
                       the first int8 matrix's scale of row 1, group 0
      scale-shape      the first scales tensor one group short per row
The last four rewrite fbt.weights_hash to match the damaged tensors (the
runtime's rule, runtime/format/InferenceFile.cpp), so the loader must catch
them by reading the tensors, not by the fingerprint.
"""

import json
import struct
import sys

import numpy as np

from corrupt_bundle import fnv1a64


def mix(h, text):
    """fnvMix: the text's bytes, then their length (runtime/base/Hash.h)."""
    data = text.encode()
    return fnv1a64(len(data).to_bytes(8, "little"), fnv1a64(data, h))


def fingerprint(tensors):
    h = fnv1a64(b"")
    for name in sorted(tensors):
        dtype, shape, data = tensors[name]
        h = mix(h, name)
        h = mix(h, dtype)
        h = mix(h, "[" + ", ".join(str(d) for d in shape) + "]")
        h = fnv1a64(data, h)
    return "%016x" % h


def read(path):
    raw = open(path, "rb").read()
    n = struct.unpack_from("<Q", raw, 0)[0]
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", {})
    body = raw[8 + n:]
    tensors = {k: (v["dtype"], v["shape"], bytearray(body[v["data_offsets"][0]:v["data_offsets"][1]]))
               for k, v in header.items()}
    return tensors, meta


def write(path, tensors, meta):
    header, body = {"__metadata__": meta}, bytearray()
    for name, (dtype, shape, data) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape,
                        "data_offsets": [len(body), len(body) + len(data)]}
        body += data
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + bytes(body))


def main():
    src, dst, kind = sys.argv[1:4]
    tensors, meta = read(src)
    scales = sorted(k for k in tensors if k.startswith("int8_scales."))[0]
    values = "int8." + scales[len("int8_scales."):]
    if kind == "flip-value":
        tensors[values][2][0] ^= 0x01
    elif kind.endswith("-scale"):
        dtype, shape, data = tensors[scales]
        bad = {"nan-scale": np.nan, "inf-scale": np.inf, "negative-scale": -0.5}[kind]
        data[2 * shape[1]:2 * shape[1] + 2] = np.float16(bad).tobytes()
    elif kind == "scale-shape":
        dtype, shape, data = tensors[scales]
        rows, groups = shape
        kept = b"".join(data[2 * r * groups:2 * (r * groups + groups - 1)] for r in range(rows))
        tensors[scales] = (dtype, [rows, groups - 1], bytearray(kept))
    else:
        sys.exit("unknown kind " + kind)
    if kind != "flip-value":
        meta["fbt.weights_hash"] = fingerprint(tensors)
    write(dst, tensors, meta)


if __name__ == "__main__":
    main()
