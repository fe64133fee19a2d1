//===- CpuGemm.cpp - f32 GEMMs on the runtime's threads -------------------===//

#include "runtime/hal/cpu/CpuGemm.h"

#include <cblas.h>

#include <algorithm>
#include <mutex>

#ifdef FBT_HAVE_OPENMP
#include <omp.h>
#endif

namespace fbt {
namespace {
/// BLAS stays on the calling thread once: our threads split the GEMMs.
void singleThreadedBlas() {
#ifdef FBT_HAVE_OPENMP
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
#endif
}

void sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float *a,
           int64_t lda, const float *b, int64_t ldb, float *c, int64_t ldc) {
  if (m == 1) {
    // One row (batch-1 decoding): a GEMV streams B once, where a GEMM
    // would pack it first. c = B^T a for B stored k x n, B a for n x k.
    cblas_sgemv(CblasRowMajor, tb ? CblasNoTrans : CblasTrans, tb ? (int)n : (int)k,
                tb ? (int)k : (int)n, 1.0f, b, (int)ldb, a, ta ? (int)lda : 1, 0.0f, c, 1);
    return;
  }
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans,
              tb ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, 1.0f, a,
              (int)lda, b, (int)ldb, 0.0f, c, (int)ldc);
}

/// Below this many multiply-adds a GEMM runs on one thread: splitting it
/// costs more than it saves. A GEMV (one row) is bound by the bytes of B it
/// streams, which a second thread's memory bandwidth shares: worth a fork
/// from a smaller size.
constexpr int64_t kSplitWork = 1 << 18;
constexpr int64_t kSplitGemvWork = 1 << 15;
} // namespace

bool gemmIsSplit(int64_t m, int64_t n, int64_t k) {
#ifdef FBT_HAVE_OPENMP
  return cpuThreads() > 1 && m * n * k >= (m == 1 ? kSplitGemvWork : kSplitWork);
#else
  (void)m, (void)n, (void)k;
  return false;
#endif
}

void parallelSgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                   const float *a, const float *b, float *c, GemmSplit split) {
  int64_t lda = ta ? m : k, ldb = tb ? k : n;
#ifdef FBT_HAVE_OPENMP
  singleThreadedBlas();
  int threads = cpuThreads();
  if (gemmIsSplit(m, n, k) && split != GemmSplit::Serial) {
    // Panels of the output's longer side (by default), in multiples of 16
    // (BLAS's register blocks), so that every thread's panel is a whole GEMM.
    bool other = split == GemmSplit::Other || split == GemmSplit::OtherFine;
    bool fine = split == GemmSplit::AutoFine || split == GemmSplit::OtherFine;
    bool byRows = (m > n) != other;
    int64_t extent = byRows ? m : n;
    int64_t pieces = fine ? 2 * threads : threads;
    int64_t panel = (extent + pieces - 1) / pieces;
    panel = std::max<int64_t>(16, (panel + 15) / 16 * 16);
    int64_t panels = (extent + panel - 1) / panel;
#pragma omp parallel for num_threads(threads) schedule(static, 1)
    for (int64_t p = 0; p < panels; ++p) {
      int64_t lo = p * panel, len = std::min(panel, extent - lo);
      if (byRows) // rows lo.. of A (columns when transposed) and of C
        sgemm(ta, tb, len, n, k, ta ? a + lo : a + lo * lda, lda, b, ldb,
              c + lo * n, n);
      else // columns lo.. of B (rows when transposed) and of C
        sgemm(ta, tb, m, len, k, a, lda, tb ? b + lo * ldb : b + lo, ldb,
              c + lo, n);
    }
    return;
  }
#endif
  sgemm(ta, tb, m, n, k, a, lda, b, ldb, c, n);
}

} // namespace fbt
