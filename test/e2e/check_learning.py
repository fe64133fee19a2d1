"""Checks a training run's metrics.jsonl: the model learns, and optionally the
run followed its schedule.

usage: check_learning.py METRICS.jsonl [--drop 1.5]
           [--steps N] [--single-pass-steps M] [--max-passes K]
           [--warmup W --lr LR] [--final-lr LOW HIGH] [--eval-every E]
           [--initial-val V]

Learning: the pass-1 training loss (the plain next-token loss at every K, so
comparable across the switch to K > 1), as the mean of the first and of the
last 20 steps, and the pass-1 validation loss of the first and last
evaluations, each fall by more than --drop.

Each schedule option adds its check:
  --steps N              step records 1..N, each with exactly the step fields
                         and one pass loss per pass
  --single-pass-steps M  K = 1 for the first M steps, then K from 2..K_max
  --max-passes K         with the above: every K of 2..K_max drawn
  --warmup W --lr LR     step W's learning rate is LR (the peak), step 1's lower
  --final-lr LOW HIGH    the last step's rate is in [LOW, HIGH)
  --eval-every E         evaluations at steps 0, E, 2E, .. N
  --initial-val V        the first pass-1 validation loss is V, within 0.1
Prints the losses, then LEARNS; exits 1 naming the first check that failed.
"""
import argparse
import json
import statistics
import sys

STEP_FIELDS = {"step", "passes", "loss", "pass_losses", "lr", "grad_norm", "tokens_per_s",
               "elapsed_s"}


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def check_schedule(a, s, v):
    k = [x["passes"] for x in s]
    if a.steps is not None:
        if [x["step"] for x in s] != list(range(1, a.steps + 1)):
            fail(f"the steps are not 1..{a.steps}")
        for x in s:
            if set(x) != STEP_FIELDS or len(x["pass_losses"]) != x["passes"]:
                fail(f"step {x['step']}: fields {sorted(x)}")
    if a.single_pass_steps is not None:
        m, later = a.single_pass_steps, set(k[a.single_pass_steps:])
        if set(k[:m]) != {1} or not later <= set(range(2, a.max_passes + 1)) \
                or len(later) != a.max_passes - 1:
            fail(f"passes per step {k}")
    if a.warmup is not None:
        peak = s[a.warmup - 1]["lr"]
        if not (abs(peak - a.lr) < 1e-9 and s[0]["lr"] < peak):
            fail(f"learning rate {s[0]['lr']} at step 1, {peak} at step {a.warmup}")
    if a.final_lr is not None and not a.final_lr[0] <= s[-1]["lr"] < a.final_lr[1]:
        fail(f"last learning rate {s[-1]['lr']}")
    if a.eval_every is not None and \
            [x["step"] for x in v] != list(range(0, a.steps + 1, a.eval_every)):
        fail(f"evaluations at steps {[x['step'] for x in v]}")
    return k


def main():
    p = argparse.ArgumentParser()
    p.add_argument("metrics")
    p.add_argument("--drop", type=float, default=1.5)
    p.add_argument("--steps", type=int)
    p.add_argument("--single-pass-steps", type=int)
    p.add_argument("--max-passes", type=int, default=8)
    p.add_argument("--warmup", type=int)
    p.add_argument("--lr", type=float)
    p.add_argument("--final-lr", type=float, nargs=2)
    p.add_argument("--eval-every", type=int)
    p.add_argument("--initial-val", type=float)
    a = p.parse_args()
    if a.eval_every is not None and a.steps is None:
        p.error("--eval-every needs --steps")
    if (a.warmup is None) != (a.lr is None):
        p.error("--warmup and --lr go together")

    records = [json.loads(line) for line in open(a.metrics)]
    s = [x for x in records if "loss" in x]
    v = [x for x in records if "val_loss" in x]
    k = check_schedule(a, s, v)
    first = statistics.mean(x["pass_losses"][0] for x in s[:20])
    last = statistics.mean(x["pass_losses"][0] for x in s[-20:])
    v0, v1 = v[0]["val_pass_losses"][0], v[-1]["val_pass_losses"][0]
    line = f"train {first:.2f} -> {last:.2f}, val {v0:.2f} -> {v1:.2f}"
    if a.single_pass_steps is not None:
        line += f", K={a.max_passes} steps {k.count(a.max_passes)}"
    print(line)
    if a.initial_val is not None and not abs(v0 - a.initial_val) < 0.1:
        fail(f"initial validation loss {v0}, expected {a.initial_val}")
    if not (last < first - a.drop and v1 < v0 - a.drop):
        fail(f"not learning: the losses fall by less than {a.drop}")
    print("LEARNS")


if __name__ == "__main__":
    main()
