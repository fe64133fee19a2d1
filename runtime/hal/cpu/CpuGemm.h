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

#ifndef FBT_RUNTIME_HAL_CPU_CPUGEMM_H
#define FBT_RUNTIME_HAL_CPU_CPUGEMM_H

#include "runtime/hal/cpu/CpuThreads.h"

#include <cstdint>

namespace fbt {

/// How a GEMM is split across the threads: `fbt tune`'s GEMM algorithms on
/// the CPU (the tune cache keys them by shape, as cuBLASLt's on a GPU).
enum class GemmSplit {
  Auto,        ///< panels of the output's longer side, one per thread
  Other,       ///< panels of its shorter side, one per thread
  AutoFine,    ///< the longer side, two panels per thread (OpenMP balances them)
  OtherFine,   ///< the shorter side, two panels per thread
  Serial,      ///< one BLAS call on the calling thread
};
constexpr int kGemmSplits = 5;

/// Whether a GEMM of this shape is split at all (else every GemmSplit runs
/// it as Serial does): only those worth tuning.
bool gemmIsSplit(int64_t m, int64_t n, int64_t k);

/// C[m x n] = op(A) op(B), row-major f32, op(X) = X^T where `ta`/`tb`;
/// A is m x k (k x m stored when transposed), B is k x n (n x k stored).
/// Every split computes each element of C in one BLAS call over all of k.
void parallelSgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                   const float *a, const float *b, float *c,
                   GemmSplit split = GemmSplit::Auto);

} // namespace fbt

#endif // FBT_RUNTIME_HAL_CPU_CPUGEMM_H
