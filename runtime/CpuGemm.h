//===- CpuGemm.h - f32 GEMMs on the runtime's threads ---------*- C++ -*-===//
//
// One pool runs a CPU step: the OpenMP threads that also run the generated
// kernels' parallel loops (fbtc lowers scf.parallel to OpenMP). BLAS is kept
// single-threaded and each GEMM is split into column or row panels, one per
// thread. Two pools (OpenBLAS's own threads beside OpenMP's) would spin
// against each other between every GEMM and kernel on a machine with few
// cores; one pool hands work from GEMM to kernel without that.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_CPUGEMM_H
#define FBT_RUNTIME_CPUGEMM_H

#include "runtime/CpuThreads.h"

#include <cstdint>

namespace fbt {

/// C[m x n] = op(A) op(B), row-major f32, op(X) = X^T where `ta`/`tb`;
/// A is m x k (k x m stored when transposed), B is k x n (n x k stored).
void parallelSgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                   const float *a, const float *b, float *c);

} // namespace fbt

#endif // FBT_RUNTIME_CPUGEMM_H
