"""Checks that a checkpoint is whole and finite: its file is exactly the
header and the data its tensors' offsets cover, and every value (all F32)
is finite. A run stopped by a non-finite loss must leave its last
checkpoint so.

usage: check_finite_checkpoint.py CKPT.safetensors

Prints `finite checkpoint at step N` (its fbt.step); exits 1 naming what is
wrong.
"""
import array
import json
import math
import struct
import sys


def main():
    d = open(sys.argv[1], "rb").read()
    n = struct.unpack("<Q", d[:8])[0]
    h = json.loads(d[8:8 + n])
    m = h.pop("__metadata__")
    if 8 + n + max(t["data_offsets"][1] for t in h.values()) != len(d):
        sys.exit(f"FAIL: {sys.argv[1]}: size {len(d)} is not what its tensors cover")
    a = array.array("f")
    a.frombytes(d[8 + n:])
    if not all(map(math.isfinite, a)):
        sys.exit(f"FAIL: {sys.argv[1]}: non-finite values")
    print("finite checkpoint at step", m["fbt.step"])


if __name__ == "__main__":
    main()
