//===- FusedPrefillTest.cpp - fused:N's schedule over one prompt ----------===//

#include "runtime/decode/FusedPrefill.h"

#include <gtest/gtest.h>

using namespace fbt;

namespace {

// Pass k feeds position t the state pass k-1 carried at t-1, whatever the
// pieces the passes were cut into; position 0 and a document start get none.
TEST(FusedPrefillTest, EachPassFeedsThePassBeforesStateFromThePositionBefore) {
  const int32_t bos = 0;
  const std::vector<int32_t> prompt = {7, 8, bos, 9, 10};
  const int64_t width = 2;
  FusedPrefill plan(Regime::parse("fused:3"), (int64_t)prompt.size(), width);
  EXPECT_EQ(plan.passes(), 3);
  // The state a pass carries at position t: 100 * pass + t in each channel.
  auto statesOf = [&](int64_t pass, int64_t from, int64_t n) {
    std::vector<float> s;
    for (int64_t t = from; t < from + n; ++t)
      s.insert(s.end(), width, float(100 * pass + t));
    return s;
  };
  for (int64_t pass = 1; pass <= 3; ++pass) {
    EXPECT_EQ(plan.pass(), pass);
    EXPECT_EQ(plan.keepsStates(), pass < 3);
    for (int64_t at : {0, 2}) { // pieces of 2, 2 and 1
      int64_t n = std::min<int64_t>(2, (int64_t)prompt.size() - at);
      for (int64_t t = at; t < at + n; ++t) {
        const float *fed = plan.fed(prompt, t, bos);
        if (pass == 1 || t == 0 || prompt[t] == bos) {
          EXPECT_EQ(fed, nullptr) << "pass " << pass << ", t " << t;
        } else {
          ASSERT_NE(fed, nullptr) << "pass " << pass << ", t " << t;
          EXPECT_EQ(fed[0], float(100 * (pass - 1) + t - 1));
          EXPECT_EQ(fed[1], float(100 * (pass - 1) + t - 1));
        }
      }
      std::vector<float> s = statesOf(pass, at, n);
      EXPECT_EQ(plan.advance(n, s.data()), n);
    }
    std::vector<float> last = statesOf(pass, 4, 1);
    EXPECT_EQ(plan.advance(5, last.data()), 1) << "clamped to what is left";
  }
  EXPECT_TRUE(plan.finished());
  EXPECT_EQ(plan.advance(1), 0);
  EXPECT_EQ(plan.fed(prompt, 1, bos), nullptr);
}

TEST(FusedPrefillTest, StandardAndSoftPrefillOnce) {
  for (const char *name : {"standard", "soft"}) {
    FusedPrefill plan(Regime::parse(name), 3, 4);
    EXPECT_EQ(plan.passes(), 1) << name;
    EXPECT_FALSE(plan.keepsStates());
    plan.advance(3);
    EXPECT_TRUE(plan.finished()) << name;
  }
}

TEST(FusedPrefillTest, ThePassesCanRunWhole) {
  // The decoder's use: whole passes, the states left on the device.
  FusedPrefill plan(Regime::parse("fused:4"), 6, 8);
  int64_t passes = 0;
  for (plan.advance(6); !plan.finished(); plan.advance(6))
    ++passes;
  EXPECT_EQ(passes, 3) << "pass 1 before the loop, then 2, 3 and 4";
}

} // namespace
