"""Damages a bundle in one named way, for the loader's error tests.

usage: corrupt_bundle.py IN.fbtb OUT.fbtb KIND
KIND: truncate-header | truncate-manifest | truncate-kernels | flip-manifest |
      flip-kernels | magic | version | target | bad-plan | early-write
`target`, `bad-plan` and `early-write` rewrite the manifest with a valid
checksum, so the loader must catch them by reading it, not by the checksum.
`early-write` (a GPU or simt bundle) places a kernel's early-written argument
on another argument of the same call.
"""

import json
import struct
import sys


def fnv1a64(data, h=0xcbf29ce484222325):
    """FNV-1a of `data`, continued from `h` (runtime/base/Hash.h)."""
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def align64(v):
    return (v + 63) // 64 * 64


def rewrite(data, edit):
    n = struct.unpack_from("<Q", data, 8)[0]
    manifest = json.loads(data[24:24 + n])
    edit(manifest)
    text = json.dumps(manifest, separators=(",", ":")).encode()
    # Blob offsets count from the start of the blob area (the manifest's end,
    # 64-aligned): the area moves with the manifest unchanged.
    area = data[align64(24 + n):]
    head = data[:8] + struct.pack("<QQ", len(text), fnv1a64(text)) + text
    return head + b" " * (align64(len(head)) - len(head)) + area


def main():
    src, dst, kind = sys.argv[1:4]
    data = bytearray(open(src, "rb").read())
    n = struct.unpack_from("<Q", data, 8)[0]
    if kind == "truncate-header":
        data = data[:10]
    elif kind == "truncate-manifest":
        data = data[:24 + n // 2]
    elif kind == "truncate-kernels":
        data = data[:len(data) - 1000]
    elif kind == "flip-manifest":
        data[24 + n // 3] ^= 0x40
    elif kind == "flip-kernels":
        data[len(data) - 5000] ^= 0x01
    elif kind == "magic":
        data[0:4] = b"ELF\x7f"
    elif kind == "version":
        data[4:8] = b"NDL9"
    elif kind == "target":
        data = rewrite(bytes(data), lambda m: m["target"].update(kind="sm_90"))
    elif kind == "bad-plan":
        def edit(m):
            op = m["steps"]["train_k1"]["ops"][0]
            op["args"][0][2] = 1 << 40  # an offset far outside its buffer
        data = rewrite(bytes(data), edit)
    elif kind == "early-write":
        def edit(m):
            kernel, args = next(iter(m["early_writes"].items()))
            for step in m["steps"].values():
                for op in step["ops"]:
                    if op.get("kernel") == kernel:
                        e = args[0]
                        other = op["args"][0 if e != 0 else 1]
                        op["args"][e] = list(other[:3]) + [min(other[3], op["args"][e][3])]
                        return
            sys.exit("no call of " + kernel)
        data = rewrite(bytes(data), edit)
    else:
        sys.exit("unknown kind " + kind)
    open(dst, "wb").write(bytes(data))


if __name__ == "__main__":
    main()
