#!/usr/bin/env python3
"""Checks that the PyTorch reference resolves a spec as the frontend does.

    check_defaults.py SPEC.json DESCRIBE.json

DESCRIBE.json is `fbtc SPEC.json --describe --json`, whose "spec" is the spec
with every default resolved by the frontend. The reference's Config of the
same spec (config_from_dict) must hold the same value in every field the
two share: the model, the feedback recipe and the training recipe, the pass
schedule's fields included. Prints one line per field that differs and
exits 1 if any does.
"""
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fbt_reference as R  # noqa: E402

# Config field -> its key in the resolved spec (section.key).
FIELDS = {
    "V": "vocab_size", "D": "hidden_size", "L": "num_hidden_layers",
    "H": "num_attention_heads", "F": "intermediate_size", "eps": "rms_norm_eps",
    "theta": "rope_theta", "bos_token_id": "bos_token_id",
    "max_position_embeddings": "max_position_embeddings", "name": "name",
}
FEEDBACK = ["fusion", "jitter", "depth_scaling", "detach_state", "aux_loss_weight",
            "prefix_mixin", "state", "input_norm", "gate_norm", "state_norm",
            "output_norm", "token_residual"]
TRAINING = ["single_pass_fraction", "passes", "deep_pass_fraction", "deep_passes",
            "grad_passes", "batch_size", "sequence_length", "steps", "learning_rate",
            "beta1", "beta2", "adam_epsilon", "weight_decay", "warmup_steps",
            "min_learning_rate", "grad_clip", "seed"]

FIXED_SCHEDULE = ["passes", "deep_pass_fraction", "deep_passes"]


def same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return math.isclose(float(a), float(b), rel_tol=1e-12, abs_tol=0)
    return a == b


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    with open(sys.argv[1]) as f:
        cfg = R.config_from_dict(json.load(f))
    with open(sys.argv[2]) as f:
        resolved = json.load(f)["spec"]
    want = {field: resolved[key] for field, key in FIELDS.items()}
    want.update({k: resolved["feedback"][k] for k in FEEDBACK})
    # The fixed K schedule's keys are resolved only without a pass
    # distribution (which the reference does not model: its runs name K).
    want.update({k: resolved["training"][k] for k in TRAINING
                 if k not in FIXED_SCHEDULE or "pass_distribution" not in resolved["training"]})
    want["rope_factor"] = (resolved.get("rope_scaling") or {}).get("factor", 1.0)
    want["rope_type"] = (resolved.get("rope_scaling") or {}).get("rope_type", "linear")
    bad = [f"{sys.argv[1]}: {field}: the reference has {getattr(cfg, field)!r}, "
           f"the frontend {value!r}"
           for field, value in want.items() if not same(getattr(cfg, field), value)]
    for line in bad:
        print(line)
    print(f"{len(want)} fields compared, {len(bad)} differ")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
