"""The CPU's fused products (fbt-fuse-products) against the same spec compiled
with --fuse-products=false: batch-1 decode ms/token of each, on one build per
form and fusion, in alternating rounds of `fbt bench --decode standard` (so
that the host's drift hits both alike).

usage: /usr/bin/python3 bench/fuse_products.py [--spec specs/small.json]
           [--forms int8a,f32] [--threads 1,2] [--rounds 5] [--tokens 64]
           [--json OUT.json]
       /usr/bin/python3 bench/fuse_products.py --from OUT.json   (the table again)

Prints, per form and thread count, the median ms/token fused and unfused
(with their ranges) and the median of each round's unfused/fused ratio
(above 1: fusing is faster). The build comes from FBT_BUILD_DIR (default
build/).
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from alternating import checked_forms, parse, table, time_sides  # noqa: E402
from gguf_peer import FORM_OPTIONS  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def summary(raw):
    lines = ["`%s`: %s, batch 1, %d prompt and %d decoded tokens; medians of %d alternating "
             "rounds (range in parentheses)" % (" ".join(raw["command"]), raw["spec"],
                                                raw["tokens"], raw["tokens"], raw["rounds"]),
             ""]
    lines += table(raw["rows"], ("fused", "fused"), ("unfused", "unfused"),
                   ("unfused", "fused"))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", default=os.path.join(ROOT, "specs", "small.json"))
    ap.add_argument("--forms", default="int8a,f32")
    args = parse(ap, summary)
    if not args:
        return
    forms = checked_forms(ap, args.forms, FORM_OPTIONS)
    raw = {"command": ["bench/fuse_products.py"] + sys.argv[1:],
           "spec": os.path.basename(args.spec), "tokens": args.tokens, "rounds": args.rounds,
           "rows": []}
    time_sides(args, raw, forms, {"fused": ["--fuse-products=true"],
                                  "unfused": ["--fuse-products=false"]},
               args.tokens, args.tokens, summary)


if __name__ == "__main__":
    main()
