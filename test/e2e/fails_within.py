"""fails_within.py SECONDS CMD...: CMD must fail (exit non-zero) within SECONDS.

Runs CMD with its output passed through, then prints how it ended. Exits 0
when CMD exited non-zero in time, 1 when it succeeded, and 1 when it was
still running after SECONDS (it is killed then): a fault must end a run
with an error, never a hang.
"""
import subprocess
import sys
import time


def main():
    limit, cmd = float(sys.argv[1]), sys.argv[2:]
    start = time.monotonic()
    try:
        done = subprocess.run(cmd, stdout=sys.stdout, stderr=sys.stdout, timeout=limit)
    except subprocess.TimeoutExpired:
        print(f"still running after {limit:g} s: a hang")
        return 1
    took = time.monotonic() - start
    print(f"exit status {done.returncode} within {limit:g} s")
    if done.returncode == 0:
        print(f"but it should have failed (after {took:.1f} s)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
