"""Writes a copy of a checkpoint with its metadata edited, the tensors as
they were: for the loader's tests of what a checkpoint says about its run.

usage: set_metadata.py IN.safetensors OUT.safetensors [--drop KEY ...] [KEY=VALUE ...]

--drop removes KEY (it must be there); KEY=VALUE sets it (a string, as all
safetensors metadata is). Prints the keys changed.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
import safetensors_io as st  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("source")
    p.add_argument("target")
    p.add_argument("--drop", action="append", default=[])
    p.add_argument("set", nargs="*", metavar="KEY=VALUE")
    a = p.parse_args()
    m = st.load_metadata(a.source)
    for key in a.drop:
        if key not in m:
            sys.exit(f"FAIL: {a.source} has no metadata key {key!r}")
        del m[key]
    for change in a.set:
        key, eq, value = change.partition("=")
        if not eq:
            sys.exit(f"FAIL: {change!r}: expected KEY=VALUE")
        m[key] = value
    st.save_file(st.load_file(a.source), a.target, m)
    print("dropped", a.drop, "set", a.set)


if __name__ == "__main__":
    main()
