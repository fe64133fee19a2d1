//===- CudaGemmLayoutTest.cpp - the row-major GEMM posed to cuBLASLt ------===//
//
// A plan's GEMM is row-major; cuBLASLt is column-major. ltLayout says how
// the one is posed as the other (CudaGemm.h). This checks it without a GPU:
// a column-major GEMM with cuBLASLt's semantics (op(A) op(B), leading
// dimension = rows), run on the plan's buffers as ltLayout describes them,
// must give the plan's row-major result, for every transpose and odd sizes.
//
//===----------------------------------------------------------------------===//

#include "runtime/hal/cuda/CudaGemm.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace fbt::cuda {
namespace {

/// D (rows x cols, column-major, ld rows) = op(A) op(B) as cuBLASLt defines
/// it, A being aRows x aCols column-major (ld aRows), B likewise.
std::vector<double> columnMajorGemm(const LtLayout &l, const std::vector<double> &a,
                                    const std::vector<double> &b) {
  auto A = [&](uint64_t r, uint64_t c) { return a[r + c * l.aRows]; };
  auto B = [&](uint64_t r, uint64_t c) { return b[r + c * l.bRows]; };
  uint64_t rows = l.transA ? l.aCols : l.aRows, inner = l.transA ? l.aRows : l.aCols;
  uint64_t cols = l.transB ? l.bRows : l.bCols;
  EXPECT_EQ(inner, l.transB ? l.bCols : l.bRows) << "op(A) and op(B) do not chain";
  std::vector<double> d(rows * cols, 0.0);
  for (uint64_t i = 0; i < rows; ++i)
    for (uint64_t j = 0; j < cols; ++j)
      for (uint64_t p = 0; p < inner; ++p)
        d[i + j * rows] += (l.transA ? A(p, i) : A(i, p)) * (l.transB ? B(j, p) : B(p, j));
  return d;
}

TEST(CudaGemmLayoutTest, PosesTheRowMajorGemmForCublasLt) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  for (bool tl : {false, true})
    for (bool tr : {false, true}) {
      PlanOp op;
      op.m = 5;
      op.n = 3;
      op.k = 7;
      op.transposeLhs = tl;
      op.transposeRhs = tr;
      // Row-major operands: A [m, k] (or [k, m]), B [k, n] (or [n, k]).
      std::vector<double> a(op.m * op.k), b(op.k * op.n);
      for (double &x : a)
        x = u(rng);
      for (double &x : b)
        x = u(rng);
      auto lhs = [&](int64_t i, int64_t p) { return tl ? a[p * op.m + i] : a[i * op.k + p]; };
      auto rhs = [&](int64_t p, int64_t j) { return tr ? b[j * op.k + p] : b[p * op.n + j]; };

      LtLayout l = ltLayout(op);
      // cuBLASLt's A is our B, its B our A; D is n x m column-major = C [m, n].
      std::vector<double> d = columnMajorGemm(l, b, a);
      ASSERT_EQ(d.size(), (size_t)(op.m * op.n));
      EXPECT_EQ(l.aRows * l.aCols, (uint64_t)(op.k * op.n));
      EXPECT_EQ(l.bRows * l.bCols, (uint64_t)(op.m * op.k));
      for (int64_t i = 0; i < op.m; ++i)
        for (int64_t j = 0; j < op.n; ++j) {
          double c = 0;
          for (int64_t p = 0; p < op.k; ++p)
            c += lhs(i, p) * rhs(p, j);
          EXPECT_NEAR(d[i * op.n + j], c, 1e-12)
              << "C[" << i << ", " << j << "] with transposes " << tl << tr;
        }
    }
}

} // namespace
} // namespace fbt::cuda
