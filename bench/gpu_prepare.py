"""Prepares the GPU check (bench/gpu_check.sh) where the compiler is.

usage: /usr/bin/python3 bench/gpu_prepare.py [--target sm_90] [--model specs/124m.json]
                                             [--tiny specs/tiny.json] [--emulated]
                                             [--decode-batches 1 32] [--out bench/gpu]

The GPU machine builds only the runtime (no MLIR/LLVM, no BLAS), so everything
that needs the compiler or the CPU backend happens here, into --out (ignored
by git; carried to the GPU machine with the repository, well under 64 MiB):
  tiny.json, tiny.fbtb, tiny-cpu.fbtb  the tiny spec (inference batch 3, so decoding
                                  is batched) for the target and for the CPU
  numerics/                       inputs and CPU results of the numerics check
                                  (bench/gpu_numerics.py prepare)
  model.json, model-b<B>.json     the model spec, and one per decode batch B
  model-b<B>.fbtb                 the model for the target, inference batch B (the
                                  first also serves the training benchmarks)
  model-b<B>-tune.fbtb            the first of them with kernel variants
                                  (--tune-space=default), for the tuning stage
  model-b<B>-bf16.fbtb            the first of them with bf16 inference weights
                                  (--inference-weights=bf16), for decode at bf16
  model-b<B>-bf16-kv16.fbtb       and with an f16 KV cache too
                                  (--inference-kv-cache=f16)
  describe.json                   fbtc --describe --json of the model: FLOPs per
                                  token per K, parameters, KV-cache bytes
  prepared.json                   what is where, for gpu_check.py
  include/                        the header-only libraries the runtime builds
                                  with (nlohmann/, CLI/) and NCCL's nccl.h, for a
                                  GPU host without Debian's packages or NCCL's
                                  header (gpu_check.sh sets FBT_HEADERS)
  twins/<hash>.fbtb               with --emulated: each GPU bundle's SIMT twin, named
                                  by its PTX's and its cubin's checksum, for the
                                  emulated driver (test/emucuda)
--target cpu prepares a dry run (gpu_check.sh on a machine without a GPU runs
every stage on CPU bundles); --model specs/tiny.json keeps such a run short.
--emulated prepares a rehearsal on the emulated GPU (GPU_CHECK_EMULATED=1
bench/gpu_check.sh): the real CUDA host code, the kernels run as their SIMT
twins; --model and --tiny test/e2e/Inputs/micro-b3.json keep it within the
budget.
"""

import argparse
import json
import os
import shutil
import struct
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("FBT_BUILD_DIR", os.path.join(ROOT, "build"))
FBTC = os.path.join(BUILD, "tools", "fbtc", "fbtc")
FBT = os.path.join(BUILD, "tools", "fbt", "fbt")


def derive(spec, path, **inference):
    """Writes `spec` with its inference section updated to `path`."""
    spec = json.loads(json.dumps(spec))
    spec["inference"].update(inference)
    with open(path, "w") as f:
        json.dump(spec, f, indent=2)
    return path


TWINS = None  # --emulated: where the SIMT twins go


def blob_checksums(path):
    """The FNV-1a checksums the bundle's manifest records for its kernel images."""
    with open(path, "rb") as f:
        head = f.read(24)
        manifest = json.loads(f.read(struct.unpack_from("<Q", head, 8)[0]))
    return [b["fnv1a64"] for name, b in manifest["blobs"].items()
            if name in ("kernels.ptx", "kernels.cubin")]


def compile_spec(spec_path, target, out, *extra):
    print("fbtc %s --target=%s %s-o %s" % (os.path.relpath(spec_path, ROOT), target,
                                           "".join(e + " " for e in extra),
                                           os.path.relpath(out, ROOT)))
    subprocess.run([FBTC, spec_path, "--target=" + target, "-o", out] + list(extra), check=True)
    if TWINS and target.startswith("sm_"):
        # The same kernels for the SIMT emulator, found by the image the
        # emulated driver is given (PTX or cubin).
        twin = out + ".twin"
        subprocess.run([FBTC, spec_path, "--target=simt", "-o", twin] + list(extra), check=True)
        for checksum in blob_checksums(out):
            shutil.copyfile(twin, os.path.join(TWINS, checksum + ".fbtb"))
        os.remove(twin)


def parse_args():
    """The command line (the usage above)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", default="sm_90")
    ap.add_argument("--model", default=os.path.join(ROOT, "specs", "124m.json"))
    ap.add_argument("--tiny", default=os.path.join(ROOT, "specs", "tiny.json"),
                    help="the spec of the numerics stage")
    ap.add_argument("--emulated", action="store_true",
                    help="also SIMT twins, for the emulated GPU")
    ap.add_argument("--decode-batches", type=int, nargs="+", default=[1, 32])
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "gpu"))
    return ap.parse_args()


def copy_headers(out):
    """include/: the headers the runtime builds with that a GPU host may lack."""
    # Header-only libraries, as installed here (Debian nlohmann-json3-dev,
    # libcli11-dev): copied, never committed.
    for lib in ("nlohmann", "CLI"):
        shutil.copytree(os.path.join("/usr/include", lib), os.path.join(out, "include", lib))
    # NCCL's header, for the NCCL engine (runtime/hal/nccl), where the GPU
    # machine's toolkit has none; the library itself is loaded at run time.
    for d in ("/usr/local/cuda/include", "/usr/include"):
        if os.path.exists(os.path.join(d, "nccl.h")):
            shutil.copyfile(os.path.join(d, "nccl.h"), os.path.join(out, "include", "nccl.h"))
            break


def prepare_tiny(args, j):
    """The numerics stage's bundles (tiny*.fbtb) and its inputs and CPU results
    (numerics/); `j` names a file in --out."""
    with open(args.tiny) as f:
        tiny = derive(json.load(f), j("tiny.json"), batch_size=3)
    compile_spec(tiny, args.target, j("tiny.fbtb"))
    # The exact-fp32 numerics run also stores activations in f32 (NVIDIA
    # targets store a training step's activations in bf16 by default).
    if args.target != "cpu":
        compile_spec(tiny, args.target, j("tiny-f32.fbtb"), "--gpu-storage=f32")
    compile_spec(tiny, "cpu", j("tiny-cpu.fbtb"))
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gpu_numerics.py"), "prepare",
                    j("numerics"), FBT, j("tiny-cpu.fbtb"), tiny], check=True)


def prepare_model(args, j):
    """(the model's spec, {batch: decode bundle}): the model's bundles, one per
    decode batch and the first batch's tuning and bf16 forms, and its
    describe.json; `j` names a file in --out."""
    with open(args.model) as f:
        model = json.load(f)
    shutil.copyfile(args.model, j("model.json"))
    decode = {}
    for b in args.decode_batches:
        spec = derive(model, j("model-b%d.json" % b), batch_size=b)
        compile_spec(spec, args.target, j("model-b%d.fbtb" % b))
        decode[str(b)] = "model-b%d.fbtb" % b
    b0 = args.decode_batches[0]
    compile_spec(j("model-b%d.json" % b0), args.target, j("model-b%d-tune.fbtb" % b0),
                 "--tune-space=default")
    # The first batch's decode again with bf16 inference weights: the bytes
    # GPU users serve (the f32 bundle's steps read fp32 weights).
    compile_spec(j("model-b%d.json" % b0), args.target, j("model-b%d-bf16.fbtb" % b0),
                 "--inference-weights=bf16")
    # And with an f16 KV cache too: half the cache's bytes, as served at bf16.
    compile_spec(j("model-b%d.json" % b0), args.target, j("model-b%d-bf16-kv16.fbtb" % b0),
                 "--inference-weights=bf16", "--inference-kv-cache=f16")
    describe = subprocess.run([FBTC, args.model, "--describe", "--json"], check=True,
                              stdout=subprocess.PIPE, universal_newlines=True).stdout
    with open(j("describe.json"), "w") as f:
        f.write(describe)
    return model, decode


def write_prepared(args, j, model, decode):
    """prepared.json: what is where, for gpu_check.py."""
    b0 = args.decode_batches[0]
    gpu = args.target != "cpu"
    prepared = {
        "target": args.target,
        "model": model.get("name", os.path.basename(args.model)),
        "tiny": {"spec": "tiny.json", "bundle": "tiny.fbtb", "numerics": "numerics",
                 "bundle_f32": "tiny-f32.fbtb" if gpu else "tiny.fbtb"},
        "train_bundle": decode[str(b0)],
        "decode_bundles": decode,
        "decode_bf16_bundle": {"batch": b0, "bundle": "model-b%d-bf16.fbtb" % b0},
        "decode_bf16_kv16_bundle": {"batch": b0, "bundle": "model-b%d-bf16-kv16.fbtb" % b0},
        "tune_bundle": "model-b%d-tune.fbtb" % b0,
        "tune_batch": b0,
        "describe": "describe.json",
    }
    with open(j("prepared.json"), "w") as f:
        json.dump(prepared, f, indent=2)


def main():
    """Prepares --out afresh; 1 where it is too large to carry."""
    args = parse_args()
    out = os.path.abspath(args.out)
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    j = lambda name: os.path.join(out, name)  # noqa: E731
    global TWINS
    if args.emulated:
        TWINS = j("twins")
        os.makedirs(TWINS)
    copy_headers(out)
    prepare_tiny(args, j)
    model, decode = prepare_model(args, j)
    write_prepared(args, j, model, decode)
    size = sum(os.path.getsize(os.path.join(d, n)) for d, _, ns in os.walk(out) for n in ns
               if d != TWINS)  # the twins stay here: they are for the emulator
    print("prepared %s for %s: %.1f MiB" % (os.path.relpath(out, ROOT), args.target, size / 2**20))
    if size > 60 * 2**20:
        print("error: over the 60 MiB that may be carried to the GPU machine")
        return 1
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except subprocess.CalledProcessError as e:
        sys.exit("gpu_prepare: %s exited with status %d" % (" ".join(
            os.path.relpath(a, ROOT) if a.startswith(ROOT) else a for a in e.cmd[:3]),
            e.returncode))
