"""Turns a CPU bundle into an NVIDIA-target one, for the GPU loader's tests
on machines without a GPU.

usage: make_gpu_bundle.py IN.fbtb OUT.fbtb KIND
KIND: valid | bad-block | bad-grid | no-launches | no-entry | no-ptx | sm_80
The plans and kernel names stay; kernels.so is replaced by a stand-in
kernels.ptx (not real PTX: these bundles are for the loader and for the
errors of machines that cannot run them), and every kernel gets one launch.
"""

import json
import struct
import sys


def fnv1a64(data):
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return h


def read(path):
    data = open(path, "rb").read()
    n = struct.unpack_from("<Q", data, 8)[0]
    return json.loads(data[24:24 + n])


def write(path, manifest, blobs):
    table, area = {}, b""
    for name, payload in blobs:
        area += b"\0" * (-len(area) % 64)
        table[name] = {"offset": len(area), "size": len(payload),
                       "fnv1a64": "%016x" % fnv1a64(payload)}
        area += payload
    manifest["blobs"] = table
    text = json.dumps(manifest, separators=(",", ":")).encode()
    header = b"FBTBNDL2" + struct.pack("<QQ", len(text), fnv1a64(text))
    body = header + text
    body += b"\0" * (-len(body) % 64)
    open(path, "wb").write(body + area)


def main():
    src, dst, kind = sys.argv[1:4]
    m = read(src)
    m["target"] = {"kind": "nvptx", "chip": "sm_90", "features": "+ptx80"}
    m["launches"] = {k: [{"entry": k, "grid": [4, 1, 1], "block": [128, 1, 1],
                          "shared_bytes": 0}] for k in m["kernels"]}
    first = m["kernels"][0]
    ptx = "//\n// stand-in PTX\n//\n.version 8.0\n.target sm_90\n.address_size 64\n"
    blobs = [("kernels.ptx", ptx.encode())]
    if kind == "bad-block":
        m["launches"][first][0]["block"] = [2048, 1, 1]
    elif kind == "bad-grid":
        m["launches"][first][0]["grid"] = [0, 1, 1]
    elif kind == "no-launches":
        del m["launches"][first]
    elif kind == "no-entry":
        m["launches"][first][0]["entry"] = ""
    elif kind == "no-ptx":
        blobs = []
    elif kind == "sm_80":
        m["target"]["chip"] = "sm_80"
    elif kind != "valid":
        sys.exit("unknown kind " + kind)
    write(dst, m, blobs)


if __name__ == "__main__":
    main()
