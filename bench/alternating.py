"""Two builds of one model timed in alternating rounds, per form and thread
count: what fuse_products.py (fused against unfused products), kv_cache.py
(an f16 KV cache against an f32 one) and ab_builds.py (one build of fbt
against another) share."""

import json
import os
import statistics
import subprocess
import sys
import tempfile

from gguf_peer import BUILD, FORM_OPTIONS, run


def parse(ap, summary, tokens=64):
    """Adds the options the scripts share to `ap` and parses; with --from,
    prints that file's table and returns None. --tokens is an int with
    `tokens` its default, or a comma-separated list where `tokens` is one."""
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--tokens", type=type(tokens), default=tokens)
    ap.add_argument("--json", help="also write every round's measurements here")
    ap.add_argument("--from", dest="saved", help="print the table of a --json file and stop")
    args = ap.parse_args()
    if not args.saved:
        return args
    with open(args.saved) as f:
        print(summary(json.load(f)))
    return None


def checked_forms(ap, given, known):
    """The comma-separated forms of --forms `given`, each one of `known`
    (else ap.error names it)."""
    forms = given.split(",")
    for form in forms:
        if form not in known:
            ap.error("--forms: unknown form '%s' (expected some of %s)" % (form, ",".join(known)))
    return forms


def compile_sides(run, fbtc, spec, forms, form_options, sides, work):
    """Each form compiled once per side, with that side's fbtc options
    (`sides`: {side: [option, ...]}): {(form, side): bundle path in `work`}."""
    bundles = {}
    for form in forms:
        for side, options in sides.items():
            bundles[form, side] = os.path.join(work, "%s-%s.fbtb" % (form, side))
            run([fbtc, spec, "--target=cpu", "-o", bundles[form, side]] + options +
                form_options[form])
    return bundles


def bench_decode(fbt, bundle, threads, prompt, tokens):
    """`fbt bench --decode standard`'s JSON for `bundle`: a `prompt`-token
    prompt then `tokens` decode steps, default kernels."""
    out = subprocess.run([fbt, "bench", bundle, "--decode", "standard", "--threads",
                          str(threads), "--steps", str(tokens), "--tokens", str(prompt),
                          "--no-tune"], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def decode_ms(fbt, bundle, threads, prompt, tokens):
    """Batch-1 decode ms/token of `bundle` (bench_decode)."""
    return bench_decode(fbt, bundle, threads, prompt, tokens)["ms_per_token"]


def prefill_rate(fbt, bundle, threads, prompt):
    """Batch-1 prefill tokens/s of `bundle` over a `prompt`-token prompt
    (bench_decode, one decode step after it)."""
    return bench_decode(fbt, bundle, threads, prompt, 1)["prefill_tokens_per_s"]


def time_sides(args, raw, forms, sides, prompt, tokens, summary, note=None):
    """What fuse_products.py and cpu_target.py do: each form of `forms`
    compiled once per side (`sides`: {side: [fbtc option, ...]}, two) from
    args.spec, both timed in alternating rounds (decode_ms, a `prompt`-token
    prompt then `tokens` steps) on each of args.threads into raw["rows"],
    then written to args.json and printed. `note(fbt, bundles)`, if given,
    records in `raw` what it needs of the bundles first."""
    fbtc = os.path.join(BUILD, "tools", "fbtc", "fbtc")
    fbt = os.path.join(BUILD, "tools", "fbt", "fbt")
    with tempfile.TemporaryDirectory(prefix="sides-") as work:
        bundles = compile_sides(run, fbtc, args.spec, forms, FORM_OPTIONS, sides, work)
        if note:
            note(fbt, bundles)

        def decode(form, side, threads):
            return decode_ms(fbt, bundles[form, side], threads, prompt, tokens)

        raw["rows"] = alternating_rows(forms, [int(t) for t in args.threads.split(",")],
                                       args.rounds, tuple(sides), decode)
    finish(raw, args.json, summary)


def finish(raw, path, summary):
    """Writes the rounds to `path` (if any) and prints their summary."""
    if path:
        with open(path, "w") as f:
            json.dump(raw, f, indent=1)
    print(summary(raw))


def alternating_rows(forms, threads, rounds, sides, decode):
    """Per form and thread count, `rounds` rounds of decode(form, side,
    threads) for both `sides`, the order flipped each round so that the
    host's drift hits both alike: [{"form", "threads", side: [ms, ...]}]."""
    rows = []
    for form in forms:
        for t in threads:
            row = {"form": form, "threads": t, sides[0]: [], sides[1]: []}
            for r in range(rounds):
                for side in (sides if r % 2 == 0 else sides[::-1]):
                    row[side].append(decode(form, side, t))
            rows.append(row)
            print("%s, %d threads: done" % (form, t), file=sys.stderr)
    return rows


def table(rows, first, second, ratio, unit="ms/token"):
    """Markdown: per row, the median `unit` (and range) of the sides
    `first` and `second` ((key, label) each), then the median of each
    round's ratio (numerator key, denominator key)."""
    lines = ["| form | threads | %s %s | %s %s | %s / %s |" % (
                 first[1], unit, second[1], unit, dict([first, second])[ratio[0]],
                 dict([first, second])[ratio[1]]),
             "|---|---|---|---|---|"]
    for row in rows:
        a, b = row[first[0]], row[second[0]]
        r = statistics.median(x / y for x, y in zip(row[ratio[0]], row[ratio[1]]))
        figure = "%.3f (%.3f-%.3f)" if unit == "ms/token" else "%.0f (%.0f-%.0f)"
        lines.append(("| %s | %d | " + figure + " | " + figure + " | %.2f |") % (
            row["form"], row["threads"], statistics.median(a), min(a), max(a),
            statistics.median(b), min(b), max(b), r))
    return lines
