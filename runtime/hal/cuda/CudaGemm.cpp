//===- CudaGemm.cpp - the plans' GEMMs on cuBLASLt ------------------------===//

#include "runtime/hal/cuda/CudaGemm.h"

#include "runtime/base/Error.h"

#include <cstdint>
#include <cstdlib>

namespace fbt::cuda {

namespace {
/// The largest power of two (up to 256) dividing the address: cuBLASLt
/// assumes 256-byte aligned operands unless told otherwise, and plan
/// offsets inside an arena need not be.
int alignment(const void *p) {
  uintptr_t v = reinterpret_cast<uintptr_t>(p);
  int a = 1;
  while (a < 256 && v % (a * 2) == 0)
    a *= 2;
  return a;
}

std::string gemmName(const PlanOp &op) {
  return "GEMM m=" + std::to_string(op.m) + " n=" + std::to_string(op.n) +
         " k=" + std::to_string(op.k) + (op.transposeLhs ? " A^T" : "") +
         (op.transposeRhs ? " B^T" : "") + " " + planTypeName(op.lhsType) + "->" +
         planTypeName(op.resultType);
}

cudaDataType_t dataType(DType t) {
  return t == DType::BF16 ? CUDA_R_16BF : CUDA_R_32F;
}
} // namespace

LtLayout ltLayout(const PlanOp &op) {
  LtLayout l;
  // cuBLASLt's A is our B: stored [k, n] row-major = n x k column-major
  // (op N), or [n, k] row-major = k x n column-major (op T).
  l.aRows = op.transposeRhs ? op.k : op.n;
  l.aCols = op.transposeRhs ? op.n : op.k;
  l.transA = op.transposeRhs;
  // cuBLASLt's B is our A: [m, k] row-major = k x m column-major (op N), or
  // [k, m] row-major = m x k column-major (op T).
  l.bRows = op.transposeLhs ? op.m : op.k;
  l.bCols = op.transposeLhs ? op.k : op.m;
  l.transB = op.transposeLhs;
  return l;
}

CudaGemm::CudaGemm(CUstream stream, void *workspace, size_t workspaceBytes)
    : stream_(stream), workspace_(workspace), workspaceBytes_(workspaceBytes) {
  if (const char *c = std::getenv("FBT_GEMM_COMPUTE")) {
    std::string v = c;
    if (v == "fp32")
      compute_ = CUBLAS_COMPUTE_32F;
    else if (v == "tf32")
      compute_ = CUBLAS_COMPUTE_32F_FAST_TF32;
    else if (v != "bf16")
      throw RuntimeError("FBT_GEMM_COMPUTE is '" + v +
                         "'; expected bf16 (the default), tf32 or fp32");
    computeName_ = v;
  }
  check(blasLt().cublasLtCreate(&handle_), "cublasLtCreate");
}

CudaGemm::~CudaGemm() {
  const BlasLt &b = blasLt();
  for (auto &[key, s] : shapes_) {
    b.cublasLtMatrixLayoutDestroy(s.a);
    b.cublasLtMatrixLayoutDestroy(s.b);
    b.cublasLtMatrixLayoutDestroy(s.c);
    b.cublasLtMatmulDescDestroy(s.desc);
  }
  if (handle_)
    b.cublasLtDestroy(handle_);
}

const CudaGemm::Shape &CudaGemm::shape(const PlanOp &op, int alignA, int alignB,
                                       int alignC) {
  Key key{op.m, op.n, op.k, op.transposeLhs, op.transposeRhs, alignA, alignB, alignC,
          std::string(planTypeName(op.lhsType)) + planTypeName(op.resultType)};
  auto found = shapes_.find(key);
  if (found != shapes_.end())
    return found->second;

  const BlasLt &lt = blasLt();
  Shape s;
  LtLayout l = ltLayout(op);
  uint64_t aRows = l.aRows, aCols = l.aCols, bRows = l.bRows, bCols = l.bCols;
  int32_t transA = l.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  int32_t transB = l.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  // bf16 operands (bf16 storage) multiply on tensor cores and accumulate in
  // fp32 (COMPUTE_32F); fp32 operands use the chosen compute type.
  bool bf16 = op.lhsType == DType::BF16;
  cublasComputeType_t compute = bf16 ? CUBLAS_COMPUTE_32F : compute_;
  check(lt.cublasLtMatmulDescCreate(&s.desc, compute, CUDA_R_32F),
        "cublasLtMatmulDescCreate");
  check(lt.cublasLtMatmulDescSetAttribute(s.desc, CUBLASLT_MATMUL_DESC_TRANSA,
                                          &transA, sizeof(transA)),
        "cublasLtMatmulDescSetAttribute(TRANSA)");
  check(lt.cublasLtMatmulDescSetAttribute(s.desc, CUBLASLT_MATMUL_DESC_TRANSB,
                                          &transB, sizeof(transB)),
        "cublasLtMatmulDescSetAttribute(TRANSB)");
  check(lt.cublasLtMatrixLayoutCreate(&s.a, dataType(op.rhsType), aRows, aCols,
                                      (int64_t)aRows),
        "cublasLtMatrixLayoutCreate(A)");
  check(lt.cublasLtMatrixLayoutCreate(&s.b, dataType(op.lhsType), bRows, bCols,
                                      (int64_t)bRows),
        "cublasLtMatrixLayoutCreate(B)");
  // The result: n x m column-major, leading dimension n = C [m, n] row-major.
  check(lt.cublasLtMatrixLayoutCreate(&s.c, dataType(op.resultType), op.n, op.m, op.n),
        "cublasLtMatrixLayoutCreate(C)");

  cublasLtMatmulPreference_t pref = nullptr;
  check(lt.cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  uint64_t workspace = workspaceBytes_;
  uint32_t aligns[4] = {(uint32_t)alignB, (uint32_t)alignA, (uint32_t)alignC,
                        (uint32_t)alignC}; // cuBLASLt's A, B, C, D
  cublasStatus_t st = lt.cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace, sizeof(workspace));
  cublasLtMatmulPreferenceAttributes_t alignKeys[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4 && st == CUBLAS_STATUS_SUCCESS; ++i)
    st = lt.cublasLtMatmulPreferenceSetAttribute(pref, alignKeys[i], &aligns[i],
                                                 sizeof(aligns[i]));
  cublasLtMatmulHeuristicResult_t results[8] = {};
  int count = 0;
  if (st == CUBLAS_STATUS_SUCCESS)
    st = lt.cublasLtMatmulAlgoGetHeuristic(handle_, s.desc, s.a, s.b, s.c, s.c, pref,
                                           8, results, &count);
  lt.cublasLtMatmulPreferenceDestroy(pref);
  for (int i = 0; st == CUBLAS_STATUS_SUCCESS && i < count; ++i)
    if (results[i].state == CUBLAS_STATUS_SUCCESS)
      s.algos.push_back(results[i].algo);
  if (st != CUBLAS_STATUS_SUCCESS || s.algos.empty()) {
    std::string why = st != CUBLAS_STATUS_SUCCESS
                          ? std::string(lt.cublasLtGetStatusName(st))
                          : "no algorithm fits";
    lt.cublasLtMatrixLayoutDestroy(s.a);
    lt.cublasLtMatrixLayoutDestroy(s.b);
    lt.cublasLtMatrixLayoutDestroy(s.c);
    lt.cublasLtMatmulDescDestroy(s.desc);
    throw RuntimeError("cuBLASLt has no algorithm for the " + gemmName(op) +
                       " (compute " + (bf16 ? "fp32" : computeName_) + "): " + why);
  }
  auto tuned = choice_.find(gemmShapeKey(op));
  if (tuned != choice_.end() && tuned->second >= 0 &&
      tuned->second < (int)s.algos.size())
    s.selected = tuned->second;
  return shapes_.emplace(key, s).first->second;
}

int CudaGemm::algorithms(const PlanOp &op, const void *a, const void *b, const void *c) {
  return (int)shape(op, alignment(a), alignment(b), alignment(c)).algos.size();
}

void CudaGemm::run(const PlanOp &op, const void *a, const void *b, void *c, int algorithm) {
  const Shape &s = shape(op, alignment(a), alignment(b), alignment(c));
  int pick = algorithm >= 0 && algorithm < (int)s.algos.size() ? algorithm : s.selected;
  const float one = 1.0f, zero = 0.0f;
  // cuBLASLt's A is our B and its B our A; beta = 0, so C only names D.
  cublasStatus_t st = blasLt().cublasLtMatmul(
      handle_, s.desc, &one, b, s.a, a, s.b, &zero, c, s.c, c, s.c, &s.algos[pick],
      workspace_, workspaceBytes_, reinterpret_cast<cudaStream_t>(stream_));
  if (st != CUBLAS_STATUS_SUCCESS)
    throw RuntimeError("cublasLtMatmul (" + gemmName(op) + "): " +
                       blasLt().cublasLtGetStatusName(st) + " (" +
                       blasLt().cublasLtGetStatusString(st) + ")");
}

} // namespace fbt::cuda
