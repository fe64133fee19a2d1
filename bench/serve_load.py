"""A bounded load test of `fbt serve` on loopback.

usage: /usr/bin/python3 bench/serve_load.py [--spec specs/tiny.json] [--clients 16]
                                           [--requests 200] [--steps 60] [--batch 1 8]

Compiles the spec once per decode batch (inference.batch_size; the weights do
not depend on it), trains it briefly (or reuses --ckpt), and for each batch
starts the server on a free port and sends --requests completions from
--clients concurrent clients: mixed regimes (standard, soft, fused:2), half of
them streaming, prompts drawn from a few shared prefixes with distinct
endings, max_tokens 8..32. Prints, per batch, throughput (requests/s,
generated tokens/s, and its ratio to the first batch's: continuous batching
against one request at a time), latency p50/p99, the mean decode-batch
occupancy and the prefix cache's hit rate (from /metrics), and counts errors
and lost requests (both must be 0); each server is stopped with SIGTERM and
must exit 0.
"""

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("FBT_BUILD_DIR", os.path.join(ROOT, "build"))
FBT = os.path.join(BUILD, "tools", "fbt", "fbt")

PREFIXES = ["The cat sat on the ", "Once upon a time, ", "Count: 1, 2, 3, ", "In the beginning "]


def post(url, body, stream):
    req = urllib.request.Request(url, data=json.dumps(body).encode(),
                                 headers={"Content-Type": "application/json"})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=120) as r:
        if not stream:
            reply = json.load(r)
            return time.perf_counter() - t0, reply["usage"]["completion_tokens"]
        tokens, done = 0, False
        for line in r:
            line = line.decode().strip()
            if line == "data: [DONE]":
                done = True
            elif line.startswith("data: "):
                chunk = json.loads(line[6:])
                tokens += 1 if chunk["choices"][0]["text"] else 0
        if not done:
            raise RuntimeError("stream ended without [DONE]")
        return time.perf_counter() - t0, tokens


def metrics(url):
    with urllib.request.urlopen("http://%s/metrics" % url, timeout=10) as r:
        return {l.split()[0]: float(l.split()[1]) for l in r.read().decode().splitlines()
                if l and l[0] != "#" and "{" not in l}


def load(bundle, ckpt, args, work):
    """Runs the load against one bundle; returns its figures."""
    log = open(os.path.join(work, "server.log"), "w+")
    server = subprocess.Popen([FBT, "serve", bundle, "--ckpt", ckpt, "--port", "0",
                               "--max-queue", str(args.requests)], stderr=log)
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

    rng = random.Random(0)
    jobs = []
    for i in range(args.requests):
        jobs.append(({"prompt": rng.choice(PREFIXES) + str(i % 50), "max_tokens": rng.randint(8, 32),
                      "temperature": rng.choice([0, 0.8]), "seed": i,
                      "regime": rng.choice(["standard", "soft", "fused:2"])},
                     i % 2 == 0))
    lock = threading.Lock()
    results, errors = [], []

    def client():
        while True:
            with lock:
                if not jobs:
                    return
                body, stream = jobs.pop()
            body["stream"] = stream
            try:
                r = post(base, body, stream)
                with lock:
                    results.append(r)
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

    lat = sorted(r[0] for r in results)
    pct = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] if lat else float("nan")
    lookups = m["fbt_prefix_cache_hits_total"] + m["fbt_prefix_cache_misses_total"]
    return {"requests_per_s": len(results) / wall,
            "tokens_per_s": sum(r[1] for r in results) / wall,
            "p50": pct(0.5), "p99": pct(0.99),
            "occupancy": m["fbt_decode_row_steps_total"] / max(1, m["fbt_decode_steps_total"]),
            "hit_rate": m["fbt_prefix_cache_hits_total"] / max(1, lookups),
            "errors": errors, "lost": args.requests - len(results) - len(errors), "exit": code}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", default=os.path.join(ROOT, "specs", "tiny.json"))
    ap.add_argument("--ckpt")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--steps", type=int, default=60)
    ap.add_argument("--batch", type=int, nargs="+", default=[1, 8])
    args = ap.parse_args()
    work = tempfile.mkdtemp()
    bundles = {}
    for b in args.batch:
        spec = json.load(open(args.spec))
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

    print("fbt serve on %s: %d clients, %d requests (mixed regimes, half streaming)"
          % (os.path.basename(args.spec), args.clients, args.requests))
    print("%6s %10s %9s %7s %8s %8s %10s %9s  %s" % ("batch", "requests/s", "tokens/s", "x first",
                                                    "p50 s", "p99 s", "occupancy", "cache hit",
                                                    "errors/lost/exit"))
    failed, first = False, None
    for b in args.batch:
        r = load(bundles[b], ckpt, args, work)
        first = first or r["tokens_per_s"]
        print("%6d %10.2f %9.0f %7.2f %8.3f %8.3f %10.2f %9.2f  %d/%d/%d"
              % (b, r["requests_per_s"], r["tokens_per_s"], r["tokens_per_s"] / first, r["p50"],
                 r["p99"], r["occupancy"], r["hit_rate"], len(r["errors"]), r["lost"], r["exit"]))
        for e in r["errors"][:5]:
            print("   ", e)
        failed |= bool(r["errors"]) or r["lost"] != 0 or r["exit"] != 0
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
