"""fbt against llama.cpp on the same weights: batch-1 decode and prompt processing.

usage: /usr/bin/python3 bench/gguf_peer.py [--spec specs/small.json] [--threads T]
           [--prompt P] [--tokens N] [--repeats R] [--train-steps S]
           [--peer-types f32,f16,q8_0] [--peer-kv f16|f32] [--npm-cache DIR]

In one run: compiles the spec for the CPU, trains it S steps (1 by default:
speed does not depend on what the weights hold), exports the checkpoint with
`fbt export --gguf` and installs the pinned node-llama-cpp (test/npm.sh
llama; its prebuilt CPU build of llama.cpp). Then, R times alternating, on T
threads each (default: every core):
  fbt        `fbt bench --decode standard`: a P-token prompt prefilled, then N
             greedy tokens, one decode step each;
  llama.cpp  the exported GGUF through node-llama-cpp, CPU only: the same P
             tokens evaluated in one batch with the first token sampled, then
             N greedy tokens one evaluation each; once per --peer-types, the
             weights as `fbt export --gguf --type` writes them (f32, f16,
             bf16, q8_0: the bytes llama.cpp's users run).
Prints the medians, prompt tokens/s and decode tokens/s for each, the
weights' size, and the fbt/llama.cpp ratios (above 1: fbt is faster).

fbt bench times the compiled steps on fresh weights and synthetic ids: its
arithmetic is dense f32 whatever the values, so the time is the time of the
exported weights (fbt's weights are f32). llama.cpp runs as configured by
default (f16 KV cache, flash attention chosen by llama.cpp); --peer-kv f32 gives it
fbt's f32 cache. Its per-token time includes node-llama-cpp's call from
JavaScript into the native addon (a fraction of a millisecond), as any user
of the package pays it. On a machine with few cores, or cores shared with
other work, llama.cpp's decode on every core can be slower than on one (its
threads spin at each of the step's many small barriers): measure --threads 1
too.

The build comes from FBT_BUILD_DIR (default build/): tools/fbtc/fbtc and
tools/fbt/fbt.
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("FBT_BUILD_DIR", os.path.join(ROOT, "build"))

# The peer: one process per repeat, so each loads the model afresh as fbt
# bench does. A warm-up run (prompt + 4 tokens), then the timed one.
PEER = r"""
import path from 'node:path';
import { pathToFileURL } from 'node:url';
const a = JSON.parse(process.argv[2]);
const entry = path.join(a.npm, 'node_modules', 'node-llama-cpp', 'dist', 'index.js');
const { getLlama, LlamaLogLevel } = await import(pathToFileURL(entry).href);
const llama = await getLlama({ gpu: false, build: 'never', progressLogs: false,
                               logLevel: LlamaLogLevel.error, maxThreads: a.threads });
const model = await llama.loadModel({ modelPath: a.gguf, gpuLayers: 0 });
const kv = a.kv === 'f32' ? { experimentalKvCacheKeyType: 'F32',
                              experimentalKvCacheValueType: 'F32' } : {};
const context = await model.createContext({
  contextSize: a.prompt + a.tokens + 8, batchSize: a.prompt, sequences: 1,
  threads: { ideal: a.threads, min: a.threads }, ...kv });
const sequence = context.getSequence();
// Ids 1..255 as fbt bench draws them (any ids cost the same).
const prompt = Array.from({ length: a.prompt }, (_, i) => 1 + ((i * 7919 + 13) % 255));
const greedy = { generateNext: { token: true, options: { temperature: 0 } } };
async function run(tokens) {
  await sequence.clearHistory();
  const t0 = performance.now();
  let out = await sequence.controlledEvaluate(
      [...prompt.slice(0, -1), [prompt[prompt.length - 1], greedy]]);
  let token = out[prompt.length - 1].next.token;
  const t1 = performance.now();
  for (let i = 0; i < tokens; ++i) {
    out = await sequence.controlledEvaluate([[token, greedy]]);
    token = out[0].next.token;
  }
  const t2 = performance.now();
  return { prefill_s: (t1 - t0) / 1e3, decode_s: (t2 - t1) / 1e3 };
}
await run(4);
const r = await run(a.tokens);
console.log(JSON.stringify({
  prefill_tokens_per_s: a.prompt / r.prefill_s,
  ms_per_token: 1e3 * r.decode_s / a.tokens,
  threads: context.currentThreads }));
await context.dispose(); await model.dispose(); await llama.dispose();
"""


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", default=os.path.join(ROOT, "specs", "small.json"))
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--prompt", type=int, default=None,
                    help="prompt tokens (default: the bundle's max_prompt_length)")
    ap.add_argument("--tokens", type=int, default=64, help="decoded tokens")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--train-steps", type=int, default=1)
    ap.add_argument("--peer-kv", choices=["f16", "f32"], default="f16")
    ap.add_argument("--peer-types", default="f32,f16,q8_0",
                    help="llama.cpp's weight types, each a GGUF of its own (default f32,f16,q8_0)")
    ap.add_argument("--npm-cache", default=os.path.join(BUILD, "test", "npm-llama"))
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="gguf-peer-") as work:
        measure(ap, args, work)


def measure(ap, args, work):
    fbtc = os.path.join(BUILD, "tools", "fbtc", "fbtc")
    fbt = os.path.join(BUILD, "tools", "fbt", "fbt")
    bundle = os.path.join(work, "model.fbtb")
    run([fbtc, args.spec, "--target=cpu", "-o", bundle])
    with open(args.spec) as f:
        spec = json.load(f)
    prompt = args.prompt or spec["inference"]["max_prompt_length"]
    if prompt + args.tokens + 1 > spec["inference"]["max_sequence_length"]:
        ap.error("--prompt + --tokens must stay below inference.max_sequence_length")
    threads = ["--threads", str(args.threads)]
    # No validation: it would run the 8-pass evaluation, minutes on the CPU.
    run([fbt, "train", bundle, "--steps", str(args.train_steps), "--val-fraction", "0",
         "--out", os.path.join(work, "run"), "--quiet"] + threads)
    types = args.peer_types.split(",")
    ggufs = {}
    for t in types:
        ggufs[t] = os.path.join(work, "model-%s.gguf" % t)
        run([fbt, "export", bundle, "--ckpt", os.path.join(work, "run", "latest.safetensors"),
             "--gguf", ggufs[t], "--type", t])
    subprocess.run([os.path.join(ROOT, "test", "npm.sh"), args.npm_cache, "llama"], check=True)

    # A file, not `node -e`: node-llama-cpp tests its binary in a child
    # process that inherits the parent's node options, -e and its code too.
    peer = os.path.join(work, "peer.mjs")
    with open(peer, "w") as f:
        f.write(PEER)

    def peer_args(t):
        return json.dumps({"npm": args.npm_cache, "gguf": ggufs[t], "threads": args.threads,
                           "prompt": prompt, "tokens": args.tokens, "kv": args.peer_kv})
    load = os.getloadavg()[0]
    ours, theirs = [], {t: [] for t in types}
    for _ in range(args.repeats):  # alternating, so drift in the machine hits all alike
        ours.append(json.loads(run([fbt, "bench", bundle, "--decode", "standard", "--tokens",
                                    str(prompt), "--steps", str(args.tokens)]
                                   + threads)))
        for t in types:
            theirs[t].append(json.loads(run(["node", peer, peer_args(t)])))
    report(args, prompt, load, types, ggufs, ours, theirs)


def report(args, prompt, load, types, ggufs, ours, theirs):
    def med(rows, key):
        return statistics.median(r[key] for r in rows)

    fbt_pp, fbt_tg = med(ours, "prefill_tokens_per_s"), 1e3 / med(ours, "ms_per_token")
    peer = {t: (med(theirs[t], "prefill_tokens_per_s"), 1e3 / med(theirs[t], "ms_per_token"))
            for t in types}
    print("fbt against llama.cpp (node-llama-cpp 3.21.1, CPU) on the same weights: %s, "
          "batch 1, %d threads, prompt %d, %d decoded tokens, median of %d"
          % (os.path.basename(args.spec), args.threads, prompt, args.tokens, args.repeats))
    print("fbt: f32 weights and cache; llama.cpp KV cache: %s; load average before: %.2f "
          "(other work on the cores slows llama.cpp's spinning thread pool far more than "
          "fbt's OpenMP)" % (args.peer_kv, load))
    print("%-24s %10s" % ("", "fbt f32") + "".join(" %13s" % ("llama.cpp " + t) for t in types))
    print("%-24s %10s" % ("weights (MiB)", "")
          + "".join(" %13.1f" % (os.path.getsize(ggufs[t]) / 2**20) for t in types))
    print("%-24s %10.0f" % ("prompt tokens/s", fbt_pp)
          + "".join(" %13.0f" % peer[t][0] for t in types))
    print("%-24s %10.1f" % ("decode tokens/s", fbt_tg)
          + "".join(" %13.1f" % peer[t][1] for t in types))
    print("%-24s %10.3f" % ("decode ms/token", 1e3 / fbt_tg)
          + "".join(" %13.3f" % (1e3 / peer[t][1]) for t in types))
    print("%-24s %10s" % ("fbt / llama.cpp, prompt", "")
          + "".join(" %13.2f" % (fbt_pp / peer[t][0]) for t in types))
    print("%-24s %10s" % ("fbt / llama.cpp, decode", "")
          + "".join(" %13.2f" % (fbt_tg / peer[t][1]) for t in types))
    print(json.dumps({"spec": os.path.basename(args.spec), "threads": args.threads,
                      "prompt": prompt, "tokens": args.tokens, "peer_kv": args.peer_kv,
                      "fbt": {"prompt_tokens_per_s": fbt_pp, "decode_tokens_per_s": fbt_tg},
                      "llama_cpp": {t: {"prompt_tokens_per_s": peer[t][0],
                                        "decode_tokens_per_s": peer[t][1],
                                        "gguf_bytes": os.path.getsize(ggufs[t])}
                                    for t in types},
                      "ratio": {t: {"prompt": fbt_pp / peer[t][0],
                                    "decode": fbt_tg / peer[t][1]} for t in types}}))


if __name__ == "__main__":
    main()
