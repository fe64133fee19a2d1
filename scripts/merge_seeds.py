#!/usr/bin/env python3
"""Merges experiment results of the same experiment run under other seeds.

    merge_seeds.py RESULTS.json MORE.json [MORE.json ...] -o OUT.json

An experiment's seeds may run apart (`--seeds 1 --seed S` into a folder of
its own, on another day or machine); their results.json files merge into
one whose tables cover every seed, when everything but the runs is the
same: the spec, the plain spec, the steps, the parts, the schedule, the
data and its task problems. Refused, naming the field, otherwise, and when
two files hold the same seed. The merged file keeps the first file's
command and commit, and lists every file's own under "merged" (which seeds
each one ran, with its command and commit), so what ran stays on record.
"""
import argparse
import json
import sys

SAME = ("spec", "plain_spec", "steps", "splits", "report_split", "schedule_weights",
        "describe", "data", "depth", "sft")


def merge(first, others, names):
    out = json.loads(json.dumps(first))
    out["merged"] = [{"file": names[0], "seeds": first["seeds"], "command": first["command"],
                      "commit": first["commit"]}]
    for name, r in zip(names[1:], others):
        for key in SAME:
            if first.get(key) != r.get(key):
                raise ValueError("%s: '%s' differs from %s's: not the same experiment"
                                 % (name, key, names[0]))
        twice = set(map(str, out["seeds"])) & set(map(str, r["seeds"]))
        if twice:
            raise ValueError("%s: seed %s is in both" % (name, ", ".join(sorted(twice))))
        out["seeds"] = out["seeds"] + r["seeds"]
        out["runs"].update(r["runs"])
        out["merged"].append({"file": name, "seeds": r["seeds"], "command": r["command"],
                              "commit": r["commit"]})
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("results", nargs="+")
    ap.add_argument("-o", "--out", required=True)
    args = ap.parse_args()
    if len(args.results) < 2:
        sys.exit("merge_seeds: give two results.json files or more")
    loaded = [json.load(open(p)) for p in args.results]
    try:
        merged = merge(loaded[0], loaded[1:], args.results)
    except ValueError as e:
        sys.exit("merge_seeds: %s" % e)
    with open(args.out, "w") as f:
        json.dump(merged, f, indent=1)
    print("merged seeds %s into %s" % (", ".join(map(str, merged["seeds"])), args.out))


if __name__ == "__main__":
    main()
