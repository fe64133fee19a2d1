#!/usr/bin/env python3
"""Writes a `fbt score --tokens` file of one row: BOS, "ABC" as its prompt,
then ID and "DEF" (a test's way to plant a bad id after the prompt).
LENGTHS_NAME, with Python's escapes, renames prompt_lengths (a fuzzer's seed
of a tensor name holding a line break).

    make_score_tokens.py OUT.safetensors ID [POSITION [LENGTHS_NAME]]
"""
import json
import struct
import sys

import numpy as np


def save(path, tensors):
    header, data, off = {}, b"", 0
    for name, arr in tensors.items():
        b = arr.tobytes()
        header[name] = {"dtype": "I32", "shape": list(arr.shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
        data += b
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + data)


ids = np.array([[0, 65, 66, 67, 68, 69, 70, 71]], dtype=np.int32)
ids[0, int(sys.argv[3]) if len(sys.argv) > 3 else 4] = int(sys.argv[2])
lengths = sys.argv[4].encode().decode("unicode_escape") if len(sys.argv) > 4 else "prompt_lengths"
save(sys.argv[1], {"input_ids": ids, lengths: np.array([4], dtype=np.int32)})
