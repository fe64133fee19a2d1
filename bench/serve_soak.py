#!/usr/bin/env python3
"""A soak test of `fbt serve`: for a bounded time, mixed clients on loopback, and
every reply checked against the same request run alone.

    serve_soak.py --fbt FBT --bundle B.fbtb --ckpt C.safetensors
                  [--seconds 300] [--clients 8] [--seed 1] [--hostile]
                  [--json OUT.json]

The server is started with an API key and a small body limit. First every
request of the mix is run alone, one at a time (its reference reply); then
--clients threads send, until the time is up, requests drawn from:

  plain       a completion or chat reply, any regime (standard, soft, fused:2,
              fused:3), greedy or seeded sampling, some with log-probabilities:
              its texts must equal its reference's, its log-probabilities
              within 1e-3
  json        the same with a response_format (json_object, or a schema):
              checked so, and a reply that ends ("stop") must parse
  streamed    the same as server-sent events: the pieces must add up to the
              reference's text
  disconnect  a stream the client closes after its first event
  malformed   a body that is not JSON (400), or asks for an unknown field (400)
  oversized   a body over --max-body-bytes (413)
  wrong key   a request with another key (401)

and with --hostile, requests meant to stall, starve or fail the others:

  ambiguous   a json_schema whose recursive rule has two identical
              alternatives (a parse that doubles per nesting level in a
              recognizer of whole stacks), nested as deep as it may: 200
  left rec.   a left-recursive $ref (400 before any token)
  chunked     a body over the limit sent chunked, without a length (413)

The ordinary kinds' errors must stay 0 and their replies exact; compare
their p99 latency with and without --hostile.

while another thread asks /health every 0.2 s. At the end the engine must be
idle with every row free (/metrics: occupancy 0, queue 0) and SIGTERM must
stop it with exit status 0. A leak is looked for three ways, each idle
against idle or steady against steady:
  - the live heap (/metrics: fbt_heap_bytes, the server run without glibc's
    per-thread caches) within 1% of what it was after the reference replies;
  - the same number of threads;
  - RSS within 10% of what it was after the warm-up (the first fifth of the
    time, and of a short run the first third, up to 10 s): RSS also follows
    the allocator's arenas, so it is the loose, last check, for memory the
    heap does not count.
Prints requests, errors and p50/p99 latency per kind and the share of
replies checked; exits 1 on any lost, mixed-up or failed reply, leak,
unanswered /health or bad exit.
"""

import argparse
import http.client
import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time

KEY = "sk-soak"
MAX_BODY = 16384
PROMPTS = ["The cat", "Once upon a time", "def main():", "A dog ran", "In 1990 the"]
REGIMES = ["standard", "soft", "fused:2", "fused:3"]
FORMATS = [{"type": "json_object"},
           {"type": "json_schema", "json_schema": {"name": "pet", "schema": {
               "type": "object", "required": ["name", "cat"], "properties": {
                   "name": {"type": "string", "maxLength": 6},
                   "cat": {"type": "boolean"}}}}}]


AMBIGUOUS = {"type": "json_schema", "json_schema": {"name": "deep", "schema": {
    "type": "object", "required": ["a"], "properties": {"a": {"$ref": "#/$defs/n"}},
    "$defs": {"n": {"anyOf": [{"type": "array", "items": {"$ref": "#/$defs/n"}},
                              {"type": "array", "items": {"$ref": "#/$defs/n"}}]}}}}}
LEFT_RECURSIVE = {"type": "json_schema", "json_schema": {"name": "left", "schema": {
    "type": "object", "properties": {"x": {"$ref": "#/$defs/l"}},
    "$defs": {"l": {"anyOf": [{"$ref": "#/$defs/l"}, {"type": "null"}]}}}}}
ORDINARY = ("plain", "json", "streamed", "streamed (n)")


def start_server(args):
    cmd = [args.fbt, "serve", args.bundle, "--ckpt", args.ckpt, "--port", "0",
           "--api-key", KEY, "--max-body-bytes", str(MAX_BODY), "--max-queue", "256"]
    # Without glibc's per-thread caches, freed chunks go back to the heap, so
    # the server's live heap (fbt_heap_bytes) counts only what is still held.
    env = dict(os.environ, GLIBC_TUNABLES="glibc.malloc.tcache_count=0")
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=env)
    for line in proc.stderr:
        m = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        if m:
            threading.Thread(target=lambda: [None for _ in proc.stderr], daemon=True).start()
            return proc, int(m.group(1))
    sys.exit("serve_soak: the server did not start")


def request(port, method, path, body=None, key=KEY, timeout=120):
    """(status, body text)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = "Bearer " + key
    conn.request(method, path, body=body, headers=headers)
    r = conn.getresponse()
    text = r.read().decode("utf-8", "replace")
    conn.close()
    return r.status, text


def stream(port, body, close_after_first=False):
    """(status, text of the pieces, logprob tokens) of a streamed request."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.request("POST", body["path"], body=json.dumps(body["json"]),
                 headers={"Content-Type": "application/json", "Authorization": "Bearer " + KEY})
    r = conn.getresponse()
    if r.status != 200:
        r.read()
        conn.close()
        return r.status, "", []
    text, tokens, buf = "", [], b""
    while True:
        chunk = r.read1(65536) if hasattr(r, "read1") else r.read(1)
        if not chunk:
            break
        buf += chunk
        while b"\n\n" in buf:
            event, buf = buf.split(b"\n\n", 1)
            data = event.decode("utf-8")[len("data: "):]
            if data == "[DONE]":
                continue
            j = json.loads(data)
            if "error" in j:
                raise RuntimeError("stream error: " + data)
            if close_after_first:
                conn.close()
                return 200, "", []
            for c in j["choices"]:
                text += (c["delta"].get("content") or "") if "delta" in c else c["text"]
                lp = c.get("logprobs")
                if lp:
                    tokens += [t["logprob"] for t in lp["content"]] if "content" in lp \
                        else lp["token_logprobs"]
    conn.close()
    return 200, text, tokens


def mix(rng):
    """The requests of the mix: (name, path, json)."""
    out = []
    for prompt in PROMPTS:
        for regime in REGIMES:
            for chat in (False, True):
                body = {"max_tokens": rng.choice([6, 10, 16]), "regime": regime}
                if rng.random() < 0.5:
                    body["temperature"] = 0
                else:
                    body.update(temperature=0.8, seed=rng.randrange(1000))
                if chat:
                    body["messages"] = [{"role": "user", "content": prompt}]
                    if rng.random() < 0.5:
                        body.update(logprobs=True, top_logprobs=2)
                else:
                    body["prompt"] = prompt
                    if rng.random() < 0.5:
                        body["logprobs"] = 1
                    if rng.random() < 0.3:
                        body["n"] = 2
                if rng.random() < 0.3:  # JSON output, long enough to end
                    body.update(max_tokens=48, response_format=rng.choice(FORMATS))
                path = "/v1/chat/completions" if chat else "/v1/completions"
                out.append({"name": "%s %s %s" % (path, regime, prompt), "path": path,
                            "json": body})
    return out


def reply_of(text):
    """(texts, logprobs, finish reasons per choice) of a plain reply."""
    j = json.loads(text)
    texts, lps, finishes = [], [], []
    for c in j["choices"]:
        texts.append(c["message"]["content"] if "message" in c else c["text"])
        finishes.append(c["finish_reason"])
        lp = c.get("logprobs")
        lps.append([] if not lp else
                   [t["logprob"] for t in lp["content"]] if "content" in lp
                   else lp["token_logprobs"])
    return texts, lps, finishes


def unparsed(texts, finishes):
    """The first JSON reply that ended but does not parse as an object."""
    for text, finish in zip(texts, finishes):
        if finish == "stop":
            try:
                if not isinstance(json.loads(text), dict):
                    return text
            except ValueError:
                return text
    return None


def same_logprobs(a, b):
    return len(a) == len(b) and all(abs(x - y) <= 1e-3 for x, y in zip(a, b))


def proc_status(pid, key):
    """A number from /proc/PID/status ("VmRSS" in KiB, "Threads")."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def metric(port, name):
    _, text = request(port, "GET", "/metrics")
    m = re.search(r"^%s (\S+)$" % re.escape(name), text, re.M)
    return float(m.group(1)) if m else None


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.count, self.errors, self.latency = {}, {}, {}
        self.checked = self.replies = 0
        self.failures = []

    def add(self, kind, seconds, error=None, checked=False, reply=False):
        with self.lock:
            self.count[kind] = self.count.get(kind, 0) + 1
            self.latency.setdefault(kind, []).append(seconds)
            if error:
                self.errors[kind] = self.errors.get(kind, 0) + 1
                if len(self.failures) < 20:
                    self.failures.append("%s: %s" % (kind, error))
            self.replies += reply
            self.checked += checked


def chunked(port, body):
    """The status of a POST whose body is sent chunked (no Content-Length)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    pieces = (body[i:i + 4096].encode() for i in range(0, len(body), 4096))
    try:
        conn.request("POST", "/v1/completions", body=pieces, encode_chunked=True,
                     headers={"Content-Type": "application/json",
                              "Authorization": "Bearer " + KEY})
        r = conn.getresponse()
    except (BrokenPipeError, ConnectionResetError):
        # The server answered and closed before all was sent: read its answer.
        r = conn.getresponse()
    r.read()
    conn.close()
    return r.status


def client(port, requests, refs, deadline, seed, tally, hostile):
    rng = random.Random(seed)
    kinds = ["plain"] * 5 + ["streamed"] * 3 + ["disconnect", "malformed", "oversized",
                                                 "wrong key"]
    if hostile:
        kinds += ["ambiguous", "left rec.", "chunked"]
    while time.time() < deadline:
        kind = rng.choice(kinds)
        i = rng.randrange(len(requests))
        r = requests[i]
        t0 = time.time()
        error, checked, reply = None, False, False
        try:
            if kind == "plain":
                if "response_format" in r["json"]:
                    kind = "json"
                status, text = request(port, "POST", r["path"], json.dumps(r["json"]))
                reply = True
                if status != 200:
                    error = "status %d: %s" % (status, text[:200])
                else:
                    texts, lps, finishes = reply_of(text)
                    if texts != refs[i][0] or not all(
                            same_logprobs(a, b) for a, b in zip(lps, refs[i][1])):
                        error = "differs from its request alone: " + r["name"]
                    elif kind == "json" and unparsed(texts, finishes) is not None:
                        error = "JSON reply does not parse: %r" % unparsed(texts, finishes)
                    checked = True
            elif kind == "streamed":
                if r["json"].get("n", 1) > 1:
                    kind = "streamed (n)"
                body = {"path": r["path"], "json": dict(r["json"], stream=True)}
                status, text, lps = stream(port, body)
                reply = True
                if status != 200:
                    error = "status %d" % status
                elif text != refs[i][0][0] and r["json"].get("n", 1) == 1:
                    error = "streamed text differs from its request alone: " + r["name"]
                else:
                    checked = r["json"].get("n", 1) == 1
            elif kind == "disconnect":
                stream(port, {"path": r["path"], "json": dict(r["json"], stream=True,
                                                              max_tokens=16)},
                       close_after_first=True)
            elif kind == "malformed":
                body = rng.choice(['{"prompt": "a", ', '[1, 2]', '{"prompt": "a", "tmperature": 1}'])
                status, _ = request(port, "POST", "/v1/completions", body)
                if status != 400:
                    error = "malformed body answered %d" % status
            elif kind == "oversized":
                status, _ = request(port, "POST", "/v1/completions",
                                    json.dumps({"prompt": "a" * (MAX_BODY + 10)}))
                if status != 413:
                    error = "oversized body answered %d" % status
            elif kind == "ambiguous":
                body = {"prompt": "{", "max_tokens": 32, "temperature": 0,
                        "response_format": AMBIGUOUS}
                status, text = request(port, "POST", "/v1/completions", json.dumps(body))
                if status != 200:
                    error = "ambiguous schema answered %d: %s" % (status, text[:200])
            elif kind == "left rec.":
                body = {"prompt": "{", "max_tokens": 8, "response_format": LEFT_RECURSIVE}
                status, text = request(port, "POST", "/v1/completions", json.dumps(body))
                if status != 400 or "left recursion" not in text:
                    error = "left-recursive schema answered %d: %s" % (status, text[:200])
            elif kind == "chunked":
                status = chunked(port, json.dumps({"prompt": "a" * (4 * MAX_BODY)}))
                if status != 413:
                    error = "chunked oversized body answered %d" % status
            else:
                status, _ = request(port, "POST", r["path"], json.dumps(r["json"]), key="sk-no")
                if status != 401:
                    error = "wrong key answered %d" % status
        except Exception as e:  # a lost reply: the connection failed
            error = "%s: %s" % (type(e).__name__, e)
        tally.add(kind, time.time() - t0, error, checked, reply)


def health(port, stop, misses):
    while not stop.is_set():
        try:
            status, _ = request(port, "GET", "/health", key=None, timeout=5)
            if status != 200:
                misses.append(status)
        except Exception as e:
            misses.append(str(e))
        stop.wait(0.2)


def percentile(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100.0 * len(xs)))]


def parse_args():
    """The command line (the usage above)."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--fbt", required=True)
    ap.add_argument("--bundle", required=True)
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--seconds", type=float, default=300)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--hostile", action="store_true",
                    help="mix in requests meant to stall, starve or fail the others")
    ap.add_argument("--json", help="also write the figures here")
    return ap.parse_args()


def references(port, requests):
    """Each request's reply run alone, one at a time (reply_of's form): what
    its replies under load must equal. Exits on one that fails alone."""
    refs = []
    for r in requests:
        status, text = request(port, "POST", r["path"], json.dumps(r["json"]))
        if status != 200:
            sys.exit("serve_soak: %s answered %d alone: %s" % (r["name"], status, text))
        refs.append(reply_of(text))
    return refs


def soak(args, proc, port, requests, refs):
    """(tally, /health's misses, RSS after the warm-up): --clients threads
    sending the mix for --seconds while another asks /health."""
    tally, misses, stop = Tally(), [], threading.Event()
    watcher = threading.Thread(target=health, args=(port, stop, misses))
    watcher.start()
    deadline = time.time() + args.seconds
    threads = [threading.Thread(target=client,
                                args=(port, requests, refs, deadline, args.seed * 1000 + c, tally,
                                      args.hostile))
               for c in range(args.clients)]
    for t in threads:
        t.start()
    time.sleep(max(args.seconds / 5, min(10.0, args.seconds / 3)))
    rss_start = proc_status(proc.pid, "VmRSS")
    for t in threads:
        t.join()
    stop.set()
    watcher.join()
    return tally, misses, rss_start


def wait_idle(port):
    """(rows busy, requests queued) once the engine is idle, or after 10 s:
    every row free, nothing queued (a disconnected stream ends at its next
    token)."""
    for _ in range(100):
        if metric(port, "fbt_batch_occupancy") == 0 and metric(port, "fbt_queue_depth") == 0:
            break
        time.sleep(0.1)
    return metric(port, "fbt_batch_occupancy"), metric(port, "fbt_queue_depth")


def stop_server(proc):
    """The server's exit status on SIGTERM (a sentence where it had to be
    killed after 60 s)."""
    proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        return "killed after 60 s"


def ordinary(tally):
    """(latencies, errors) of the ordinary kinds together."""
    return ([x for k in ORDINARY for x in tally.latency.get(k, [])],
            sum(tally.errors.get(k, 0) for k in ORDINARY))


def print_figures(args, tally, requests, end):
    """The table of kinds, then the checks' figures (`end`: the server's at the
    start and the end, as main gathers them)."""
    print("serve_soak: %d clients for %.0f s, %d requests in the mix" % (
        args.clients, args.seconds, len(requests)))
    print("| kind | requests | errors | p50 (s) | p99 (s) |")
    print("|---|---|---|---|---|")
    for kind in sorted(tally.count):
        lat = tally.latency[kind]
        print("| %s | %d | %d | %.3f | %.3f |" % (kind, tally.count[kind],
                                                  tally.errors.get(kind, 0),
                                                  percentile(lat, 50), percentile(lat, 99)))
    latencies, errors = ordinary(tally)
    print("ordinary requests%s: %d, errors %d, p99 %.3f s" % (
        " beside the hostile ones" if args.hostile else "", len(latencies), errors,
        percentile(latencies, 99) if latencies else 0.0))
    print("replies checked against their request alone: %d of %d (%.1f%%)" % (
        tally.checked, tally.replies, 100.0 * tally.checked / max(1, tally.replies)))
    print("rows busy at the end %s, queued %s" % (end["occupancy"], end["queued"]))
    (heap_start, heap_end), (threads_start, threads_end) = end["heap_bytes"], end["threads"]
    print("live heap idle %d -> idle at the end %d bytes (%+.2f%%); threads %d -> %d" % (
        heap_start, heap_end, 100 * end["heap_growth"], threads_start, threads_end))
    print("RSS after the warm-up %d -> at the end %d KiB (%+.1f%%)" % (
        end["rss_kib"][0], end["rss_kib"][1], 100 * end["rss_growth"]))
    print("/health unanswered: %d; exit status on SIGTERM: %s" % (len(end["misses"]),
                                                                   end["exit"]))


def failures_of(tally, end):
    """Every failed check: the clients' failures, then a row, heap, thread or
    memory leak, an unanswered /health and a bad exit."""
    failures = list(tally.failures)
    if end["occupancy"] != 0 or end["queued"] != 0:
        failures.append("rows or queue not freed: occupancy %s, queue %s" % (
            end["occupancy"], end["queued"]))
    if end["heap_growth"] > 0.01:
        failures.append("live heap grew %.2f%%" % (100 * end["heap_growth"]))
    if end["threads"][1] != end["threads"][0]:
        failures.append("threads %d -> %d" % tuple(end["threads"]))
    if end["rss_growth"] > 0.10:
        failures.append("RSS grew %.1f%%" % (100 * end["rss_growth"]))
    if end["misses"]:
        failures.append("/health unanswered %d times: %s" % (len(end["misses"]),
                                                             end["misses"][:3]))
    if end["exit"] != 0:
        failures.append("exit status %s on SIGTERM" % end["exit"])
    return failures


def write_json(path, args, tally, end, failures):
    """The figures and failures, for --json."""
    latencies, errors = ordinary(tally)
    with open(path, "w") as f:
        json.dump({"count": tally.count, "errors": tally.errors,
                   "p50": {k: percentile(v, 50) for k, v in tally.latency.items()},
                   "p99": {k: percentile(v, 99) for k, v in tally.latency.items()},
                   "checked": tally.checked, "replies": tally.replies,
                   "rss_kib": end["rss_kib"], "heap_bytes": end["heap_bytes"],
                   "threads": end["threads"], "health_misses": len(end["misses"]),
                   "exit": end["exit"], "hostile": args.hostile,
                   "ordinary": {"requests": len(latencies), "errors": errors,
                                "p99": percentile(latencies, 99) if latencies else None},
                   "failures": failures}, f, indent=1)


def main():
    """Soaks the server and checks it; 1 on any failed check."""
    args = parse_args()
    proc, port = start_server(args)
    rng = random.Random(args.seed)
    requests = mix(rng)
    refs = references(port, requests)
    # Idle after every request has run once: grammars compiled, caches warm.
    heap_start, threads_start = metric(port, "fbt_heap_bytes"), proc_status(proc.pid, "Threads")
    if heap_start is None:
        sys.exit("serve_soak: the server's /metrics has no fbt_heap_bytes (not built on glibc?)")
    tally, misses, rss_start = soak(args, proc, port, requests, refs)
    occupancy, queued = wait_idle(port)
    rss_end = proc_status(proc.pid, "VmRSS")
    heap_end, threads_end = metric(port, "fbt_heap_bytes"), proc_status(proc.pid, "Threads")
    end = {"occupancy": occupancy, "queued": queued, "exit": stop_server(proc),
           "rss_kib": [rss_start, rss_end],
           "rss_growth": (rss_end - rss_start) / float(rss_start),
           "heap_bytes": [heap_start, heap_end],
           "heap_growth": (heap_end - heap_start) / heap_start,
           "threads": [threads_start, threads_end], "misses": misses}
    print_figures(args, tally, requests, end)
    failures = failures_of(tally, end)
    if args.json:
        write_json(args.json, args, tally, end, failures)
    for f in failures:
        print("FAIL: " + f)
    print("PASS" if not failures else "FAIL: %d problem(s)" % len(failures))
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main())
