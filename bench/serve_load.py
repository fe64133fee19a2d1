"""A bounded load test of `fbt serve` on loopback.

usage: /usr/bin/python3 bench/serve_load.py [--spec specs/tiny.json] [--clients 16]
                                           [--requests 200] [--steps 60]

Compiles the spec, trains it briefly (or reuses --ckpt), starts the server on a
free port, and sends --requests completions from --clients concurrent
clients: mixed regimes (standard, soft, fused:2), half of them streaming,
prompts drawn from a few shared prefixes with distinct endings, max_tokens
8..32. Prints throughput (requests/s, generated tokens/s), latency p50/p99,
and counts errors and lost requests (both must be 0), then stops the server
with SIGTERM and checks that it exits 0.
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", default=os.path.join(ROOT, "specs", "tiny.json"))
    ap.add_argument("--ckpt")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--requests", type=int, default=200)
    ap.add_argument("--steps", type=int, default=60)
    args = ap.parse_args()
    work = tempfile.mkdtemp()
    bundle = os.path.join(work, "m.fbtb")
    subprocess.run([os.path.join(BUILD, "tools", "fbtc", "fbtc"), args.spec, "--target=cpu",
                    "-o", bundle], check=True)
    ckpt = args.ckpt
    if not ckpt:
        subprocess.run([FBT, "train", bundle, "--steps", str(args.steps), "--out",
                        os.path.join(work, "run"), "--quiet"], check=True, stdout=subprocess.DEVNULL)
        ckpt = os.path.join(work, "run", "latest.safetensors")
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
        sys.exit("the server did not start")
    base = "http://%s/v1/completions" % url

    rng = random.Random(0)
    jobs = []
    for i in range(args.requests):
        jobs.append(({"prompt": rng.choice(PREFIXES) + str(i), "max_tokens": rng.randint(8, 32),
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
    server.send_signal(signal.SIGTERM)
    code = server.wait(timeout=60)

    lat = sorted(r[0] for r in results)
    tokens = sum(r[1] for r in results)
    pct = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] if lat else float("nan")
    print("fbt serve on %s: %d clients, %d requests (mixed regimes, half streaming)"
          % (os.path.basename(args.spec), args.clients, args.requests))
    print("  throughput  %.2f requests/s, %.0f generated tokens/s" % (len(results) / wall, tokens / wall))
    print("  latency     p50 %.3f s, p99 %.3f s" % (pct(0.5), pct(0.99)))
    print("  errors      %d, lost %d, server exit %d" % (len(errors), args.requests - len(results) - len(errors), code))
    for e in errors[:5]:
        print("   ", e)
    sys.exit(1 if errors or code != 0 or len(results) != args.requests else 0)


if __name__ == "__main__":
    main()
