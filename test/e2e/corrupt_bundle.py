"""Damages a bundle in one named way, for the loader's error tests.

usage: corrupt_bundle.py IN.fbtb OUT.fbtb KIND
KIND: truncate-header | truncate-manifest | truncate-kernels | flip-manifest |
      flip-kernels | magic | version | target | bad-plan
`target` and `bad-plan` rewrite the manifest with a valid checksum, so the
loader must catch them by reading it, not by the checksum.
"""

import json
import struct
import sys


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def rewrite(data, edit):
    n = struct.unpack_from("<Q", data, 8)[0]
    manifest = json.loads(data[24:24 + n])
    edit(manifest)
    text = json.dumps(manifest, separators=(",", ":")).encode()
    # Keep the blob area where it was: pad the manifest with spaces.
    assert len(text) <= n
    text += b" " * (n - len(text))
    return data[:8] + struct.pack("<QQ", n, fnv1a64(text)) + text + data[24 + n:]


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
    else:
        sys.exit("unknown kind " + kind)
    open(dst, "wb").write(bytes(data))


if __name__ == "__main__":
    main()
