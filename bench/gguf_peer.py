"""fbt against llama.cpp on the same weights at the same bytes: batch-1 decode
and prompt processing, beside the floor of each width.

usage: /usr/bin/python3 bench/gguf_peer.py [--spec specs/small.json] [--set KEY=VALUE]...
           [--threads T]
           [--prompt P] [--tokens N] [--repeats R] [--train-steps S]
           [--fbt-weights f32,bf16,int8,int8a] [--fbt-kv f32[,f16]] [--fbt-cpu CPU]
           [--peer-types f32,f16,bf16,q8_0]
           [--peer-kv f16|f32] [--peer-threads T1[,T2]] [--npm-cache DIR]
           [--json OUT.json]
       /usr/bin/python3 bench/gguf_peer.py --from OUT.json   (the summary again)

In one run: compiles the spec (with each --set applied, as
test/lib/set_spec.py does: num_attention_heads=5 gives small heads of 64
channels, where its own are 40) for the CPU once per --fbt-weights (fbtc
--inference-weights: the inference steps read the matrices as f32, bf16, or
int8 with an f16 scale per group of 32, Q8_0's layout; int8a: int8 weights
and --inference-activations int8, every product by a weight in integers as
llama.cpp's Q8_0 dot products; once more per --fbt-kv after the first, with
fbtc --inference-kv-cache: "fbt int8a kv f16" is int8a with an f16 KV
cache, llama.cpp's own default; with --fbt-cpu, fbtc --cpu: native compiles
for this CPU, as llama.cpp picks its kernels for it), trains it S steps (1
by default: speed does not depend on what the weights hold), exports the
checkpoint with `fbt export --gguf --type` once per --peer-types and installs
the pinned node-llama-cpp (test/npm.sh llama; its prebuilt CPU build of
llama.cpp). Then, R times alternating, on T threads each (default: every
core):
  fbt        `fbt bench --decode standard` on each bundle: a P-token prompt
             prefilled, then N greedy tokens, one decode step each;
  llama.cpp  each GGUF through node-llama-cpp, CPU only: the same P tokens
             evaluated in one batch with the first token sampled, then N
             greedy tokens one evaluation each;
  floor      one pass over the weights in each width (every parameter at
             4, 2 or 34/32 bytes), summed as f32 by PyTorch on T threads (in
             a process of its own), the median of 20 passes, before each
             round and after the last; a buffer that fits the last-level
             cache is read from it, as the weights are (the sizes are printed
             against the L3's). The token floor is one pass over all a
             decoded token reads: each column's weights and its KV cache at
             the run's mean position (P + (N + 1) / 2 rows of K and V per
             layer; fbt's cache f32 or as its column says, llama.cpp's as
             --peer-kv).
Prints, as markdown, the medians over the rounds (prompt tokens/s, decode
ms/token, with their ranges), each decode against its width's floor and
against its token floor, and fbt
against llama.cpp at the same bytes (int8 and int8a / q8_0, bf16 / f16 and
bf16, f32 / f32; above 1: fbt is faster). --json keeps every round's
figures, from which --from prints the same summary.

fbt bench times the compiled steps on fresh weights and synthetic ids: its
arithmetic is the same whatever the values, so the time is the time of the
exported weights. llama.cpp runs as configured by default (f16 KV cache,
flash attention chosen by llama.cpp); --peer-kv f32 gives it fbt's f32
cache. Its decode is timed twice: from JavaScript, as a user of the package
sees it (node-llama-cpp's call into the native addon included), and by
llama.cpp's own counters (llama_perf_context, the evaluations alone); the
ratios use its own, the stricter for fbt. On a machine with few cores, or
cores shared with other work, llama.cpp's decode on every core can be
slower than on one (its threads spin at each of the step's many small
barriers): --peer-threads 2,1 runs it on each count in the same rounds, so
fbt on 2 threads is also compared with llama.cpp at its fastest.

The build comes from FBT_BUILD_DIR (default build/): tools/fbtc/fbtc and
tools/fbt/fbt.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
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
// llama.cpp's own counters (llama_perf_context_print), cumulative: the
// evaluations' time without node's calls, read after each run.
let own = null;
const logger = (level, message) => {
  const m = /[^t] eval time =\s*([\d.]+) ms \/\s*(\d+) runs/.exec(message);
  if (m) own = { ms: parseFloat(m[1]), runs: parseInt(m[2]) };
  else if (level === LlamaLogLevel.error) console.error(message);
};
const llama = await getLlama({ gpu: false, build: 'never', progressLogs: false,
                               logLevel: LlamaLogLevel.info, logger, maxThreads: a.threads });
const model = await llama.loadModel({ modelPath: a.gguf, gpuLayers: 0 });
const kv = a.kv === 'f32' ? { experimentalKvCacheKeyType: 'F32',
                              experimentalKvCacheValueType: 'F32' } : {};
const context = await model.createContext({
  contextSize: a.prompt + a.tokens + 8, batchSize: a.prompt, sequences: 1,
  threads: { ideal: a.threads, min: a.threads }, performanceTracking: true, ...kv });
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
  await context.printTimings();
  const before = own;
  const t2 = performance.now();
  for (let i = 0; i < tokens; ++i) {
    out = await sequence.controlledEvaluate([[token, greedy]]);
    token = out[0].next.token;
  }
  const t3 = performance.now();
  await context.printTimings();
  return { prefill_s: (t1 - t0) / 1e3, decode_s: (t3 - t2) / 1e3,
           own_ms: (own.ms - before.ms) / (own.runs - before.runs) };
}
await run(4);
const r = await run(a.tokens);
console.log(JSON.stringify({
  prefill_tokens_per_s: a.prompt / r.prefill_s,
  ms_per_token: 1e3 * r.decode_s / a.tokens,
  own_ms_per_token: r.own_ms,
  threads: context.currentThreads }));
await context.dispose(); await model.dispose(); await llama.dispose();
"""


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


# Bytes per weight in each width: Q8_0 and fbt's int8 both keep 32 int8
# values and one f16 scale per group of 32.
WIDTH = {"f32": 4.0, "f16": 2.0, "bf16": 2.0, "int8": 34 / 32, "int8a": 34 / 32,
         "q8_0": 34 / 32}
# fbt's form beside llama.cpp's types at the same bytes.
PAIRS = [("f32", "f32"), ("bf16", "f16"), ("bf16", "bf16"), ("int8", "q8_0"),
         ("int8a", "q8_0")]
# KV cache widths (fbtc --inference-kv-cache, --peer-kv): bytes per value,
# and what an fbt column of the cache's width says after the form ("" for f32).
KV_WIDTH = {"f32": 4, "f16": 2}
KV_SUFFIX = {"f32": "", "f16": " kv f16"}
# fbtc's options for each of fbt's forms: int8a is int8 weights with int8
# activations (the decode steps' integer dot products, as Q8_0's).
FORM_OPTIONS = {"f32": ["--inference-weights=f32"], "bf16": ["--inference-weights=bf16"],
                "int8": ["--inference-weights=int8"],
                "int8a": ["--inference-weights=int8", "--inference-activations=int8"]}


# The floors, in a process of its own: PyTorch's threads keep spinning after
# their work, which would take the cores from the next runner. Given
# {name: bytes}, prints {name: the median ms of 20 reads of that many bytes}.
FLOOR = r"""
import json, statistics, sys, time, torch
torch.set_num_threads(int(sys.argv[1]))
out = {}
for name, size in json.loads(sys.argv[2]).items():
    buf = torch.ones(int(size) // 4)
    times = []
    for i in range(25):
        t0 = time.perf_counter()
        torch.sum(buf)
        if i >= 5:
            times.append(time.perf_counter() - t0)
    out[name] = 1e3 * statistics.median(times)
print(json.dumps(out))
"""


def floors(threads, sizes):
    """{name: ms} for one read of each of `sizes` ({name: bytes}), summed as
    f32 by PyTorch on `threads` threads (a streaming read)."""
    return json.loads(run(["/usr/bin/python3", "-c", FLOOR, str(threads), json.dumps(sizes)]))


def kv_bytes(spec, prompt, tokens, kv_width):
    """The KV cache a decode step reads at the run's mean position: K and V
    of every layer, one row of hidden_size per position, for a prompt of
    `prompt` tokens then `tokens` decoded (step i reads prompt + i + 1
    rows)."""
    rows = prompt + (tokens + 1) / 2
    return 2 * spec["num_hidden_layers"] * spec["hidden_size"] * kv_width * rows


def l3_bytes():
    """The last-level cache's size (0 when the system does not say)."""
    try:
        out = run(["getconf", "LEVEL3_CACHE_SIZE"]).strip()
        return int(out) if out and int(out) > 0 else 0
    except (subprocess.CalledProcessError, ValueError, FileNotFoundError):
        return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", default=os.path.join(ROOT, "specs", "small.json"))
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="a field of the spec to change first (test/lib/set_spec.py's form)")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--prompt", type=int, default=None,
                    help="prompt tokens (default: the bundle's max_prompt_length)")
    ap.add_argument("--tokens", type=int, default=64, help="decoded tokens")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--train-steps", type=int, default=1)
    ap.add_argument("--peer-kv", choices=["f16", "f32"], default="f16")
    ap.add_argument("--fbt-weights", default="f32,bf16,int8,int8a",
                    help="fbt's inference weights, a bundle each (default f32,bf16,int8,int8a: "
                         "int8a has int8 activations too)")
    ap.add_argument("--fbt-cpu", default="",
                    help="fbtc --cpu for fbt's bundles (default: the portable x86-64-v3; "
                         "native: this CPU's, as llama.cpp picks its kernels for it)")
    ap.add_argument("--fbt-kv", default="f32",
                    help="fbt's KV cache widths, each form compiled once per width "
                         "(default f32; f32,f16 compares them)")
    ap.add_argument("--peer-types", default="f32,f16,bf16,q8_0",
                    help="llama.cpp's weight types, a GGUF each (default f32,f16,bf16,q8_0)")
    ap.add_argument("--peer-threads", default=None,
                    help="llama.cpp's thread counts, a column each (default: --threads); "
                         "a count other than --threads names its column, 'q8_0 1t'")
    ap.add_argument("--npm-cache", default=os.path.join(BUILD, "test", "npm-llama"))
    ap.add_argument("--json", help="also write every round's measurements here")
    ap.add_argument("--from", dest="saved", help="print the summary of a --json file and stop")
    args = ap.parse_args()
    if args.saved:
        with open(args.saved) as f:
            print(summary(json.load(f)))
        return
    for name, given, known in (("--fbt-weights", args.fbt_weights, tuple(FORM_OPTIONS)),
                               ("--fbt-kv", args.fbt_kv, tuple(KV_WIDTH)),
                               ("--peer-types", args.peer_types, ("f32", "f16", "bf16", "q8_0"))):
        for t in given.split(","):
            if t not in known:
                ap.error("%s: unknown type '%s' (expected some of %s)" % (name, t, ",".join(known)))
    for n in (args.peer_threads or "1").split(","):
        if not n.isdigit() or int(n) < 1:
            ap.error("--peer-threads: '%s' is not a thread count (expected e.g. 2,1)" % n)

    with tempfile.TemporaryDirectory(prefix="gguf-peer-") as work:
        measure(ap, args, work)


def measure(ap, args, work):
    """Builds both sides in `work` (fbt's bundles, llama.cpp's GGUFs of the
    same weights), times them round by round and prints the summary."""
    fbtc = os.path.join(BUILD, "tools", "fbtc", "fbtc")
    fbt = os.path.join(BUILD, "tools", "fbt", "fbt")
    spec_path = changed_spec(args, work)
    # A column per form and KV width: "int8a", "int8a kv f16".
    columns = {form + KV_SUFFIX[kv]: (form, kv) for kv in args.fbt_kv.split(",")
               for form in args.fbt_weights.split(",")}
    forms = list(columns)
    bundles = compile_bundles(fbtc, spec_path, columns, args.fbt_cpu, work)
    params = json.loads(run([fbtc, spec_path, "--describe", "--json"]))["params"]["total"]
    with open(spec_path) as f:
        spec = json.load(f)
    prompt = args.prompt or spec["inference"]["max_prompt_length"]
    if prompt + args.tokens + 1 > spec["inference"]["max_sequence_length"]:
        ap.error("--prompt + --tokens must stay below inference.max_sequence_length")
    threads = ["--threads", str(args.threads)]
    types = args.peer_types.split(",")
    ggufs = export_ggufs(fbt, bundles[forms[0]], types, args.train_steps, threads, work)
    subprocess.run([os.path.join(ROOT, "test", "npm.sh"), args.npm_cache, "llama"], check=True)

    # A file, not `node -e`: node-llama-cpp tests its binary in a child
    # process that inherits the parent's node options, -e and its code too.
    peer = os.path.join(work, "peer.mjs")
    with open(peer, "w") as f:
        f.write(PEER)

    # llama.cpp's columns: each type on each of its thread counts.
    peer_threads = [int(n) for n in (args.peer_threads or str(args.threads)).split(",")]
    peers = {"llama.cpp " + t + ("" if n == args.threads else " %dt" % n): (t, n)
             for t in types for n in peer_threads}
    widths = sorted({WIDTH[w] for w in [f for f, _ in columns.values()] + types})
    raw = new_record(args, fbt, bundles[forms[0]], spec, params, prompt, widths, columns,
                     {name: (t, n, ggufs[t]) for name, (t, n) in peers.items()})
    fbt_runs = {form: [fbt, "bench", bundles[form], "--decode", "standard", "--tokens",
                       str(prompt), "--steps", str(args.tokens)] + threads for form in forms}
    peer_runs = {name: ["node", peer, json.dumps({
        "npm": args.npm_cache, "gguf": ggufs[t], "threads": n, "prompt": prompt,
        "tokens": args.tokens, "kv": args.peer_kv})] for name, (t, n) in peers.items()}
    time_rounds(raw, widths, args.repeats, fbt_runs, peer_runs)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(raw, f, indent=1)
    print(summary(raw))


def changed_spec(args, work):
    """The spec to compile: --spec, or with --set its copy in `work` changed as
    test/lib/set_spec.py changes it."""
    if not args.set:
        return args.spec
    spec_path = os.path.join(work, os.path.basename(args.spec))
    subprocess.run([sys.executable, os.path.join(ROOT, "test", "lib", "set_spec.py"),
                    args.spec, spec_path] + args.set, check=True)
    return spec_path


def compile_bundles(fbtc, spec_path, columns, cpu, work):
    """{column: bundle}: the spec compiled for the CPU once per fbt column
    ({column: (form, KV width)}), with --fbt-cpu's fbtc --cpu where given."""
    bundles = {}
    for col, (form, kv) in columns.items():
        bundles[col] = os.path.join(work, "model-%s.fbtb" % col.replace(" ", "-"))
        run([fbtc, spec_path, "--target=cpu", "-o", bundles[col], "--inference-kv-cache=" + kv] +
            (["--cpu=" + cpu] if cpu else []) +
            FORM_OPTIONS[form])
    return bundles


def export_ggufs(fbt, bundle, types, steps, threads, work):
    """{type: GGUF}: `bundle` trained `steps` steps, its checkpoint exported
    once per llama.cpp type (fbt export --gguf --type)."""
    # No validation: it would run the 8-pass evaluation, minutes on the CPU.
    run([fbt, "train", bundle, "--steps", str(steps), "--val-fraction", "0",
         "--out", os.path.join(work, "run"), "--quiet"] + threads)
    ggufs = {}
    for t in types:
        ggufs[t] = os.path.join(work, "model-%s.gguf" % t)
        run([fbt, "export", bundle, "--ckpt",
             os.path.join(work, "run", "latest.safetensors"), "--gguf", ggufs[t], "--type", t])
    return ggufs


def new_record(args, fbt, bundle, spec, params, prompt, widths, columns, peers):
    """What --json keeps, before any round: the run's settings and the machine's
    state, and per column (fbt's {column: (form, KV width)}, llama.cpp's
    {column: (type, threads, GGUF)}) its bytes and empty rounds."""
    raw = {"command": ["bench/gguf_peer.py"] + sys.argv[1:], "spec": os.path.basename(args.spec),
           "spec_set": args.set,
           "threads": args.threads, "prompt": prompt, "tokens": args.tokens,
           "peer_kv": args.peer_kv, "fbt_kv": args.fbt_kv.split(","), "weights": params,
           "fbt_cpu": json.loads(run([fbt, "inspect", bundle, "--json"]))["target"].get(
               "cpu", ""),
           "load_before": os.getloadavg()[0],
           "l3_bytes": l3_bytes(), "repeats": args.repeats,
           "columns": {}, "floor_rounds": {str(w): [] for w in widths}}
    # fbt's cache as its column says; llama.cpp's as --peer-kv says.
    for col, (f, kv) in columns.items():
        raw["columns"]["fbt " + col] = {
            "width": WIDTH[f], "mib": params * WIDTH[f] / 2**20,
            "kv_bytes": kv_bytes(spec, prompt, args.tokens, KV_WIDTH[kv]),
            "rounds": [], "token_floor_rounds": []}
    for name, (t, n, gguf) in peers.items():
        raw["columns"][name] = {
            "threads": n, "width": WIDTH[t], "mib": os.path.getsize(gguf) / 2**20,
            "kv_bytes": kv_bytes(spec, prompt, args.tokens, KV_WIDTH[args.peer_kv]),
            "rounds": [], "token_floor_rounds": []}
    return raw


def sample_floors(raw, widths, threads):
    """One read of the weights in each width, and of each column's weights
    and KV cache together (what its decoded token reads), added to `raw`."""
    sizes = {str(w): raw["weights"] * w for w in widths}
    for name, col in raw["columns"].items():
        sizes[name] = col["mib"] * 2**20 + col["kv_bytes"]
    for name, ms in floors(threads, sizes).items():
        if name in raw["columns"]:
            raw["columns"][name]["token_floor_rounds"].append(ms)
        else:
            raw["floor_rounds"][name].append(ms)


def time_rounds(raw, widths, repeats, fbt_runs, peer_runs):
    """`repeats` rounds of every column's run ({column: command}), each after
    a sample of the floors, and the floors once more after the last."""
    keep = ("prefill_tokens_per_s", "ms_per_token")
    for _ in range(repeats):  # alternating, so drift in the machine hits all alike
        sample_floors(raw, widths, raw["threads"])
        for form, cmd in fbt_runs.items():
            r = json.loads(run(cmd))
            raw["columns"]["fbt " + form]["rounds"].append({k: r[k] for k in keep})
        for name, cmd in peer_runs.items():
            r = json.loads(run(cmd))
            raw["columns"][name]["rounds"].append(
                {k: r[k] for k in keep + ("own_ms_per_token",)})
    sample_floors(raw, widths, raw["threads"])


def summary(raw):
    """The measurements of `raw` (what measure() records) as markdown: per
    column the medians over the rounds (with their range), the floor of its
    width and the ratio to it; then fbt against llama.cpp at the same bytes."""
    def med(col, key):
        xs = [r[key] for r in raw["columns"][col]["rounds"]]
        return statistics.median(xs), min(xs), max(xs)
    floor = {w: statistics.median(v) for w, v in raw["floor_rounds"].items()}
    cols = list(raw["columns"])
    l3 = raw["l3_bytes"]
    lines = [
        "`%s`: %s, batch 1, %d thread%s, prompt %d, %d decoded tokens; medians of %d alternating "
        "rounds (range in parentheses); fbt's KV cache %s, llama.cpp's %s; fbt compiled for %s; "
        "load average before %.2f; %.1f M weights; L3 %s" % (
            " ".join(raw["command"]),
            raw["spec"] + "".join(" with " + c for c in raw.get("spec_set", [])), raw["threads"],
            "" if raw["threads"] == 1 else "s", raw["prompt"], raw["tokens"], raw["repeats"],
            "f32" if raw.get("fbt_kv", ["f32"]) == ["f32"] else
            " or ".join(raw["fbt_kv"]) + " (f16 where the column says kv f16)",
            raw["peer_kv"], raw.get("fbt_cpu", "x86-64-v3"), raw["load_before"],
            raw["weights"] / 1e6,
            "%.0f MiB (as the system reports it)" % (l3 / 2**20) if l3 else "unknown"),
        "",
        "| | " + " | ".join(cols) + " |",
        "|---|" + "---|" * len(cols)]

    def row(label, cell):
        lines.append("| %s | %s |" % (label, " | ".join(cell(c) for c in cols)))
    row("weights (MiB)", lambda c: "%.1f" % raw["columns"][c]["mib"])
    row("prompt tokens/s", lambda c: "%.0f (%.0f-%.0f)" % med(c, "prefill_tokens_per_s"))
    row("decode ms/token", lambda c: "%.3f (%.3f-%.3f)" % med(c, "ms_per_token"))
    owned = [c for c in cols if all("own_ms_per_token" in r for r in raw["columns"][c]["rounds"])]
    if owned:
        row("llama.cpp's own decode ms/token (its counters, without node's call)",
            lambda c: "%.3f (%.3f-%.3f)" % med(c, "own_ms_per_token") if c in owned else "")
    # The floors are read on the run's threads: a peer column on another
    # count is left out of them.
    def floored(cell):
        return lambda c: (cell(c) if raw["columns"][c].get("threads", raw["threads"]) ==
                          raw["threads"] else "")
    row("floor ms (one read)", floored(lambda c: "%.3f" % floor[str(raw["columns"][c]["width"])]))
    row("decode / floor", floored(lambda c: "%.2f" % (med(c, "ms_per_token")[0] /
                                                     floor[str(raw["columns"][c]["width"])])))
    if all("token_floor_rounds" in raw["columns"][c] for c in cols):
        token = {c: statistics.median(raw["columns"][c]["token_floor_rounds"]) for c in cols}
        row("KV cache read (MiB)", lambda c: "%.1f" % (raw["columns"][c]["kv_bytes"] / 2**20))
        row("token floor ms (weights + KV, one read)", floored(lambda c: "%.3f" % token[c]))
        row("decode / token floor",
            floored(lambda c: "%.2f" % (med(c, "ms_per_token")[0] / token[c])))
    lines.append("")

    def peer_ms(c):  # the peer at its best: its own counters where recorded
        return med(c, "own_ms_per_token" if c in owned else "ms_per_token")[0]
    for (f, t), kv in [(pair, kv) for kv in raw.get("fbt_kv", ["f32"]) for pair in PAIRS]:
        f += KV_SUFFIX[kv]
        a = "fbt " + f
        for b in [c for c in cols if c == "llama.cpp " + t or c.startswith("llama.cpp %s " % t)]:
            if a in raw["columns"]:
                lines.append("- fbt %s / %s: decode %.2fx, prompt %.2fx (above 1: fbt is "
                             "faster%s)" % (f, b, peer_ms(b) / med(a, "ms_per_token")[0],
                                            med(a, "prefill_tokens_per_s")[0] /
                                            med(b, "prefill_tokens_per_s")[0],
                                            "; llama.cpp's own decode time" if b in owned else
                                            ""))
    return "\n".join(lines)


if __name__ == "__main__":
    main()
