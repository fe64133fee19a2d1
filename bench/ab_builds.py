"""One build of fbt against another: batch-1 CPU decode ms/token of the same
spec compiled and run by each (its own fbtc and fbt), in alternating rounds of
`fbt bench --decode standard` (so that the host's drift hits both alike). It
measures a change against its parent: build the parent commit in a directory
of its own (scripts/build.sh there, or a git worktree), then pass it as
--baseline.

usage: /usr/bin/python3 bench/ab_builds.py --baseline BUILD_DIR [--labels BASE,NEW]
           [--spec specs/small.json] [--forms f32,bf16,int8,int8a] [--threads 1,2]
           [--rounds 5] [--prompt 256] [--tokens 64] [--cpu NAME] [--measure decode|prefill]
           [--json OUT.json]
       /usr/bin/python3 bench/ab_builds.py --from OUT.json   (the table again)

Prints, per form and thread count, the median ms/token of each build (with
their ranges) and the median of each round's baseline/new ratio (above 1: the
new build is faster); with --measure prefill, the prompt's prefill tokens/s
instead, and new/baseline (above 1 again: the new build is faster). The new build is FBT_BUILD_DIR (default build/); both
hold tools/fbtc/fbtc and tools/fbt/fbt. Forms as in gguf_peer.py (int8a:
int8 weights and int8 activations); --cpu is fbtc's for both (default: its
portable x86-64-v3; native: this CPU's).
"""

import argparse
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from alternating import (alternating_rows, checked_forms, decode_ms, finish, parse,  # noqa: E402
                         prefill_rate, table)
from gguf_peer import BUILD, FORM_OPTIONS, run  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def summary(raw):
    base, new = raw["labels"]
    cpu = ", compiled for --cpu=%s" % raw["cpu"] if raw.get("cpu") else ""
    prefill = raw.get("measure") == "prefill"
    what = ("prefill of a %d-token prompt" % raw["prompt"] if prefill else
            "%d prompt and %d decoded tokens" % (raw["prompt"], raw["tokens"]))
    lines = ["`%s`: %s, batch 1, %s, %s against %s%s; medians of %d alternating rounds "
             "(range in parentheses)" % (" ".join(raw["command"]), raw["spec"], what, new, base,
                                         cpu, raw["rounds"]),
             ""]
    if prefill:  # tokens/s: above 1 is new/baseline
        lines += table(raw["rows"], ("baseline", base), ("new", new), ("new", "baseline"),
                       unit="tokens/s")
    else:
        lines += table(raw["rows"], ("baseline", base), ("new", new), ("baseline", "new"))
    return "\n".join(lines)


def tools(build):
    fbtc = os.path.join(build, "tools", "fbtc", "fbtc")
    fbt = os.path.join(build, "tools", "fbt", "fbt")
    for tool in (fbtc, fbt):
        if not os.access(tool, os.X_OK):
            sys.exit("ab_builds.py: no %s (build that directory first)" % tool)
    return fbtc, fbt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", help="the build directory to compare against")
    ap.add_argument("--labels", default="baseline,new",
                    help="what to call the two builds in the table (e.g. their commits)")
    ap.add_argument("--spec", default=os.path.join(ROOT, "specs", "small.json"))
    ap.add_argument("--forms", default="f32,bf16,int8,int8a")
    ap.add_argument("--prompt", type=int, default=256)
    ap.add_argument("--cpu", help="fbtc --cpu for both builds' bundles (native: this CPU's)")
    ap.add_argument("--measure", choices=("decode", "prefill"), default="decode",
                    help="what to time: decode ms/token, or the prompt's prefill tokens/s")
    args = parse(ap, summary)
    if not args:
        return
    if not args.baseline:
        ap.error("--baseline BUILD_DIR is required (or --from)")
    labels = args.labels.split(",")
    if len(labels) != 2:
        ap.error("--labels: two names, comma-separated, not '%s'" % args.labels)
    forms = checked_forms(ap, args.forms, FORM_OPTIONS)
    builds = {"baseline": tools(args.baseline), "new": tools(BUILD)}
    raw = {"command": ["bench/ab_builds.py"] + sys.argv[1:], "labels": labels,
           "spec": os.path.basename(args.spec), "prompt": args.prompt, "tokens": args.tokens,
           "rounds": args.rounds, "rows": []}
    if args.cpu:
        raw["cpu"] = args.cpu
    if args.measure == "prefill":
        raw["measure"] = "prefill"
    with tempfile.TemporaryDirectory(prefix="ab-builds-") as work:
        bundles = {}
        for form in forms:
            for which, (fbtc, _) in builds.items():
                path = os.path.join(work, "%s-%s.fbtb" % (form, which))
                run([fbtc, args.spec, "--target=cpu", "-o", path] + FORM_OPTIONS[form] +
                    (["--cpu=" + args.cpu] if args.cpu else []))
                bundles[form, which] = path

        def decode(form, which, threads):
            if args.measure == "prefill":
                return prefill_rate(builds[which][1], bundles[form, which], threads, args.prompt)
            return decode_ms(builds[which][1], bundles[form, which], threads, args.prompt,
                             args.tokens)

        raw["rows"] = alternating_rows(forms, [int(t) for t in args.threads.split(",")],
                                       args.rounds, ("baseline", "new"), decode)
    finish(raw, args.json, summary)


if __name__ == "__main__":
    main()
