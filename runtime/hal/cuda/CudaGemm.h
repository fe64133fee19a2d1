//===- CudaGemm.h - the plans' GEMMs on cuBLASLt ------------------*- C++ -*-===//
//
// A plan's GEMM is row-major, as the CPU executor's cblas_sgemm call:
//   C[m, n] = op(A) op(B),  A [m, k] ([k, m] if transposeLhs),
//                           B [k, n] ([n, k] if transposeRhs), fp32.
// cuBLASLt is column-major, and a row-major matrix is its column-major
// transpose, so we compute C^T = op(B)^T op(A)^T: cuBLASLt's "A" is our B,
// its "B" our A, its result an n x m column-major matrix, which is C.
//
// Operands are fp32 or, under bf16 storage, bf16 (the result bf16 or fp32,
// per the plan). bf16 operands run on tensor cores with fp32 accumulation.
// fp32 operands use bf16 tensor cores with fp32 accumulation by default;
// FBT_GEMM_COMPUTE=fp32 computes them in exact fp32 (for numerics checks),
// =tf32 in TF32.
//
// The algorithm comes from cuBLASLt's heuristic, once per shape and operand
// alignment, with the descriptors cached beside it: a decode step repeats
// the same few shapes thousands of times.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_HAL_CUDA_CUDAGEMM_H
#define FBT_RUNTIME_HAL_CUDA_CUDAGEMM_H

#include "runtime/format/Bundle.h"
#include "runtime/hal/cuda/CudaApi.h"

#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace fbt::cuda {

/// How a plan's row-major GEMM is posed to cuBLASLt, which is column-major:
/// D (n x m, leading dimension n) = op(A) op(B), where cuBLASLt's A is our
/// B and its B our A. Each operand is aRows x aCols (bRows x bCols) column-
/// major with its row count as leading dimension; transA/transB say whether
/// cuBLASLt transposes it. Pure arithmetic, so tests check it on any machine.
struct LtLayout {
  uint64_t aRows = 0, aCols = 0, bRows = 0, bCols = 0;
  bool transA = false, transB = false;
};
LtLayout ltLayout(const PlanOp &op);

class CudaGemm {
public:
  /// `workspace` (device memory of `workspaceBytes`) is shared by all GEMMs
  /// on `stream`, which runs them one at a time.
  CudaGemm(CUstream stream, void *workspace, size_t workspaceBytes);
  ~CudaGemm();
  CudaGemm(const CudaGemm &) = delete;
  CudaGemm &operator=(const CudaGemm &) = delete;

  /// Queues C = op(A) op(B) for `op` (m, n, k, transposes) on the stream,
  /// with candidate `algorithm` of the heuristic's list (-1: the selected
  /// one, the heuristic's first unless select() says otherwise).
  void run(const PlanOp &op, const void *a, const void *b, void *c, int algorithm = -1);
  /// How many candidates the heuristic offers for the call (at most 8).
  int algorithms(const PlanOp &op, const void *a, const void *b, const void *c);
  /// gemmShapeKey() -> candidate index, from the tune cache; an index past
  /// a shape's list falls back to the first.
  void select(std::map<std::string, int> choice) { choice_ = std::move(choice); }

  /// "bf16", "tf32" or "fp32": what FBT_GEMM_COMPUTE chose.
  const std::string &computeName() const { return computeName_; }

private:
  struct Shape {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
    std::vector<cublasLtMatmulAlgo_t> algos; ///< the heuristic's, in its order
    int selected = 0;
  };
  // m, n, k, transposeLhs, transposeRhs, the alignment of A, B, C, and the
  // operand and result types.
  using Key = std::tuple<int64_t, int64_t, int64_t, bool, bool, int, int, int,
                         std::string>;
  const Shape &shape(const PlanOp &op, int alignA, int alignB, int alignC);

  CUstream stream_;
  void *workspace_;
  size_t workspaceBytes_;
  cublasLtHandle_t handle_ = nullptr;
  cublasComputeType_t compute_ = CUBLAS_COMPUTE_32F_FAST_16BF;
  std::string computeName_ = "bf16";
  std::map<Key, Shape> shapes_;
  std::map<std::string, int> choice_;
};

} // namespace fbt::cuda

#endif // FBT_RUNTIME_HAL_CUDA_CUDAGEMM_H
