#!/usr/bin/env python3
"""The feedback recipe, one change at a time: trains the tiny spec in several
recipe variants on the embedded corpus and measures each with `fbt eval` in
inference mode (per pass, per regime). About 7 minutes on 2 cores (--variants
picks some).

    recipe_ablation.py [--steps 1500] [--build build] [--out runs/recipe-ablation]
                       [--variants a,b,...] [--json]

Variants (each the one before with one more change, then two of the default):
  bare        DESIGN.md's form: the pre-norm state, (W_U s) * sigmoid(W_G e), N(0, 0.02)
              init, K=2 with 3% at K=3, prefix mix-in on, every pass trained
  normalized  the normalized GLU of the paper's public implementation: scale-free norms
              of the plain input, the gate input and the fused input, the post-norm
              state, uniform init of std 1/sqrt(D); mix-in off
  deep        K drawn uniformly from 2..8, gradients through the last two passes
  residual    the plain input added before the fused input's norm
  default     plain inputs and the fused input unnormalized, N(0, 0.02) init:
              u = e + (W_U s) * sigmoid(W_G norm(e)) (the default recipe)
  mixin       the default recipe with prefix mix-in back on
  plain       no feedback path (fusion none): the plain transformer, for scale
"""

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

BARE = {"state": "pre_norm", "input_norm": False, "gate_norm": False, "state_norm": False,
        "output_norm": False, "token_residual": False, "init": "normal",
        "prefix_mixin": True}
FIXED_K = {"passes": 2, "deep_pass_fraction": 0.03, "deep_passes": 3, "grad_passes": 0,
           "single_pass_fraction": 0.5}
NORMALIZED = {"state": "post_norm", "input_norm": True, "gate_norm": True,
              "output_norm": True, "init": "uniform", "prefix_mixin": False}

VARIANTS = [
    ("bare", dict(BARE), dict(FIXED_K)),
    ("normalized", dict(BARE, **NORMALIZED), dict(FIXED_K, single_pass_fraction=0.25)),
    ("deep", dict(BARE, **NORMALIZED), {}),
    ("residual", dict(NORMALIZED, token_residual=True), {}),
    ("default", {}, {}),
    ("mixin", {"prefix_mixin": True}, {}),
    ("plain", {"fusion": "none"}, {}),
]


def make_spec(base, name, feedback, training):
    spec = json.loads(json.dumps(base))
    spec["name"] = "tiny-" + name
    spec["feedback"].update(feedback)
    t = spec["training"]
    if "passes" in training:
        t.pop("pass_distribution", None)
    t.update(training)
    return spec


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=1500)
    ap.add_argument("--build", default=os.environ.get("FBT_BUILD_DIR", os.path.join(ROOT, "build")))
    ap.add_argument("--out", default=os.path.join("runs", "recipe-ablation"))
    ap.add_argument("--variants", help="comma-separated subset (default: all)")
    ap.add_argument("--json", action="store_true", help="one JSON object on stdout")
    args = ap.parse_args()
    fbtc = os.path.join(args.build, "tools", "fbtc", "fbtc")
    fbt = os.path.join(args.build, "tools", "fbt", "fbt")
    with open(os.path.join(ROOT, "specs", "tiny.json")) as f:
        base = json.load(f)
    chosen = args.variants.split(",") if args.variants else [v[0] for v in VARIANTS]
    unknown = set(chosen) - {v[0] for v in VARIANTS}
    if unknown:
        sys.exit("recipe_ablation: unknown variant(s) %s" % ", ".join(sorted(unknown)))
    os.makedirs(args.out, exist_ok=True)
    results = {}
    for name, fb, tr in VARIANTS:
        if name not in chosen:
            continue
        spec_path = os.path.join(args.out, name + ".json")
        with open(spec_path, "w") as f:
            json.dump(make_spec(base, name, fb, tr), f, indent=2)
        bundle = os.path.join(args.out, name + ".fbtb")
        run = os.path.join(args.out, name)
        subprocess.run([fbtc, spec_path, "--target=cpu", "-o", bundle], check=True)
        print("training %s (%d steps)" % (name, args.steps), file=sys.stderr, flush=True)
        subprocess.run([fbt, "train", bundle, "--steps", str(args.steps), "--out", run,
                        "--quiet"], check=True, stdout=subprocess.DEVNULL)
        out = subprocess.run([fbt, "eval", bundle, "--ckpt",
                              os.path.join(run, "latest.safetensors"), "--json",
                              "--split", "validation"],  # an ablation chooses: validation
                             check=True, stdout=subprocess.PIPE, text=True).stdout
        results[name] = json.loads(out)
    if args.json:
        print(json.dumps(results))
        return
    print("| variant | " + " | ".join("pass %d" % k for k in range(1, 9)) +
          " | standard | soft | fused:2 | fused:3 | soft/std | worst pass/pass 1 |")
    print("|---" * 15 + "|")
    for name, r in results.items():
        p, g = r["passes"], r["regimes"]
        if "soft" not in g:  # no feedback path
            print("| %s | %.3f |%s %.3f | - | - | - | - | - |" % (
                name, p[0], " - |" * 7, g["standard"]["loss"]))
            continue
        print("| %s | %s | %s | %.3f | %.3f |" % (
            name, " | ".join("%.3f" % v for v in p),
            " | ".join("%.3f" % g[x]["loss"] for x in ("standard", "soft", "fused:2", "fused:3")),
            g["soft"]["loss"] / g["standard"]["loss"], max(p[1:]) / p[0]))


if __name__ == "__main__":
    main()
