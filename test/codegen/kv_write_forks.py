"""Prints, for the KV-write kernels of a CPU bundle's LLVM IR (fbtc
--dump-llvm-ir), how many parallel loops (OpenMP outlined functions) each
kind has: "<n> args: <m> parallel loops", one line per kind, sorted. The
decode step's kernel takes positions (4 args), a prefill's does not (3)."""

import re
import sys

ir = open(sys.argv[1]).read()
kinds = set()
for kernel, line in re.findall(r"define void @(k[0-9]+_kv_write)(\(.*)", ir):
    loops = len(re.findall(re.escape("@" + kernel + "..omp_par") + r"[.0-9]*\(", ir))
    kinds.add(f"{len(re.findall(r'ptr [^,]*%[0-9]+', line))} args: {loops} parallel loops")
print("\n".join(sorted(kinds)))
