"""Prints an NVIDIA bundle's target, blobs and launch table, for FileCheck.

usage: gpu_bundle.py BUNDLE [KERNEL_STEM...]

Reads the .fbtb format (codegen/BundleWriter.h): the manifest's target, each
blob's size and first bytes (a cubin is an ELF file for machine EM_CUDA), and
for each kernel whose name ends in one of the stems, its launches in order.
"""
import json
import struct
import sys


def main():
    path, stems = sys.argv[1], sys.argv[2:]
    data = open(path, "rb").read()
    assert data[:8] == b"FBTBNDL1", "not a bundle"
    (length,) = struct.unpack("<Q", data[8:16])
    manifest = json.loads(data[24:24 + length])
    blob_base = (24 + length + 63) // 64 * 64
    t = manifest["target"]
    print(f"target {t['kind']} {t['chip']} {t['features']}")
    for name, blob in sorted(manifest["blobs"].items()):
        body = data[blob_base + blob["offset"]:blob_base + blob["offset"] + blob["size"]]
        if body[:4] == b"\x7fELF":
            (machine,) = struct.unpack("<H", body[18:20])
            kind = f"elf machine={machine}"
        else:
            kind = body.split(b"\n")[0][:40].decode("ascii", "replace")
        print(f"blob {name} {kind}")
    launches = manifest["launches"]
    print(f"kernels {len(manifest['kernels'])} launches {sum(len(v) for v in launches.values())}")
    for kernel in manifest["kernels"]:
        if any(kernel.split("_", 1)[1] == s for s in stems):
            parts = [f"{l['entry']} grid={l['grid'][0]} block={l['block'][0]}"
                     for l in launches[kernel]]
            print(f"{kernel.split('_', 1)[1]}: " + "; ".join(parts))


if __name__ == "__main__":
    main()
