"""Reads the server's /metrics (Prometheus text) for the decode batch: its
row count, and whether rows were shared, i.e. more row-steps were decoded
than decode steps run (on average more than one row busy per step).

usage: batch_metrics.py METRICS.txt

Prints `rows N shared` or `rows N alone` (exit status 1).
"""
import sys


def main():
    # Unlabelled samples only: `name value` lines (comments and labelled
    # series, whose names carry {...}, are skipped).
    m = dict(line.split() for line in open(sys.argv[1]) if line[0] != "#" and "{" not in line)
    shared = int(m["fbt_decode_row_steps_total"]) > int(m["fbt_decode_steps_total"])
    print("rows", m["fbt_batch_rows"], "shared" if shared else "alone")
    if not shared:
        sys.exit(1)


if __name__ == "__main__":
    main()
