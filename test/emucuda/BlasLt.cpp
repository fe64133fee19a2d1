//===- BlasLt.cpp - the emulated cuBLASLt ---------------------------------===//
//
// The cuBLASLt entry points the runtime resolves (runtime/hal/cuda/CudaApi.h),
// computing with a plain reference GEMM on the emulated device's memory, in
// the stream's order (EmuDevice.h). Column-major layouts with any leading
// dimension, TRANSA/TRANSB, f32 and bf16 operands and results, fp32
// accumulation (the fast compute types, TF32 and BF16, round the inputs
// first, as tensor cores do). The
// heuristic offers three algorithms, the later ones asking for a workspace
// and 16-byte aligned operands: a preference or a workspace that rules an
// algorithm out makes it unavailable, as on a GPU. Anything else the
// runtime could set is refused as NOT_SUPPORTED, so the emulator never
// computes something other than what was asked.
//
//===----------------------------------------------------------------------===//

#include "EmuDevice.h"

#include "runtime/base/Bf16.h"

#include <cublasLt.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

using namespace fbt::emucuda;
using fbt::bf16ToFloat;
using fbt::floatToBf16;

struct cublasLtContext {};

namespace {
struct Desc {
  cublasComputeType_t compute;
  int32_t transA = CUBLAS_OP_N, transB = CUBLAS_OP_N;
};
struct Layout {
  cudaDataType_t type;
  uint64_t rows, cols;
  int64_t ld;
};
struct Preference {
  uint64_t maxWorkspace = 0;
  uint32_t alignment[4] = {256, 256, 256, 256}; ///< A, B, C, D
};

/// The algorithms the heuristic offers: workspace and operand alignment
/// they need.
struct Algorithm {
  uint64_t workspace;
  uint32_t alignment;
};
const Algorithm kAlgorithms[] = {{0, 4}, {1 << 20, 16}, {4 << 20, 16}};

std::mutex m;
std::map<const void *, Desc> descs;
std::map<const void *, Layout> layouts;
std::map<const void *, Preference> preferences;

template <typename T> T *find(std::map<const void *, T> &table, const void *key) {
  std::lock_guard<std::mutex> g(m);
  auto it = table.find(key);
  return it == table.end() ? nullptr : &it->second;
}

cublasStatus_t fail(const char *call, const std::string &why, cublasStatus_t s) {
  refuse(call, why, CUDA_SUCCESS);
  return s;
}

float tf32(float f) { // 10 mantissa bits, round to nearest even
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7f800000) != 0x7f800000)
    bits = (bits + 0xfff + ((bits >> 13) & 1)) & ~0x1fffu;
  std::memcpy(&f, &bits, 4);
  return f;
}

float load(const char *p, cudaDataType_t t, uint64_t i) {
  if (t == CUDA_R_16BF) {
    uint16_t v;
    std::memcpy(&v, p + 2 * i, 2);
    return bf16ToFloat(v);
  }
  float v;
  std::memcpy(&v, p + 4 * i, 4);
  return v;
}
void store(char *p, cudaDataType_t t, uint64_t i, float v) {
  if (t == CUDA_R_16BF) {
    uint16_t b = floatToBf16(v);
    std::memcpy(p + 2 * i, &b, 2);
  } else {
    std::memcpy(p + 4 * i, &v, 4);
  }
}
size_t elementBytes(cudaDataType_t t) { return t == CUDA_R_16BF ? 2 : 4; }
/// The bytes a rows x cols column-major matrix with leading dimension ld spans.
uint64_t spanBytes(const Layout &l) {
  return l.cols == 0 ? 0 : ((l.cols - 1) * (uint64_t)l.ld + l.rows) * elementBytes(l.type);
}
} // namespace

extern "C" {

size_t cublasLtGetVersion() {
  const char *v = std::getenv("FBT_EMU_CUBLASLT_VERSION");
  return v && *v ? std::strtoull(v, nullptr, 10) : 130100;
}

const char *cublasLtGetStatusName(cublasStatus_t s) {
  switch (s) {
  case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
  case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
  case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
  case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
  case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
  case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
  default: return "CUBLAS_STATUS_INTERNAL_ERROR";
  }
}

const char *cublasLtGetStatusString(cublasStatus_t s) {
  switch (s) {
  case CUBLAS_STATUS_SUCCESS: return "success";
  case CUBLAS_STATUS_INVALID_VALUE: return "an invalid value was used as an argument";
  case CUBLAS_STATUS_NOT_SUPPORTED: return "the functionality requested is not supported";
  case CUBLAS_STATUS_EXECUTION_FAILED: return "the GPU program failed to execute";
  default: return "an internal operation failed";
  }
}

cublasStatus_t cublasLtCreate(cublasLtHandle_t *handle) {
  *handle = new cublasLtContext;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t handle) {
  delete handle;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *desc,
                                        cublasComputeType_t compute, cudaDataType_t scale) {
  if (compute != CUBLAS_COMPUTE_32F && compute != CUBLAS_COMPUTE_32F_FAST_TF32 &&
      compute != CUBLAS_COMPUTE_32F_FAST_16BF)
    return fail("cublasLtMatmulDescCreate", "only fp32 accumulation is emulated",
                CUBLAS_STATUS_NOT_SUPPORTED);
  if (scale != CUDA_R_32F)
    return fail("cublasLtMatmulDescCreate", "only fp32 scales are emulated",
                CUBLAS_STATUS_NOT_SUPPORTED);
  *desc = new cublasLtMatmulDescOpaque_t;
  std::lock_guard<std::mutex> g(m);
  descs[*desc] = {compute};
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc) {
  std::lock_guard<std::mutex> g(m);
  descs.erase(desc);
  delete desc;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attr,
                                              const void *buf, size_t size) {
  const char *call = "cublasLtMatmulDescSetAttribute";
  Desc *d = find(descs, desc);
  if (!d)
    return fail(call, "not a live matmul descriptor", CUBLAS_STATUS_INVALID_VALUE);
  if ((attr == CUBLASLT_MATMUL_DESC_TRANSA || attr == CUBLASLT_MATMUL_DESC_TRANSB) &&
      size == sizeof(int32_t)) {
    int32_t op;
    std::memcpy(&op, buf, 4);
    if (op != CUBLAS_OP_N && op != CUBLAS_OP_T)
      return fail(call, "only N and T are emulated", CUBLAS_STATUS_NOT_SUPPORTED);
    (attr == CUBLASLT_MATMUL_DESC_TRANSA ? d->transA : d->transB) = op;
    return CUBLAS_STATUS_SUCCESS;
  }
  if (attr == CUBLASLT_MATMUL_DESC_EPILOGUE && size == sizeof(uint32_t)) {
    uint32_t e;
    std::memcpy(&e, buf, 4);
    if (e == CUBLASLT_EPILOGUE_DEFAULT)
      return CUBLAS_STATUS_SUCCESS;
  }
  return fail(call, "attribute " + std::to_string((int)attr) + " is not emulated",
              CUBLAS_STATUS_NOT_SUPPORTED);
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *layout, cudaDataType_t type,
                                          uint64_t rows, uint64_t cols, int64_t ld) {
  const char *call = "cublasLtMatrixLayoutCreate";
  if (type != CUDA_R_32F && type != CUDA_R_16BF)
    return fail(call, "only f32 and bf16 are emulated", CUBLAS_STATUS_NOT_SUPPORTED);
  if (ld < (int64_t)std::max<uint64_t>(rows, 1))
    return fail(call, "the leading dimension " + std::to_string(ld) + " is below the " +
                          std::to_string(rows) + " rows",
                CUBLAS_STATUS_INVALID_VALUE);
  *layout = new cublasLtMatrixLayoutOpaque_t;
  std::lock_guard<std::mutex> g(m);
  layouts[*layout] = {type, rows, cols, ld};
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout) {
  std::lock_guard<std::mutex> g(m);
  layouts.erase(layout);
  delete layout;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref) {
  *pref = new cublasLtMatmulPreferenceOpaque_t;
  std::lock_guard<std::mutex> g(m);
  preferences[*pref] = {};
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  std::lock_guard<std::mutex> g(m);
  preferences.erase(pref);
  delete pref;
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void *buf, size_t size) {
  const char *call = "cublasLtMatmulPreferenceSetAttribute";
  Preference *p = find(preferences, pref);
  if (!p)
    return fail(call, "not a live preference", CUBLAS_STATUS_INVALID_VALUE);
  if (attr == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES && size == sizeof(uint64_t)) {
    std::memcpy(&p->maxWorkspace, buf, 8);
    return CUBLAS_STATUS_SUCCESS;
  }
  const cublasLtMatmulPreferenceAttributes_t aligns[4] = {
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
      CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
  for (int i = 0; i < 4; ++i)
    if (attr == aligns[i] && size == sizeof(uint32_t)) {
      std::memcpy(&p->alignment[i], buf, 4);
      return CUBLAS_STATUS_SUCCESS;
    }
  return fail(call, "attribute " + std::to_string((int)attr) + " is not emulated",
              CUBLAS_STATUS_NOT_SUPPORTED);
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t handle, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
    cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t c, cublasLtMatrixLayout_t d,
    cublasLtMatmulPreference_t pref, int requested, cublasLtMatmulHeuristicResult_t *results,
    int *returned) {
  const char *call = "cublasLtMatmulAlgoGetHeuristic";
  Preference *p = find(preferences, pref);
  if (!handle || !find(descs, desc) || !find(layouts, a) || !find(layouts, b) ||
      !find(layouts, c) || !find(layouts, d) || !p || requested < 1)
    return fail(call, "a handle, descriptor, layout or preference is not live",
                CUBLAS_STATUS_INVALID_VALUE);
  uint32_t least = std::min(std::min(p->alignment[0], p->alignment[1]),
                            std::min(p->alignment[2], p->alignment[3]));
  *returned = 0;
  for (int i = 0; i < 3 && *returned < requested; ++i) {
    if (kAlgorithms[i].workspace > p->maxWorkspace || kAlgorithms[i].alignment > least)
      continue;
    cublasLtMatmulHeuristicResult_t &r = results[(*returned)++];
    std::memset(&r, 0, sizeof r);
    r.algo.data[0] = (uint64_t)i;
    r.workspaceSize = kAlgorithms[i].workspace;
    r.state = CUBLAS_STATUS_SUCCESS;
    r.wavesCount = 1.0f;
  }
  return *returned ? CUBLAS_STATUS_SUCCESS
                   : fail(call, "no algorithm fits the workspace and alignment",
                          CUBLAS_STATUS_NOT_SUPPORTED);
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                              const void *alpha, const void *A, cublasLtMatrixLayout_t aDesc,
                              const void *B, cublasLtMatrixLayout_t bDesc, const void *beta,
                              const void *C, cublasLtMatrixLayout_t cDesc, void *D,
                              cublasLtMatrixLayout_t dDesc, const cublasLtMatmulAlgo_t *algo,
                              void *workspace, size_t workspaceBytes, cudaStream_t stream) {
  const char *call = "cublasLtMatmul";
  const Desc *dp = find(descs, desc);
  const Layout *la = find(layouts, aDesc), *lb = find(layouts, bDesc),
               *lc = find(layouts, cDesc), *ld = find(layouts, dDesc);
  if (!handle || !dp || !la || !lb || !lc || !ld || !algo || !alpha || !beta)
    return fail(call, "a handle, descriptor, layout, algorithm or scale is missing",
                CUBLAS_STATUS_INVALID_VALUE);
  Desc d = *dp;
  Layout a = *la, b = *lb, c = *lc, out = *ld;
  uint64_t m = d.transA == CUBLAS_OP_T ? a.cols : a.rows;
  uint64_t k = d.transA == CUBLAS_OP_T ? a.rows : a.cols;
  uint64_t kb = d.transB == CUBLAS_OP_T ? b.cols : b.rows;
  uint64_t n = d.transB == CUBLAS_OP_T ? b.rows : b.cols;
  if (kb != k || out.rows != m || out.cols != n || c.rows != m || c.cols != n)
    return fail(call,
                "shapes do not chain: op(A) " + std::to_string(m) + "x" + std::to_string(k) +
                    ", op(B) " + std::to_string(kb) + "x" + std::to_string(n) + ", D " +
                    std::to_string(out.rows) + "x" + std::to_string(out.cols),
                CUBLAS_STATUS_INVALID_VALUE);
  uint64_t id = algo->data[0];
  if (id >= 3)
    return fail(call, "not an algorithm the heuristic returned", CUBLAS_STATUS_INVALID_VALUE);
  if (workspaceBytes < kAlgorithms[id].workspace)
    return fail(call,
                "algorithm " + std::to_string(id) + " needs " +
                    std::to_string(kAlgorithms[id].workspace) + " bytes of workspace, " +
                    std::to_string(workspaceBytes) + " given",
                CUBLAS_STATUS_INVALID_VALUE);
  for (const void *p : {A, B, C, (const void *)D})
    if ((uintptr_t)p % kAlgorithms[id].alignment)
      return fail(call,
                  "algorithm " + std::to_string(id) + " needs operands aligned to " +
                      std::to_string(kAlgorithms[id].alignment) + " bytes",
                  CUBLAS_STATUS_INVALID_VALUE);
  float al, be;
  std::memcpy(&al, alpha, 4);
  std::memcpy(&be, beta, 4);
  CUdeviceptr pa = (CUdeviceptr)A, pb = (CUdeviceptr)B, pc = (CUdeviceptr)C,
              pd = (CUdeviceptr)D, pw = (CUdeviceptr)workspace;
  CUresult r;
  if (!hostOf(pa, spanBytes(a), call, &r) || !hostOf(pb, spanBytes(b), call, &r) ||
      (be != 0 && !hostOf(pc, spanBytes(c), call, &r)) ||
      !hostOf(pd, spanBytes(out), call, &r) ||
      (kAlgorithms[id].workspace && !hostOf(pw, kAlgorithms[id].workspace, call, &r)))
    return CUBLAS_STATUS_INVALID_VALUE;
  CUresult q = enqueue((CUstream)stream, call, [=]() -> CUresult {
    CUresult e;
    const char *ha = hostOf(pa, spanBytes(a), call, &e);
    const char *hb = ha ? hostOf(pb, spanBytes(b), call, &e) : nullptr;
    const char *hc = hb && be != 0 ? hostOf(pc, spanBytes(c), call, &e) : nullptr;
    char *hd = hb ? hostOf(pd, spanBytes(out), call, &e) : nullptr;
    if (!hd || (be != 0 && !hc))
      return e;
    // Fast compute types multiply inputs rounded as tensor cores take them.
    auto in = [&](float v) {
      if (d.compute == CUBLAS_COMPUTE_32F_FAST_TF32)
        return tf32(v);
      if (d.compute == CUBLAS_COMPUTE_32F_FAST_16BF)
        return bf16ToFloat(floatToBf16(v));
      return v;
    };
    std::vector<float> result(m * n);
    for (uint64_t j = 0; j < n; ++j)
      for (uint64_t i = 0; i < m; ++i) {
        float acc = 0;
        for (uint64_t p = 0; p < k; ++p) {
          uint64_t ai = d.transA == CUBLAS_OP_T ? p + i * a.ld : i + p * a.ld;
          uint64_t bi = d.transB == CUBLAS_OP_T ? j + p * b.ld : p + j * b.ld;
          acc += in(load(ha, a.type, ai)) * in(load(hb, b.type, bi));
        }
        result[i + j * m] = al * acc + (be != 0 ? be * load(hc, c.type, i + j * c.ld) : 0);
      }
    for (uint64_t j = 0; j < n; ++j)
      for (uint64_t i = 0; i < m; ++i)
        store(hd, out.type, i + j * out.ld, result[i + j * m]);
    return CUDA_SUCCESS;
  });
  return q == CUDA_SUCCESS ? CUBLAS_STATUS_SUCCESS : CUBLAS_STATUS_EXECUTION_FAILED;
}

} // extern "C"
