"""fbt's kernels compiled for this CPU (fbtc --cpu=native) against the
portable default (x86-64-v3: AVX2 and FMA): batch-1 CPU decode ms/token of
the same spec and form compiled both ways, in alternating rounds of
`fbt bench --decode standard` (so that the host's drift hits both alike).
Where the CPU has AVX-512, the products use its 512-bit vectors (int8
activations two groups of 32 per 64-byte dot, with VNNI's vpdpbusd where it
has that too; f32 activations 16 lanes at a time); every other kernel is
what LLVM makes of the same IR for the named CPU.

usage: /usr/bin/python3 bench/cpu_target.py [--spec specs/small.json]
           [--forms int8a,int8,bf16,f32] [--cpu native] [--prompt 256]
           [--tokens 64] [--threads 1,2] [--rounds 5] [--json OUT.json]
       /usr/bin/python3 bench/cpu_target.py --from OUT.json   (the table again)

Prints, per form and thread count, the median ms/token of each build (with
their ranges) and the median of each round's default/--cpu ratio (above 1:
the build for the named CPU is faster), and the CPU the name resolved to
with the extensions its bundle records. The build comes from FBT_BUILD_DIR
(default build/).
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from alternating import checked_forms, parse, table, time_sides  # noqa: E402
from gguf_peer import FORM_OPTIONS, run  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def summary(raw):
    lines = ["`%s`: %s, batch 1, a %d-token prompt, %d decoded tokens; medians of %d alternating "
             "rounds (range in parentheses); --cpu=%s resolved to %s (%s)" % (
                 " ".join(raw["command"]), raw["spec"], raw["prompt"], raw["tokens"],
                 raw["rounds"], raw["cpu"], raw["chip"], raw["features"]),
             ""]
    lines += table(raw["rows"], ("default", "x86-64-v3"), ("cpu", "--cpu=" + raw["cpu"]),
                   ("default", "cpu"))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--spec", default=os.path.join(ROOT, "specs", "small.json"))
    ap.add_argument("--forms", default="int8a,int8,bf16,f32")
    ap.add_argument("--cpu", default="native", help="the LLVM CPU to compare (fbtc --cpu)")
    ap.add_argument("--prompt", type=int, default=256)
    args = parse(ap, summary)
    if not args:
        return
    forms = checked_forms(ap, args.forms, FORM_OPTIONS)
    raw = {"command": ["bench/cpu_target.py"] + sys.argv[1:], "spec": os.path.basename(args.spec),
           "prompt": args.prompt, "tokens": args.tokens, "rounds": args.rounds, "cpu": args.cpu,
           "rows": []}
    def note(fbt, bundles):  # what --cpu resolved to, and its extensions
        target = json.loads(run([fbt, "inspect", bundles[forms[0], "cpu"], "--json"]))["target"]
        raw["chip"], raw["features"] = target.get("cpu", "?"), target.get("features", "")

    time_sides(args, raw, forms, {"default": [], "cpu": ["--cpu=" + args.cpu]}, args.prompt,
               args.tokens, summary, note)


if __name__ == "__main__":
    main()
