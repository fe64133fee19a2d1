//===- CpuGemm.cpp - f32 GEMMs on the runtime's threads -------------------===//

#include "runtime/hal/cpu/CpuGemm.h"

#include "runtime/hal/cpu/CpuTeam.h"

#include <cblas.h>

#include <algorithm>
#include <mutex>

namespace fbt {
namespace {
/// BLAS stays on the calling thread once: our threads split the GEMMs.
void singleThreadedBlas() {
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
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
  return cpuThreads() > 1 && m * n * k >= (m == 1 ? kSplitGemvWork : kSplitWork);
}

namespace {
/// A part of a GEMM that one BLAS call computes: rows lo.. of A (columns
/// when transposed) and of C, or columns lo.. of B (rows when transposed)
/// and of C.
struct Panel {
  const GemmCall *call;
  int64_t lo, len;
  bool byRows;
};

/// Panels of the output's longer side (by default), in multiples of 16
/// (BLAS's register blocks), so that every thread's panel is a whole GEMM.
void splitInto(const GemmCall &g, GemmSplit split, int threads,
               std::vector<Panel> &out) {
  bool other = split == GemmSplit::Other || split == GemmSplit::OtherFine;
  bool fine = split == GemmSplit::AutoFine || split == GemmSplit::OtherFine;
  bool byRows = (g.m > g.n) != other;
  int64_t extent = byRows ? g.m : g.n;
  int64_t pieces = fine ? 2 * threads : threads;
  int64_t panel = (extent + pieces - 1) / pieces;
  panel = std::max<int64_t>(16, (panel + 15) / 16 * 16);
  for (int64_t lo = 0; lo < extent; lo += panel)
    out.push_back({&g, lo, std::min(panel, extent - lo), byRows});
}

void runPanel(const Panel &p) {
  const GemmCall &g = *p.call;
  int64_t lda = g.ta ? g.m : g.k, ldb = g.tb ? g.k : g.n;
  if (p.byRows)
    sgemm(g.ta, g.tb, p.len, g.n, g.k, g.ta ? g.a + p.lo : g.a + p.lo * lda, lda,
          g.b, ldb, g.c + p.lo * g.n, g.n);
  else
    sgemm(g.ta, g.tb, g.m, p.len, g.k, g.a, lda, g.tb ? g.b + p.lo * ldb : g.b + p.lo,
          ldb, g.c + p.lo, g.n);
}

/// The calling thread's panels, kept between calls: decode runs a few
/// dozen GEMMs per token, none of which should allocate.
std::vector<Panel> &panelBuffer() {
  thread_local std::vector<Panel> panels;
  panels.clear();
  return panels;
}

/// Panel p on thread p % n, as schedule(static, 1) would.
void runPanels(const std::vector<Panel> &panels) {
  onTeam([&](int t, int n) {
    for (size_t p = t; p < panels.size(); p += n)
      runPanel(panels[p]);
  });
}
} // namespace

void parallelSgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                   const float *a, const float *b, float *c, GemmSplit split) {
  singleThreadedBlas();
  GemmCall g{ta, tb, m, n, k, a, b, c};
  if (gemmIsSplit(m, n, k) && split != GemmSplit::Serial) {
    std::vector<Panel> &panels = panelBuffer();
    splitInto(g, split, cpuThreads(), panels);
    runPanels(panels);
    return;
  }
  runPanel({&g, 0, m, true});
}

void parallelSgemms(const std::vector<GemmCall> &calls) {
  singleThreadedBlas();
  std::vector<Panel> &panels = panelBuffer();
  for (const GemmCall &g : calls) {
    if (gemmIsSplit(g.m, g.n, g.k))
      splitInto(g, GemmSplit::Auto, cpuThreads(), panels);
    else
      panels.push_back({&g, 0, g.m, true});
  }
  runPanels(panels);
}

size_t independentGemms(const std::vector<GemmCall> &calls) {
  auto overlap = [](const float *p, int64_t n, const float *q, int64_t m) {
    return p < q + m && q < p + n;
  };
  for (size_t j = 0; j < calls.size(); ++j) {
    const GemmCall &g = calls[j];
    for (size_t i = 0; i < j; ++i) {
      const GemmCall &e = calls[i];
      int64_t written = e.m * e.n;
      if (overlap(g.a, g.m * g.k, e.c, written) || overlap(g.b, g.k * g.n, e.c, written) ||
          overlap(g.c, g.m * g.n, e.c, written) || overlap(g.c, g.m * g.n, e.a, e.m * e.k) ||
          overlap(g.c, g.m * g.n, e.b, e.k * e.n))
        return j;
    }
  }
  return calls.size();
}

} // namespace fbt
