"""Checks that a run started with `fbt train --init` began from its source's
weights: the FBT's first validation (step 0, before any update) scores pass 1
exactly as the plain source scored its last validation, since pass 1 has no
fed-back state and every shared weight came from the source.

usage: check_init.py SOURCE/metrics.jsonl RUN/metrics.jsonl RUN/run.json
Prints both losses; exits 1 naming what differs.
"""
import json
import sys


def records(path):
    return [json.loads(line) for line in open(path)]


def main():
    source, run, settings = sys.argv[1:4]
    last = [r for r in records(source) if "val_loss" in r][-1]
    first = [r for r in records(run) if "val_loss" in r][0]
    init = json.load(open(settings))["init"]
    if first["step"] != 0:
        sys.exit("check_init: the run's first validation is at step %d, not 0" % first["step"])
    want, got = last["val_pass_losses"][0], first["val_pass_losses"][0]
    print("source val loss at step %d: %.6f; the run's pass 1 at step 0: %.6f"
          % (last["step"], want, got))
    if abs(want - got) > 1e-5 * max(1.0, abs(want)):
        sys.exit("check_init: the run did not start from the source's weights")
    if init is None or init["step"] != last["step"]:
        sys.exit("check_init: run.json's init is %r, not the source at step %d"
                 % (init, last["step"]))
    print("run.json: init from %s (model %s, step %d)"
          % (init["checkpoint"], init["model"], init["step"]))


if __name__ == "__main__":
    main()
