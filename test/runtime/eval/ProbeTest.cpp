//===- ProbeTest.cpp - ridge probes and their targets ---------------------===//

#include "runtime/eval/Probe.h"

#include "runtime/base/Error.h"
#include "runtime/base/Random.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

using namespace fbt;
using namespace fbt::probe;

namespace {
/// `rows` rows of `width` standard normal features, and parts 3:1:1.
std::vector<float> noise(int64_t rows, int64_t width, uint64_t seed) {
  std::vector<float> x(rows * width);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = rng::normal(seed, 1, i);
  return x;
}
Parts parts(int64_t rows) {
  Parts p;
  for (int64_t r = 0; r < rows; ++r)
    (r % 5 < 3 ? p.train : r % 5 == 3 ? p.validation : p.test).push_back(r);
  return p;
}
} // namespace

TEST(ProbeTest, APlantedLinearSignalIsRecovered) {
  const int64_t rows = 3000, width = 32;
  std::vector<float> x = noise(rows, width, 3);
  std::vector<double> y(rows);
  for (int64_t r = 0; r < rows; ++r) {
    y[r] = 0.5 + 0.01 * rng::normal(9, 2, r);
    for (int64_t c = 0; c < width; c += 3)
      y[r] += (c % 2 ? 1.0 : -0.7) * x[r * width + c];
  }
  RidgeFit fit = fitRidge(x, width, y, parts(rows));
  EXPECT_GT(fit.testR2, 0.99);
  EXPECT_GT(fit.validationR2, 0.99);
}

TEST(ProbeTest, ShuffledTargetsScoreAtChance) {
  const int64_t rows = 3000, width = 32;
  std::vector<float> x = noise(rows, width, 4);
  std::vector<double> y(rows);
  for (int64_t r = 0; r < rows; ++r) // a signal, then shuffled away from its rows
    y[r] = x[r * width] + x[r * width + 5];
  for (int64_t r = rows - 1; r > 0; --r)
    std::swap(y[r], y[rng::uniformInt(5, 3, (uint64_t)r, (uint64_t)r + 1)]);
  RidgeFit fit = fitRidge(x, width, y, parts(rows));
  EXPECT_LT(fit.testR2, 0.03);
  EXPECT_GT(fit.testR2, -0.05);
}

TEST(ProbeTest, TargetsAreFunctionsOfThePrefix) {
  std::string text = "a(b[c]\n  d)\n\tx";
  std::vector<int32_t> bytes(text.begin(), text.end());
  std::vector<double> depth = targetValues(Target::Depth, bytes);
  std::vector<double> indent = targetValues(Target::Indent, bytes);
  std::vector<double> letter = targetValues(Target::Letter, bytes);
  EXPECT_EQ(depth, (std::vector<double>{0, 1, 1, 2, 2, 1, 1, 1, 1, 1, 0, 0, 0, 0}));
  EXPECT_EQ(indent, (std::vector<double>{0, 0, 0, 0, 0, 0, 0, 1, 2, 2, 2, 0, 4, 4}));
  EXPECT_EQ(letter, (std::vector<double>{1, 0, 1, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 1}));
}

TEST(ProbeTest, AnUnknownTargetIsNamed) {
  try {
    parseTarget("nesting");
    FAIL() << "an unknown target was accepted";
  } catch (const RuntimeError &e) {
    EXPECT_EQ(std::string(e.what()),
              "unknown probe target 'nesting' (targets: depth, indent, letter)");
  }
  EXPECT_EQ(std::string(targetName(parseTarget("indent"))), "indent");
}
