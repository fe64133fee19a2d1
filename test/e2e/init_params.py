"""Writes the reference's initial parameters of a spec as a float32 checkpoint,
for tests that need weights without training.

usage: init_params.py SPEC.json OUT.safetensors [--seed 7] [--replace FIELD=INT ...]

--replace changes fields of the reference's config (D, F, H, ...; see
Config in test/reference/fbt_reference.py) after loading the spec: the
parameters of another model's shapes, for a checkpoint that must not fit.
Prints the tensor count and the config's sizes.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
import fbt_reference as R  # noqa: E402
import safetensors_io as st  # noqa: E402


def field(text):
    name, eq, value = text.partition("=")
    if not eq:
        raise argparse.ArgumentTypeError(f"{text!r}: expected FIELD=INT")
    return name, int(value)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("spec")
    p.add_argument("out")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--replace", type=field, nargs="+", default=[])
    a = p.parse_args()
    cfg = R.load_config(a.spec)
    if a.replace:
        cfg = cfg.replace(**dict(a.replace))
    params = R.init_params(cfg, a.seed, dtype=torch.float32)
    st.save_file(params, a.out)
    print(f"{len(params)} tensors: V={cfg.V} D={cfg.D} L={cfg.L} H={cfg.H} F={cfg.F}")


if __name__ == "__main__":
    main()
