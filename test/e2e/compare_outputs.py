"""Compares two `fbt step` outputs tensor by tensor.

usage: compare_outputs.py A.safetensors B.safetensors [--atol X] [--rtol Y]

Every tensor of A must be in B with the same shape and
max |a - b| <= atol + rtol * max |a|. Prints the worst tensor and exits 1 on
any difference beyond that, naming the tensor.
"""

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
import safetensors_io as st  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--atol", type=float, default=1e-6)
    p.add_argument("--rtol", type=float, default=1e-5)
    args = p.parse_args()
    a, b = st.load_file(args.a), st.load_file(args.b)
    worst, worst_name, failures = 0.0, "", []
    for name, x in a.items():
        if name not in b:
            failures.append("%s: missing from %s" % (name, args.b))
            continue
        x, y = np.asarray(x, dtype=np.float64), np.asarray(b[name], dtype=np.float64)
        if x.shape != y.shape:
            failures.append("%s: shape %s vs %s" % (name, x.shape, y.shape))
            continue
        err = float(np.abs(x - y).max()) if x.size else 0.0
        tol = args.atol + args.rtol * float(np.abs(x).max() if x.size else 0.0)
        if err > worst:
            worst, worst_name = err, name
        if not err <= tol:
            failures.append("%s: max abs difference %.3e exceeds %.3e" % (name, err, tol))
    print("compared %d tensors; worst difference %.3e (%s)" % (len(a), worst, worst_name or "-"))
    for f in failures:
        print("DIFFERENT: " + f)
    print("SAME" if not failures else "FAIL")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
