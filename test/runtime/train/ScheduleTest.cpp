//===- ScheduleTest.cpp - Pass-count and learning-rate schedules ----------===//

#include "runtime/base/Error.h"
#include "runtime/base/Random.h"
#include "runtime/train/Schedule.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

using namespace fbt;

namespace {

/// A fixed schedule to test with: f = 0.5, K2 = 2, p3 = 0.03, K3 = 3,
/// N = 1000, seed 1234.
PassSchedule fixed() {
  PassSchedule s;
  s.singlePassFraction = 0.5;
  s.passes = 2;
  s.deepPassFraction = 0.03;
  s.deepPasses = 3;
  s.totalSteps = 1000;
  s.seed = 1234;
  return s;
}

/// 1e-3 -> 1e-4, warmup 100, N = 1000.
LrSchedule cosine() {
  LrSchedule lr;
  lr.learningRate = 1e-3;
  lr.minLearningRate = 1e-4;
  lr.warmupSteps = 100;
  lr.totalSteps = 1000;
  return lr;
}

TEST(ScheduleTest, PassFractionsFollowTheSpec) {
  PassSchedule s = fixed();
  s.totalSteps = 100000;
  std::map<int64_t, int64_t> count;
  for (int64_t step = 0; step < s.totalSteps; ++step) {
    int64_t k = s.passesAt(step);
    if (step < 50000)
      ASSERT_EQ(k, 1) << step;
    else
      ASSERT_NE(k, 1) << step;
    ++count[k];
  }
  EXPECT_EQ(count[1], 50000);
  double deep = double(count[3]) / 50000;
  EXPECT_NEAR(deep, 0.03, 0.004); // ~5 sigma
  EXPECT_EQ(count[2] + count[3], 50000);
}

TEST(ScheduleTest, DeepStepsAreTheDocumentedDraw) {
  PassSchedule s = fixed();
  s.totalSteps = 1000;
  s.seed = 77;
  for (int64_t step = 500; step < 1000; ++step) {
    bool deep = rng::uniform(77, 0x5CED, uint64_t(step)) < 0.03f;
    EXPECT_EQ(s.passesAt(step), deep ? 3 : 2) << step;
  }
  // Another seed picks other deep steps.
  PassSchedule t = s;
  t.seed = 78;
  int differ = 0;
  for (int64_t step = 500; step < 1000; ++step)
    differ += s.passesAt(step) != t.passesAt(step);
  EXPECT_GT(differ, 0);
}

TEST(ScheduleTest, SinglePassPhaseBoundary) {
  PassSchedule s = fixed();
  s.singlePassFraction = 0.25;
  s.totalSteps = 10; // f * N = 2.5: steps 0, 1, 2 are K = 1
  s.deepPassFraction = 0;
  EXPECT_EQ(s.singlePassSteps(), 3);
  EXPECT_EQ(s.passesAt(2), 1);
  EXPECT_EQ(s.passesAt(3), 2);
  s.singlePassFraction = 0;
  EXPECT_EQ(s.passesAt(0), 2);
  EXPECT_EQ(s.singlePassSteps(), 0);
  s.singlePassFraction = 1;
  EXPECT_EQ(s.passesAt(9), 1);
  s.singlePassFraction = 0.5;
  s.deepPassFraction = 1;
  EXPECT_EQ(s.passesAt(5), 3);
}

TEST(ScheduleTest, DistinctPassesNameTheStepsARunNeeds) {
  PassSchedule s = fixed();
  EXPECT_EQ(s.distinctPasses(), (std::vector<int64_t>{1, 2, 3}));
  s.deepPassFraction = 0;
  EXPECT_EQ(s.distinctPasses(), (std::vector<int64_t>{1, 2}));
  s.singlePassFraction = 1;
  EXPECT_EQ(s.distinctPasses(), (std::vector<int64_t>{1}));
  s.singlePassFraction = 0;
  s.deepPassFraction = 1;
  EXPECT_EQ(s.distinctPasses(), (std::vector<int64_t>{3}));
  s.deepPassFraction = 0.5;
  s.deepPasses = 2;
  EXPECT_EQ(s.distinctPasses(), (std::vector<int64_t>{2}));
}

TEST(ScheduleTest, ValidationNamesTheField) {
  PassSchedule s = fixed();
  s.validate();
  s.passes = 0;
  try {
    s.validate();
    FAIL();
  } catch (const RuntimeError &e) {
    EXPECT_STREQ(e.what(), "passes: expected an integer >= 1, got 0");
  }
  s.passes = 2;
  s.deepPassFraction = 1.5;
  EXPECT_THROW(s.validate(), RuntimeError);
  LrSchedule lr = cosine();
  lr.validate();
  lr.minLearningRate = 1;
  try {
    lr.validate();
    FAIL();
  } catch (const RuntimeError &e) {
    EXPECT_STREQ(e.what(), "min_learning_rate: expected a number in [0, "
                           "learning_rate], got 1");
  }
}

TEST(ScheduleTest, LearningRateEndpoints) {
  LrSchedule lr = cosine();
  EXPECT_DOUBLE_EQ(lr.at(0), 1e-3 / 100);
  EXPECT_DOUBLE_EQ(lr.at(49), 1e-3 * 50 / 100);
  EXPECT_DOUBLE_EQ(lr.at(99), 1e-3);  // warmup ends at the peak
  EXPECT_DOUBLE_EQ(lr.at(100), 1e-3); // cosine starts at the peak
  EXPECT_DOUBLE_EQ(lr.at(550), (1e-3 + 1e-4) / 2);
  EXPECT_DOUBLE_EQ(lr.at(1000), 1e-4);
  EXPECT_DOUBLE_EQ(lr.at(5000), 1e-4);
  EXPECT_GT(lr.at(999), 1e-4);
  for (int64_t step = 100; step < 1000; ++step)
    EXPECT_LE(lr.at(step + 1), lr.at(step));
  LrSchedule noWarmup = lr;
  noWarmup.warmupSteps = 0;
  EXPECT_DOUBLE_EQ(noWarmup.at(0), 1e-3);
  LrSchedule allWarmup = lr;
  allWarmup.warmupSteps = 2000; // longer than the run: never decays
  EXPECT_DOUBLE_EQ(allWarmup.at(999), 1e-3 * 1000 / 2000);
}

} // namespace

namespace {

TEST(ScheduleTest, DistributionDrawsEachKInProportion) {
  PassSchedule s = fixed();
  s.singlePassFraction = 0.25;
  s.distribution = {{2, 0.5}, {4, 0.0}, {8, 0.5}};
  s.totalSteps = 40000;
  s.validate();
  std::map<int64_t, int64_t> count;
  for (int64_t step = 0; step < s.totalSteps; ++step) {
    int64_t k = s.passesAt(step);
    ASSERT_EQ(k == 1, step < 10000) << step;
    // The same documented draw picks the first K whose cumulative weight
    // exceeds it.
    if (step >= 10000)
      ASSERT_EQ(k, rng::uniform(s.seed, 0x5CED, uint64_t(step)) < 0.5f ? 2 : 8);
    ++count[k];
  }
  EXPECT_EQ(count[4], 0); // weight 0: never drawn, and not compiled
  EXPECT_NEAR(double(count[8]) / 30000, 0.5, 0.015);
  EXPECT_EQ(s.distinctPasses(), (std::vector<int64_t>{1, 2, 8}));
}

TEST(ScheduleTest, DistributionIsValidated) {
  PassSchedule s = fixed();
  s.distribution = {{1, 1.0}};
  EXPECT_THROW(s.validate(), RuntimeError);
  s.distribution = {{2, 0.5}};
  EXPECT_THROW(s.validate(), RuntimeError);
  s.distribution = {{2, 0.5}, {3, 0.5}};
  EXPECT_NO_THROW(s.validate());
}

TEST(ScheduleTest, TheModelsSpecDefinesTheSchedule) {
  ModelConfig m;
  m.feedback.fusion = Fusion::Glu;
  m.training.singlePassFraction = 0.25;
  m.training.passes = 2;
  m.training.deepPasses = 3;
  m.training.passDistribution = {{8, 0.5}, {2, 0.5}}; // the JSON's order
  PassSchedule s = PassSchedule::ofModel(m, 400, 9);
  EXPECT_EQ(s.singlePassSteps(), 100);
  EXPECT_EQ(s.distinctPasses(), (std::vector<int64_t>{1, 2, 8}));
  EXPECT_EQ(s.distribution.front().first, 2); // ascending, as passesAt reads it
  EXPECT_EQ(s.seed, 9u);
  // A plain model runs one pass at every step, whatever its spec says.
  m.feedback.fusion = Fusion::None;
  EXPECT_EQ(PassSchedule::ofModel(m, 400, 9).distinctPasses(), (std::vector<int64_t>{1}));
  // A spec out of range is refused by name.
  m.feedback.fusion = Fusion::Glu;
  m.training.singlePassFraction = 2;
  EXPECT_THROW(PassSchedule::ofModel(m, 400, 9), RuntimeError);
}

} // namespace
