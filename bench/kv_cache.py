"""fbt's f16 KV cache (fbtc --inference-kv-cache f16) against its f32 one:
batch-1 CPU decode ms/token of the same spec and form compiled both ways, in
alternating rounds of `fbt bench --decode standard` (so that the host's drift
hits both alike), after a P-token prompt, for N decoded tokens: a decoded
token reads the cache up to its position, so the cache's share of what it
reads grows with N.

usage: /usr/bin/python3 bench/kv_cache.py [--spec specs/small.json]
           [--forms int8a,f32] [--prompt 256] [--tokens 64,760] [--threads 1,2]
           [--rounds 5] [--json OUT.json]
       /usr/bin/python3 bench/kv_cache.py --from OUT.json   (the table again)

Prints, per form, decoded tokens and thread count, the median ms/token with
each cache (with their ranges) and the median of each round's f32/f16 ratio
(above 1: the f16 cache is faster). The build comes from FBT_BUILD_DIR
(default build/).
"""

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from alternating import (alternating_rows, checked_forms, compile_sides, decode_ms,  # noqa: E402
                         finish, parse, table)
from gguf_peer import BUILD, FORM_OPTIONS, run  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def summary(raw):
    lines = ["`%s`: %s, batch 1, a %d-token prompt; medians of %d alternating rounds (range in "
             "parentheses); a row's form says its decoded tokens" % (
                 " ".join(raw["command"]), raw["spec"], raw["prompt"], raw["rounds"]),
             ""]
    lines += table(raw["rows"], ("f32", "f32 cache"), ("f16", "f16 cache"), ("f32", "f16"))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", default=os.path.join(ROOT, "specs", "small.json"))
    ap.add_argument("--forms", default="int8a,f32")
    ap.add_argument("--prompt", type=int, default=256)
    args = parse(ap, summary, tokens="64,760")
    if not args:
        return
    forms = checked_forms(ap, args.forms, FORM_OPTIONS)
    tokens = [int(n) for n in args.tokens.split(",")]
    fbtc = os.path.join(BUILD, "tools", "fbtc", "fbtc")
    fbt = os.path.join(BUILD, "tools", "fbt", "fbt")
    raw = {"command": ["bench/kv_cache.py"] + sys.argv[1:], "spec": os.path.basename(args.spec),
           "prompt": args.prompt, "rounds": args.rounds, "rows": []}
    with tempfile.TemporaryDirectory(prefix="kv-cache-") as work:
        bundles = compile_sides(run, fbtc, args.spec, forms, FORM_OPTIONS,
                                {kv: ["--inference-kv-cache=" + kv] for kv in ("f32", "f16")},
                                work)
        # A row per form and decoded tokens: "int8a, 760 tokens".
        rows = {"%s, %d tokens" % (form, n): (form, n) for form in forms for n in tokens}

        def decode(row, kv, threads):
            form, n = rows[row]
            return decode_ms(fbt, bundles[form, kv], threads, args.prompt, n)

        raw["rows"] = alternating_rows(list(rows), [int(t) for t in args.threads.split(",")],
                                       args.rounds, ("f32", "f16"), decode)
    finish(raw, args.json, summary)


if __name__ == "__main__":
    main()
