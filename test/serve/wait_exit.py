"""Waits for a process to end: gone, or a zombie (ended, its parent has not
reaped it yet).

usage: wait_exit.py PIDFILE [--timeout SECONDS]

Polls every 0.05 s for up to SECONDS (default 10). Prints `gone`, or
`running` (exit status 1) when it is still there.
"""
import argparse
import time


def running(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split()[2] != "Z"
    except (FileNotFoundError, ProcessLookupError):  # gone while read
        return False


def main():
    p = argparse.ArgumentParser()
    p.add_argument("pidfile")
    p.add_argument("--timeout", type=float, default=10)
    a = p.parse_args()
    pid = int(open(a.pidfile).read())
    start = time.time()
    while running(pid) and time.time() - start < a.timeout:
        time.sleep(0.05)
    still = running(pid)
    print("running" if still else "gone")
    if still:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
