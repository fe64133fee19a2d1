"""Prints what an experiment's raw results (results.json) hold, for
FileCheck: the seeds run, the parts measured, the parts the FBT run of SEED
has losses on, the part its test losses say they are of, and whether its
metrics summary has the evaluations.

usage: experiment_results.py RESULTS.json SEED

Prints one line: ['SEED', ...] ['PART', ...] ['PART', ...] PART True|False.
"""
import json
import sys


def main():
    r = json.load(open(sys.argv[1]))
    s = r["runs"][sys.argv[2]]
    print(sorted(r["runs"]), r["splits"], sorted(s["fbt"]["losses"]),
          s["fbt"]["losses"]["test"]["split"], "evals" in s["fbt"]["metrics"])


if __name__ == "__main__":
    main()
