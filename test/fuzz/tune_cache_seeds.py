"""Seeds for tune_cache_fuzzer: tune caches as `fbt tune` writes them.

usage: tune_cache_seeds.py OUT_DIR
"""
import json
import os
import sys


def cache(entries, device=None):
    return {"format": "fbt-tune-cache", "version": 1,
            "device": device or {"kind": "cpu", "name": "Some CPU", "isa": "avx2", "threads": 2},
            "entries": entries}


def entry(kernels, gemms=()):
    return {"model": "0123456789abcdef", "target": "cpu:x86-64-v3",
            "tuned_at": "2026-12-02T00:00:00Z",
            "kernels": {k: {"symbol": s, "config": c, "speedup": 1.25} for k, s, c in kernels},
            "gemms": [{"shape": g, "algorithm": a, "speedup": 1.1} for g, a in gemms]}


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    seeds = {
        "empty.json": cache({}),
        "one.json": cache({"1918f432fba52f55": entry(
            [("k0_embedding", "k0_embedding__v2", {"grain": 8}),
             ("k13_attention_grad", "k13_attention_grad", {"grain": 0, "query_block": 4})])}),
        "gpu.json": cache({"aaaaaaaaaaaaaaaa": entry(
            [("k3_rmsnorm", "k3_rmsnorm__v3", {"row_threads": 512})],
            [("64,256,768,n,t,bf16,bf16,f32", 2), ("768,64,256,t,n,f32,f32,f32", 0)])},
            device={"kind": "cuda", "name": "NVIDIA H200", "sm": 90, "driver": 13000,
                    "cublaslt": 130000}),
    }
    for name, doc in seeds.items():
        with open(os.path.join(out, name), "w") as f:
            json.dump(doc, f, indent=2)
    with open(os.path.join(out, "truncated.json"), "w") as f:
        f.write(json.dumps(seeds["one.json"])[:120])


if __name__ == "__main__":
    main()
