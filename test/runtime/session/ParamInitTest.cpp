//===- ParamInitTest.cpp - Deterministic parameter init -------------------===//

#include "runtime/base/Error.h"
#include "runtime/base/Random.h"
#include "runtime/session/ParamInit.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace fbt;

namespace {

TEST(ParamInitTest, NormScalesAreOnes) {
  EXPECT_EQ(initParameter({4}, 1234, 3), (std::vector<float>{1, 1, 1, 1}));
}

TEST(ParamInitTest, WeightsAreScaledNormalsOfSeedAndIndex) {
  std::vector<float> w = initParameter({3, 5}, 1234, 7);
  ASSERT_EQ(w.size(), 15u);
  for (uint64_t i = 0; i < 15; ++i)
    EXPECT_EQ(w[i], 0.02f * rng::normal(1234, 7, i));
  // The cross-check value: 0.02 * normal(1234, 7, 0).
  EXPECT_FLOAT_EQ(w[0], 0.02f * -0.0954516530f);
  EXPECT_EQ(initParameter({3, 5}, 1234, 7), w); // deterministic
  EXPECT_NE(initParameter({3, 5}, 1234, 8), w); // per parameter
  EXPECT_NE(initParameter({3, 5}, 1235, 7), w); // per seed
  EXPECT_EQ(initParameter({3, 5}, 1234, 7, 1.0f)[4], rng::normal(1234, 7, 4));
}

TEST(ParamInitTest, WeightStatistics) {
  std::vector<float> w = initParameter({256, 256}, 42, 0);
  double sum = 0, sumSq = 0;
  for (float v : w) {
    sum += v;
    sumSq += double(v) * v;
  }
  double n = double(w.size());
  EXPECT_NEAR(sum / n, 0.0, 0.0005);
  EXPECT_NEAR(std::sqrt(sumSq / n), 0.02, 0.0005);
}

TEST(ParamInitTest, OtherRanksAreErrors) {
  EXPECT_THROW(initParameter({2, 2, 2}, 1, 0), RuntimeError);
  EXPECT_THROW(initParameter({}, 1, 0), RuntimeError);
}

} // namespace

namespace {

TEST(ParamInitTest, UniformInitIsScaledUniformsOfSeedAndIndex) {
  std::vector<float> w = initParameter({64, 64}, 9, 20, 0.125f, InitKind::Uniform);
  const float a = 0.125f * std::sqrt(3.0f);
  double sum = 0, sq = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    ASSERT_EQ(w[i], a * (2.0f * rng::uniform(9, 20, i) - 1.0f)) << i;
    ASSERT_LE(std::fabs(w[i]), a);
    sum += w[i];
    sq += double(w[i]) * w[i];
  }
  double n = double(w.size());
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(std::sqrt(sq / n), 0.125, 0.005); // the same std as normal
}

} // namespace
