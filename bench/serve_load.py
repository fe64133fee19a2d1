"""A bounded load test of `fbt serve` on loopback.

usage: /usr/bin/python3 bench/serve_load.py [--spec specs/tiny.json] [--clients 16]
                                           [--requests 96] [--steps 60] [--batch 1 8]
                                           [--mix generation prompt]

Compiles the spec once per decode batch (inference.batch_size; the weights do
not depend on it), trains it briefly (or reuses --ckpt), and for each batch
and each mix starts the server on a free port and sends --requests
completions from --clients concurrent clients, mixed regimes (standard, soft,
fused:2), half of them streaming:
  generation  short prompts (a few shared prefixes, distinct endings),
              64-256 new tokens
  prompt      prompts of 100-500 tokens, 16-32 new tokens
(both scaled down to fit a spec whose context is shorter: the bundles' max
prompt length, --max-prompt, is half the context, at most 520).
Prints, per mix and batch, throughput (generated tokens/s and its ratio to
the first batch's), the efficiency: the time the compiled steps alone need
for the same work over the wall time, where the need is each request's
prompt tokens (times its passes, fused:N) at the best prefill rate and its
new tokens at the batch's decode step, both measured in the same run by
`fbt bench --decode`; time to first token and the gap between streamed
tokens (p50/p99; a running row waits at most one chunk, a mixed step of
max_prompt_length tokens, whose time is printed), the mean decode-batch
occupancy, and errors and lost
requests (both must be 0); each server is stopped with SIGTERM and must
exit 0.
"""

import argparse
import collections
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("FBT_BUILD_DIR", os.path.join(ROOT, "build"))
FBT = os.path.join(BUILD, "tools", "fbt", "fbt")

PREFIXES = ["The cat sat on the ", "Once upon a time, ", "Count: 1, 2, 3, ", "In the beginning "]
WORDS = ("the of and to in is was for on that with as by at from it his an were are which "
         "this be or has had not but one first its new after who they have two been her "
         "time story cat dog sat ran home light water under over while city river").split()
REGIMES = ["standard", "soft", "fused:2"]


# One completion as a client saw it: time to first token (streamed only,
# else None) and the gaps between streamed tokens, in seconds.
Reply = collections.namedtuple("Reply", "seconds completion prompt ttft gaps regime")


def post(url, body, stream):
    """One completion: a Reply."""
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=600) as r:
        if not stream:
            reply = json.load(r)
            u = reply["usage"]
            return Reply(time.perf_counter() - t0, u["completion_tokens"], u["prompt_tokens"],
                         None, [], body["regime"])
        stamps, done, usage = [], False, None
        for line in r:
            line = line.decode().strip()
            if line == "data: [DONE]":
                done = True
            elif line.startswith("data: "):
                chunk = json.loads(line[6:])
                if chunk.get("usage"):
                    usage = chunk["usage"]
                if chunk["choices"] and chunk["choices"][0]["text"]:
                    stamps.append(time.perf_counter())
        if not done:
            raise RuntimeError("stream ended without [DONE]")
        ttft = stamps[0] - t0 if stamps else None
        gaps = [b - a for a, b in zip(stamps, stamps[1:])]
        return Reply(time.perf_counter() - t0, usage["completion_tokens"],
                     usage["prompt_tokens"], ttft, gaps, body["regime"])


def metrics(url):
    with urllib.request.urlopen("http://%s/metrics" % url, timeout=10) as r:
        return {l.split()[0]: float(l.split()[1]) for l in r.read().decode().splitlines()
                if l and l[0] != "#" and "{" not in l}


def text_of(rng, n):
    """About n bytes of words (the specs tokenize bytes)."""
    words = []
    while sum(len(w) + 1 for w in words) < n:
        words.append(rng.choice(WORDS))
    return " ".join(words)[:n]


def requests_for(mix, n, context, max_prompt):
    """The mix's n requests (body, streamed), fitting the spec's context."""
    rng = random.Random(0)
    jobs = []
    for i in range(n):
        regime = rng.choice(REGIMES)
        if mix == "generation":
            prompt = rng.choice(PREFIXES) + str(i % 50)
            new = rng.randint(64, 256)
        else:
            new = rng.randint(16, 32)
            # Every bundle takes max_prompt_length (the separator, then the
            # prompt's bytes), fused ones and those without mixed steps too.
            longest = min(500, max_prompt - 1 - len(PREFIXES[0]))
            prompt = rng.choice(PREFIXES) + text_of(rng, rng.randint(min(100, longest), longest))
        new = min(new, context - len(prompt) - 2)
        body = {"prompt": prompt, "max_tokens": new, "temperature": rng.choice([0, 0.8]),
                "seed": i, "regime": regime, "stream": i % 2 == 0}
        if body["stream"]:
            body["stream_options"] = {"include_usage": True}
        jobs.append((body, body["stream"]))
    return jobs


def load(bundle, ckpt, jobs, args, work):
    """Runs `jobs` against one bundle's server; returns its figures."""
    log = open(os.path.join(work, "server.log"), "w+")
    server = subprocess.Popen([FBT, "serve", bundle, "--ckpt", ckpt, "--port", "0",
                               "--max-queue", str(len(jobs))], stderr=log)
    url = None
    for _ in range(200):
        log.seek(0)
        text = log.read()
        if "http://127.0.0.1:" in text:
            url = text.split("http://")[1].split("/v1")[0]
            break
        time.sleep(0.05)
    if not url:
        server.kill()
        sys.exit("the server did not start")
    base = "http://%s/v1/completions" % url

    jobs = list(jobs)
    total = len(jobs)
    lock = threading.Lock()
    results, errors = [], []

    def client():
        while True:
            with lock:
                if not jobs:
                    return
                body, stream = jobs.pop()
            try:
                r = post(base, body, stream)
                with lock:
                    results.append(r)
            except urllib.error.HTTPError as e:
                with lock:
                    errors.append("%d %s" % (e.code, e.read().decode(errors="replace")[:300]))
            except Exception as e:  # noqa: BLE001 - every failure counts
                with lock:
                    errors.append(repr(e))

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(args.clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    m = metrics(url)
    server.send_signal(signal.SIGTERM)
    code = server.wait(timeout=60)

    def pct(values, p):
        values = sorted(values)
        return values[min(len(values) - 1, int(p * len(values)))] if values else float("nan")
    lat = [r.seconds for r in results]
    ttft = [r.ttft for r in results if r.ttft is not None]
    gaps = [g for r in results for g in r.gaps]
    return {"wall": wall, "results": results,
            "tokens_per_s": sum(r.completion for r in results) / wall,
            "p50": pct(lat, 0.5), "p99": pct(lat, 0.99),
            "ttft50": pct(ttft, 0.5), "ttft99": pct(ttft, 0.99),
            "itl50": pct(gaps, 0.5), "itl99": pct(gaps, 0.99),
            "occupancy": m["fbt_decode_row_steps_total"] / max(1, m["fbt_decode_steps_total"]),
            "errors": errors, "lost": total - len(results) - len(errors), "exit": code}


def step_rates(bundle, mode, tokens=None):
    """`fbt bench --decode MODE` on the bundle: its JSON figures."""
    cmd = [FBT, "bench", bundle, "--decode", mode, "--steps", "32"]
    if tokens:
        cmd += ["--tokens", str(tokens)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def need_seconds(results, prefill_rate, step_ms, batch):
    """What the compiled steps alone need for the requests' work."""
    secs = 0.0
    for r in results:
        passes = int(r.regime.split(":")[1]) if r.regime.startswith("fused") else 1
        # The prompt as the engine runs it: the separator, then its tokens.
        secs += ((r.prompt + 1) * passes / prefill_rate
                 + r.completion * step_ms / 1e3 / batch)
    return secs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", default=os.path.join(ROOT, "specs", "tiny.json"))
    ap.add_argument("--ckpt")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--requests", type=int, default=96, help="per mix")
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 8])
    ap.add_argument("--mix", nargs="+", default=["generation", "prompt"],
                    choices=["generation", "prompt"])
    ap.add_argument("--max-prompt", type=int,
                    help="inference.max_prompt_length of the bundles (default: half the "
                    "context, at most 520: the prompt mix's prompts, and the largest mixed step)")
    args = ap.parse_args()
    work = tempfile.mkdtemp()
    bundles = {}
    base = json.load(open(args.spec))
    inf = base["inference"]
    inf["max_prompt_length"] = args.max_prompt or min(520, inf["max_sequence_length"] // 2)
    for b in args.batch:
        spec = json.loads(json.dumps(base))
        spec["inference"]["batch_size"] = b
        path = os.path.join(work, "spec%d.json" % b)
        json.dump(spec, open(path, "w"))
        bundles[b] = os.path.join(work, "m%d.fbtb" % b)
        subprocess.run([os.path.join(BUILD, "tools", "fbtc", "fbtc"), path, "--target=cpu",
                        "-o", bundles[b]], check=True)
    ckpt = args.ckpt
    if not ckpt:
        subprocess.run([FBT, "train", bundles[args.batch[0]], "--steps", str(args.steps), "--out",
                        os.path.join(work, "run"), "--quiet"], check=True, stdout=subprocess.DEVNULL)
        ckpt = os.path.join(work, "run", "latest.safetensors")

    # The steps alone, this run, per mix: each batch's decode step at the
    # mix's mean context (soft: the step a batch with any feedback row
    # takes), and the best prefill rate of any prefill or mixed step.
    mixes = {}
    for mix in args.mix:
        jobs = requests_for(mix, args.requests, inf["max_sequence_length"], inf["max_prompt_length"])
        context = sum(len(j[0]["prompt"]) + 1 + j[0]["max_tokens"] // 2 for j in jobs) // len(jobs)
        rates = {b: step_rates(bundles[b], "soft", min(context, inf["max_prompt_length"]))
                 for b in args.batch}
        mixes[mix] = (jobs, context, rates)
    prefill = max(max(r["prefill_tokens_per_s"], r["mixed_tokens_per_s"])
                  for m in mixes.values() for r in m[2].values())
    # The longest a running row should wait for its next token: one mixed
    # step full of prompt tokens.
    chunks = [(r["mixed_tokens"], r["mixed_tokens"] / r["mixed_tokens_per_s"])
              for m in mixes.values() for r in m[2].values() if r["mixed_tokens"]]
    print("fbt serve on %s: %d clients, %d requests per mix (regimes %s, half streaming)"
          % (os.path.basename(args.spec), args.clients, args.requests, ", ".join(REGIMES)))
    print("steps alone: best prefill %.0f tokens/s; decode step at the mix's mean context: %s"
          % (prefill, "; ".join("%s (%d) %s" % (mix, m[1], ", ".join(
              "batch %d %.2f ms" % (b, m[2][b]["ms_per_token"]) for b in args.batch))
              for mix, m in mixes.items())))
    if chunks:
        print("one chunk (a mixed step of %d prompt tokens): %.3f s, the longest a running row "
              "should wait (compare itl p99)" % (chunks[0][0], max(c[1] for c in chunks)))
    print("%-10s %5s %9s %7s %10s %8s %8s %9s %9s %8s %8s %9s  %s"
          % ("mix", "batch", "tokens/s", "x first", "efficiency", "p50 s", "p99 s", "ttft p50",
             "ttft p99", "itl p50", "itl p99", "occupancy", "errors/lost/exit"))
    failed = False
    for mix in args.mix:
        jobs, _, rates = mixes[mix]
        first = None
        for b in args.batch:
            r = load(bundles[b], ckpt, jobs, args, work)
            first = first or r["tokens_per_s"]
            eff = need_seconds(r["results"], prefill, rates[b]["ms_per_token"], b) / r["wall"]
            print("%-10s %5d %9.0f %7.2f %10.2f %8.3f %8.3f %9.3f %9.3f %8.4f %8.4f %9.2f  %d/%d/%d"
                  % (mix, b, r["tokens_per_s"], r["tokens_per_s"] / first, eff, r["p50"], r["p99"],
                     r["ttft50"], r["ttft99"], r["itl50"], r["itl99"], r["occupancy"],
                     len(r["errors"]), r["lost"], r["exit"]))
            sys.stdout.flush()
            for e in r["errors"][:5]:
                print("   ", e)
            failed |= bool(r["errors"]) or r["lost"] != 0 or r["exit"] != 0
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
