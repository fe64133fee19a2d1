"""bundle_seeds.py OUT_DIR BUNDLE...: seeds for bundle_fuzzer. For each
bundle, its manifest with the blob table replaced by @BLOBS@ (the fuzzer
wraps it with stand-in blobs and a valid checksum) and the decoding steps
alone (small inputs fuzz fast; the training steps' plans are made of the
same parts), and the bundle itself with its blobs cut to 64 bytes (the
container's checks)."""
import json
import os
import struct
import sys

out = sys.argv[1]
for path in sys.argv[2:]:
    data = open(path, "rb").read()
    n = struct.unpack_from("<Q", data, 8)[0]
    manifest = json.loads(data[24:24 + n])
    manifest["blobs"] = "@BLOBS@"
    text = json.dumps(manifest, separators=(",", ":")).replace('"@BLOBS@"', "@BLOBS@")
    name = os.path.basename(path)
    open(os.path.join(out, name + ".manifest"), "w").write(text)
    manifest["steps"] = {k: v for k, v in manifest["steps"].items()
                         if k.startswith(("prefill", "decode"))}
    text = json.dumps(manifest, separators=(",", ":")).replace('"@BLOBS@"', "@BLOBS@")
    open(os.path.join(out, name + ".decoding"), "w").write(text)
    open(os.path.join(out, name + ".cut"), "wb").write(data[:24 + n + 64])
