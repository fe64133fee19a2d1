//===- ProbeTest.cpp - ridge probes and their targets ---------------------===//

#include "runtime/eval/Probe.h"

#include "runtime/base/Error.h"
#include "runtime/base/Random.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
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
              "unknown probe target 'nesting' (targets: depth, indent, letter, value)");
  }
  EXPECT_EQ(std::string(targetName(parseTarget("indent"))), "indent");
}

namespace {
/// The value target along `text`, -1 where it is not defined.
std::vector<double> values(const std::string &text) {
  std::vector<int32_t> bytes(text.begin(), text.end());
  std::vector<double> v = targetValues(Target::Value, bytes);
  for (double &x : v)
    if (!std::isfinite(x))
      x = -1;
  return v;
}
} // namespace

TEST(ProbeTest, TheRunningValueOfDigitUpdates) {
  // '+' adds 1, '-' subtracts 1, '*' times 3, '/' times 7 (mod 10); the
  // line's '$', digits and newline, and text outside problem lines, are not
  // probed.
  EXPECT_EQ(values("x\n$7++-*=4\n$9+/=0\n"),
            (std::vector<double>{-1, -1, -1, -1, 8, 9, 8, 4, 4, -1, -1, -1, -1, 0, 0, 0, -1, -1}));
  // A '$' that does not start a line, and a line that stops parsing.
  EXPECT_EQ(values("a$3+\n$3+q+\n"),
            (std::vector<double>{-1, -1, -1, -1, -1, -1, -1, 4, -1, -1, -1}));
}

TEST(ProbeTest, TheRunningPositionOfPerm5) {
  // 0 -> 4 at the pair "04"; the second permutation moves 4 at "41", its
  // earlier pair "12" leaving the position alone.
  std::string line = "\n$0:04 40|12 41=1\n";
  EXPECT_EQ(values(line), (std::vector<double>{-1, -1, -1, 0, -1, -1, 4, -1, -1, 4, -1, -1, 4,
                                               -1, -1, 1, -1, -1}));
  // A permutation moves the position once: "04 40" leaves it at 4.
  EXPECT_EQ(values("\n$0:04 40=4")[9], 4);
}

TEST(ProbeTest, APlantedClassIsRecoveredAndShuffledClassesScoreTheMajority) {
  const int64_t rows = 4000, width = 24;
  std::vector<float> x = noise(rows, width, 6);
  std::vector<double> label(rows);
  for (int64_t r = 0; r < rows; ++r) { // the class of the largest of 4 features
    int64_t best = 0;
    for (int64_t k = 1; k < 4; ++k)
      if (x[r * width + 2 * k] > x[r * width + 2 * best])
        best = k;
    label[r] = (double)best;
  }
  label[7] = label[8] = std::nan(""); // undefined rows are left out
  Parts defined = definedRows(parts(rows), label);
  EXPECT_EQ(defined.train.size() + defined.validation.size() + defined.test.size(),
            (size_t)rows - 2);
  ClassFit fit = fitRidgeClasses(x, width, label, defined);
  EXPECT_GT(fit.testAccuracy, 0.8); // a linear readout of an argmax
  EXPECT_LT(fit.majority, 0.35);
  for (int64_t r = rows - 1; r > 0; --r)
    std::swap(label[r], label[rng::uniformInt(5, 4, (uint64_t)r, (uint64_t)r + 1)]);
  ClassFit shuffled = fitRidgeClasses(x, width, label, definedRows(parts(rows), label));
  EXPECT_LT(shuffled.testAccuracy, 0.3);
}
