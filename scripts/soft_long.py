#!/usr/bin/env python3
"""Contraction over a long horizon: tiny with a context of 1536, trained on
sequences of 256, then `fbt eval --contraction` on 256-byte prompts with a
thousand tokens of soft decoding, under 3 seeds. Writes the raw results
(contraction.json) and their table (contraction.md, the experiment
report's contraction section).

    soft_long.py --out DIR [--recipe fbt|paper] [--build BUILD] [--seeds N] [--steps N]
    soft_long.py --table DIR [--check]

Resumable: a seed whose checkpoint and measurement exist is not redone.
--table rebuilds contraction.md from contraction.json (--check: exit 1 when
the committed one differs).
"""

import argparse
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import experiment_report as er  # noqa: E402
from experiment import describe_spec, flops_per_token, schedule_weights, use_recipe  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONTEXT, PROMPT, TRAIN_SEQ, GENERATE = 1536, 256, 256, 1000


def long_spec(recipe=None):
    """specs/tiny.json with the long context, prompts and training windows,
    under `recipe`'s preset where given (as the experiment runner's
    --fbt-recipe)."""
    with open(os.path.join(ROOT, "specs", "tiny.json")) as f:
        spec = json.load(f)
    if recipe:
        use_recipe(spec, recipe)
    spec["name"] = "tiny-long"
    spec["max_position_embeddings"] = CONTEXT
    spec["training"]["sequence_length"] = TRAIN_SEQ
    spec["inference"].update({"max_prompt_length": PROMPT, "max_sequence_length": CONTEXT})
    return spec


def run(cmd, log):
    """Runs `cmd`, its stderr into `log`; exits naming it if it fails."""
    print("$ " + " ".join(cmd), flush=True)
    with open(log, "a") as err:
        out = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=err, text=True)
    if out.returncode != 0:
        sys.exit("soft_long: %s failed (see %s)" % (cmd[1], log))
    return out.stdout


def measure_seed(args, bundle, seed):
    """The seed's contraction measurement, trained and measured if not kept."""
    folder = os.path.join(args.out, "seed-%d" % seed)
    kept = os.path.join(folder, "contraction.json")
    if os.path.exists(kept):
        with open(kept) as f:
            return json.load(f)
    fbt = os.path.join(args.build, "tools", "fbt", "fbt")
    log = os.path.join(args.out, "log")
    run([fbt, "train", bundle, "--steps", str(args.steps), "--seed", str(seed), "--out",
         folder, "--quiet"], log)
    text = run([fbt, "eval", bundle, "--ckpt", os.path.join(folder, "latest.safetensors"),
                "--split", "test", "--contraction", "--contraction-passes", "64", "--contraction-prompts", "64",
                "--generate", str(GENERATE), "--json", "--quiet"], log)
    result = json.loads(text)
    with open(kept, "w") as f:
        json.dump(result, f)
    return result


def training_budget(fbtc, spec_path, steps):
    """{tokens, flops}: what each seed's training took (the schedule's
    expected FLOPs, as the experiment runner counts them)."""
    describe = describe_spec(fbtc, spec_path)
    weights = schedule_weights(describe, steps)
    tokens = steps * describe["training"]["tokens_per_step"]
    per_token = sum(w * flops_per_token(describe, k) for k, w in weights.items())
    return {"tokens": tokens, "flops": tokens * per_token}


def table(raw):
    """contraction.md's text."""
    head = ["# Contraction over a long horizon", ""]
    if raw.get("training"):
        head += ["Each seed trained %d steps: %.3g tokens, %.3g training FLOPs; measured on "
                 "the embedded corpus's test part." % (raw["steps"], raw["training"]["tokens"],
                                                       raw["training"]["flops"]), ""]
    return "\n".join(head + er.contraction_table(raw)) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", help="the run folder")
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=600)
    ap.add_argument("--recipe", choices=["fbt", "paper"], help="the FBT's recipe preset")
    ap.add_argument("--table", metavar="DIR", help="rebuild DIR/contraction.md")
    ap.add_argument("--check", action="store_true", help="with --table: write nothing")
    args = ap.parse_args()
    if args.table:
        with open(os.path.join(args.table, "contraction.json")) as f:
            text = table(json.load(f))
        path = os.path.join(args.table, "contraction.md")
        if args.check:
            same = os.path.exists(path) and open(path).read() == text
            print("contraction.md %s" % ("is what its results build" if same else
                                         "differs from what its results build"))
            return 0 if same else 1
        with open(path, "w") as f:
            f.write(text)
        return 0
    if not args.out:
        ap.error("give --out DIR (or --table DIR)")
    os.makedirs(args.out, exist_ok=True)
    spec_path, bundle = os.path.join(args.out, "spec.json"), os.path.join(args.out, "tiny-long.fbtb")
    with open(spec_path, "w") as f:
        json.dump(long_spec(args.recipe), f, indent=1)
    fbtc = os.path.join(args.build, "tools", "fbtc", "fbtc")
    if not os.path.exists(bundle):
        run([fbtc, spec_path, "--target=cpu", "-o", bundle], os.path.join(args.out, "log"))
    seeds = [1234 + i for i in range(args.seeds)]
    raw = {"command": ["scripts/soft_long.py"] + sys.argv[1:], "spec": long_spec(args.recipe),
           "steps": args.steps, "training": training_budget(fbtc, spec_path, args.steps),
           "runs": {}}
    for i, seed in enumerate(seeds):
        raw["runs"][str(seed)] = {"fbt": {"contraction": measure_seed(args, bundle, seed)}}
        print("soft_long: %d of %d seeds done" % (i + 1, len(seeds)), flush=True)
    with open(os.path.join(args.out, "contraction.json"), "w") as f:
        json.dump(raw, f, indent=1)
    with open(os.path.join(args.out, "contraction.md"), "w") as f:
        f.write(table(raw))
    print("soft_long: " + os.path.join(args.out, "contraction.md"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
