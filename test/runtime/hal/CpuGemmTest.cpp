//===- CpuGemmTest.cpp - GEMMs split over the CPU's threads ---------------===//

#include "runtime/hal/cpu/CpuGemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace fbt;

namespace {
std::vector<float> filled(size_t n, float seed) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = std::sin(seed + 0.37f * (float)i);
  return v;
}

/// c = a b^T for a [m, k] and b [n, k], in double.
std::vector<float> reference(const std::vector<float> &a, const std::vector<float> &b,
                             int64_t m, int64_t n, int64_t k) {
  std::vector<float> c(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t q = 0; q < k; ++q)
        s += (double)a[i * k + q] * b[j * k + q];
      c[i * n + j] = (float)s;
    }
  return c;
}
} // namespace

// A batch computes what each GEMM computes alone, bit for bit: the same
// panels, the same BLAS calls, only run in one parallel region. Decode's
// shapes: GEMVs (m = 1) of a layer's projections, and a batch of rows.
TEST(CpuGemmTest, BatchEqualsEachAlone) {
  for (int64_t m : {1, 8, 64}) {
    struct Shape { int64_t n, k; };
    std::vector<Shape> shapes = {{320, 320}, {864, 320}, {48, 320}, {320, 864}};
    std::vector<std::vector<float>> as, bs, alone, together;
    for (size_t i = 0; i < shapes.size(); ++i) {
      as.push_back(filled(m * shapes[i].k, 0.1f * i));
      bs.push_back(filled(shapes[i].n * shapes[i].k, 1.0f + i));
      alone.emplace_back(m * shapes[i].n);
      together.emplace_back(m * shapes[i].n);
    }
    std::vector<GemmCall> calls;
    for (size_t i = 0; i < shapes.size(); ++i) {
      parallelSgemm(false, true, m, shapes[i].n, shapes[i].k, as[i].data(),
                    bs[i].data(), alone[i].data());
      calls.push_back({false, true, m, shapes[i].n, shapes[i].k, as[i].data(),
                       bs[i].data(), together[i].data()});
    }
    ASSERT_EQ(independentGemms(calls), calls.size());
    parallelSgemms(calls);
    for (size_t i = 0; i < shapes.size(); ++i) {
      EXPECT_EQ(alone[i], together[i]) << "m " << m << ", GEMM " << i;
      std::vector<float> want = reference(as[i], bs[i], m, shapes[i].n, shapes[i].k);
      for (size_t e = 0; e < want.size(); ++e)
        ASSERT_NEAR(together[i][e], want[e], 1e-3) << "m " << m << ", GEMM " << i;
    }
  }
}

// A GEMM that reads an earlier one's result, or writes over what an earlier
// one reads or writes, ends the batch.
TEST(CpuGemmTest, DependentGemmsEndTheBatch) {
  std::vector<float> x(64), w(64 * 64), y(64), z(64), u(64);
  GemmCall first{false, true, 1, 64, 64, x.data(), w.data(), y.data()};
  GemmCall other{false, true, 1, 64, 64, x.data(), w.data(), u.data()};
  GemmCall readsY{false, true, 1, 64, 64, y.data(), w.data(), z.data()};
  GemmCall writesX{false, true, 1, 64, 64, u.data(), w.data(), x.data()};
  GemmCall writesY{false, true, 1, 32, 64, x.data(), w.data(), y.data() + 16};
  EXPECT_EQ(independentGemms({first, other}), 2u);
  EXPECT_EQ(independentGemms({first, other, readsY}), 2u);
  EXPECT_EQ(independentGemms({first, writesX}), 1u);
  EXPECT_EQ(independentGemms({first, writesY, other}), 1u);
  EXPECT_EQ(independentGemms({}), 0u);
}
