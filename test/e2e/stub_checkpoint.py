"""Writes a minimal safetensors checkpoint that names a model and a step:
one F32 tensor `x` of shape [1] (zero), for the loader's tests of a
checkpoint of another model.

usage: stub_checkpoint.py OUT.safetensors --model NAME --step N

Prints what it wrote.
"""
import argparse
import json
import struct


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--model", required=True)
    p.add_argument("--step", type=int, required=True)
    a = p.parse_args()
    header = json.dumps({"__metadata__": {"fbt.model": a.model, "fbt.step": str(a.step)},
                         "x": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]}}).encode()
    # safetensors: the header's length (u64, little-endian), the header, the data.
    with open(a.out, "wb") as f:
        f.write(struct.pack("<Q", len(header)) + header + bytes(4))
    print(f"wrote {a.out}: model {a.model!r}, step {a.step}")


if __name__ == "__main__":
    main()
