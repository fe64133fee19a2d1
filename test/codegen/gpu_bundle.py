"""Prints an NVIDIA bundle's target, blobs and launch table, for FileCheck.

usage: gpu_bundle.py BUNDLE [KERNEL_STEM...]

Reads the .fbtb format (docs/bundle-format.md): the manifest's target, each
blob's size and first bytes (a cubin is an ELF file for machine EM_CUDA), and
for each kernel whose name ends in one of the stems, its launches in order
(with their static shared memory, where they declare any), and whether
every launch's recorded shared memory is what its PTX's .shared arrays add up to.
"""
import json
import re
import struct
import sys


def ptx_shared(ptx):
    """Bytes of .shared arrays each .entry of the PTX declares."""
    out, entry = {}, None
    for line in ptx.splitlines():
        m = re.match(r"\.visible \.entry (\w+)\(", line)
        if m:
            entry = m.group(1)
            out[entry] = 0
        m = re.search(r"\.shared \.align \d+ \.b8 \w+\[(\d+)\]", line)
        if m and entry:
            out[entry] += int(m.group(1))
    return out


def main():
    path, stems = sys.argv[1], sys.argv[2:]
    data = open(path, "rb").read()
    assert data[:8] == b"FBTBNDL2", "not a bundle"
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
    # Each launch's recorded shared memory is what its PTX declares.
    ptx = manifest["blobs"]["kernels.ptx"]
    declared = ptx_shared(data[blob_base + ptx["offset"]:blob_base + ptx["offset"] + ptx["size"]]
                          .decode())
    wrong = [l["entry"] for v in launches.values() for l in v
             if l["shared_bytes"] != declared.get(l["entry"])]
    print("shared bytes as the PTX declares" if not wrong else "shared bytes differ: %s" % wrong)
    for kernel in manifest["kernels"]:
        if any(kernel.split("_", 1)[1] == s for s in stems):
            parts = [f"{l['entry']} grid={l['grid'][0]} block={l['block'][0]}"
                     + (f" shared={l['shared_bytes']}" if l["shared_bytes"] else "")
                     for l in launches[kernel]]
            print(f"{kernel.split('_', 1)[1]}: " + "; ".join(parts))


if __name__ == "__main__":
    main()
