//===- LogitControlsTest.cpp - bias, penalties and log-probabilities ------===//

#include "runtime/decode/LogitControls.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace fbt;

TEST(LogitControlsTest, BiasAndPenaltiesAreOpenAisFormula) {
  std::vector<float> logits = {1, 2, 3, 4};
  LogitControls c;
  c.bias = {{0, 10}, {3, -100}};
  c.presencePenalty = 0.5;
  c.frequencyPenalty = 0.25;
  TokenCounts counts = {{1, 2}, {2, 0}};
  std::vector<float> out = controlledLogits(logits.data(), 4, c, counts);
  EXPECT_FLOAT_EQ(out[0], 11);                      // bias alone
  EXPECT_FLOAT_EQ(out[1], 2 - 0.5f - 0.25f * 2);    // generated twice
  EXPECT_FLOAT_EQ(out[2], 3);                       // counted zero times
  EXPECT_FLOAT_EQ(out[3], -96);
  EXPECT_FALSE(LogitControls{}.any());
  EXPECT_TRUE(c.any());
}

TEST(LogitControlsTest, LogprobsAreTheLogSoftmax) {
  std::vector<float> logits = {0.5f, -1, 2, 2};
  ChosenLogprob lp = chosenLogprob(logits.data(), 4, 1, 3);
  double z = std::log(std::exp(0.5) + std::exp(-1.0) + 2 * std::exp(2.0));
  EXPECT_NEAR(lp.logprob, -1 - z, 1e-12);
  ASSERT_EQ(lp.top.size(), 3u);
  EXPECT_EQ(lp.top[0].first, 2); // a tie goes to the lower id
  EXPECT_EQ(lp.top[1].first, 3);
  EXPECT_EQ(lp.top[2].first, 0);
  EXPECT_NEAR(lp.top[2].second, 0.5 - z, 1e-12);
  EXPECT_TRUE(chosenLogprob(logits.data(), 4, 0, 0).top.empty());
  EXPECT_EQ(chosenLogprob(logits.data(), 4, 0, 9).top.size(), 4u);
}
