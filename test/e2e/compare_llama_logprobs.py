"""The log-probabilities llama.cpp gives an exported GGUF against fbt's own.

llama_greedy.mjs --logprobs wrote, for the first K greedy steps, the
log-softmax of llama.cpp's logits and the ids it fed (the prompt, then the
tokens it chose). This feeds fbt the same ids through `fbt score` (the
standard regime: the prompt prefilled, the rest one token at a time, as
generate runs) and compares the log-softmax of each step's logits, which
the greedy text alone would check only through its argmax. The two differ
by float rounding (llama.cpp's kernels, RoPE angles computed by repeated
products, depth scaling folded into the weights), so the check is a
tolerance, not equality.

    compare_llama_logprobs.py --fbt FBT --bundle M.fbtb --ckpt C.safetensors
        --logprobs LP.json --workdir DIR [--atol 1e-3]
"""

import argparse
import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
import safetensors_io as st  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fbt", required=True)
    ap.add_argument("--bundle", required=True)
    ap.add_argument("--ckpt", required=True)
    ap.add_argument("--logprobs", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--atol", type=float, default=1e-3)
    args = ap.parse_args()

    with open(args.logprobs) as f:
        peer = json.load(f)
    theirs = np.array(peer["logprobs"], dtype=np.float64)
    steps = theirs.shape[0]
    prompt = peer["prompt_ids"]
    ids = prompt + peer["generated"][: steps - 1]
    os.makedirs(args.workdir, exist_ok=True)
    tokens = os.path.join(args.workdir, "tokens.safetensors")
    logits_path = os.path.join(args.workdir, "logits.safetensors")
    st.save_file({"input_ids": np.array([ids], dtype=np.int32),
                  "prompt_lengths": np.array([len(prompt)], dtype=np.int32)}, tokens)
    subprocess.run([args.fbt, "score", args.bundle, "--ckpt", args.ckpt, "--tokens", tokens,
                    "--mode", "standard", "--out", logits_path], check=True)
    logits = st.load_file(logits_path)["logits"][0].astype(np.float64)

    worst = 0.0
    for s in range(steps):
        row = logits[len(prompt) - 1 + s]
        ours = row - row.max()
        ours -= np.log(np.exp(ours).sum())
        # Tokens llama.cpp gives probability 0 in f32 (log -inf) are compared
        # as far below every likely one: only the likely part matters.
        mask = np.isfinite(theirs[s]) & (ours > -30)
        diff = float(np.abs(ours[mask] - theirs[s][mask]).max())
        agree = int(np.argmax(ours)) == int(np.argmax(theirs[s]))
        print("step %d: max |log p fbt - log p llama.cpp| %.2e over %d tokens, argmax %s"
              % (s, diff, int(mask.sum()), "agrees" if agree else "DIFFERS"))
        worst = max(worst, diff)
        if not agree:
            print("FAIL: argmax differs at step %d" % s)
            return 1
    if worst > args.atol:
        print("FAIL: max difference %.2e > %.1e" % (worst, args.atol))
        return 1
    print("PASS: %d steps within %.1e" % (steps, args.atol))
    return 0


if __name__ == "__main__":
    sys.exit(main())
