"""Prints, for the CPU builds of the products by narrow weights in a bundle,
how many OpenMP forks (outlined parallel regions) each build's function has
against its Knob::Parallel: "parallel=<p>: <n> forks", one line per kind,
sorted. Reads the kernels' IR (fbtc --emit=kernels, where each build's
`fbt.config` is) and their LLVM IR (fbtc --dump-llvm-ir).

usage: parallel_variants.py KERNELS.mlir KERNELS.ll"""

import re
import sys

mlir, ll = (open(p).read() for p in sys.argv[1:3])
kinds = set()
for name, config in re.findall(
        r"func\.func @(k[0-9]+_quantized_matmul[_a-z0-9]*)\(.*fbt\.config = \{([^}]*)\}", mlir):
    parallel = re.search(r"parallel = ([0-9]+)", config).group(1)
    forks = len(re.findall(re.escape("@" + name + "..omp_par") + r"[.0-9]*\(", ll))
    kinds.add(f"parallel={parallel}: {forks} forks")
print("\n".join(sorted(kinds)))
