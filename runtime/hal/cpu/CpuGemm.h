//===- CpuGemm.h - f32 GEMMs on the runtime's threads ---------*- C++ -*-===//
//
// One team runs a CPU step (CpuTeam.h): the threads that also run the
// generated kernels' parallel loops. BLAS is kept single-threaded and each
// GEMM is split into column or row panels, one per thread. Two pools
// (OpenBLAS's own threads beside the team) would spin against each other
// between every GEMM and kernel on a machine with few cores; one team hands
// work from GEMM to kernel without that.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_HAL_CPU_CPUGEMM_H
#define FBT_RUNTIME_HAL_CPU_CPUGEMM_H

#include "runtime/hal/cpu/CpuThreads.h"

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fbt {

/// How a GEMM is split across the threads: `fbt tune`'s GEMM algorithms on
/// the CPU (the tune cache keys them by shape, as cuBLASLt's on a GPU).
enum class GemmSplit {
  Auto,        ///< panels of the output's longer side, one per thread
  Other,       ///< panels of its shorter side, one per thread
  AutoFine,    ///< the longer side, two panels per thread (round robin)
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

/// One GEMM of a batch that parallelSgemms runs together.
struct GemmCall {
  bool ta = false, tb = false;
  int64_t m = 0, n = 0, k = 0;
  const float *a = nullptr, *b = nullptr;
  float *c = nullptr;
};

/// Independent GEMMs (none reads what another writes), each split as
/// parallelSgemm's Auto splits it, in one parallel region: their panels are
/// shared out over the threads together. A decode step's projections are
/// GEMVs of a few hundred KiB; one fork and join per GEMM costs as much as
/// a tenth of streaming its weights, and each join waits for the slower
/// thread where a batch of panels evens out.
void parallelSgemms(const std::vector<GemmCall> &calls);

/// How many of `calls`, from the first, may run as one parallelSgemms
/// batch: up to the first that reads what an earlier one writes, or writes
/// what an earlier one reads or writes.
size_t independentGemms(const std::vector<GemmCall> &calls);

} // namespace fbt

#endif // FBT_RUNTIME_HAL_CPU_CPUGEMM_H
