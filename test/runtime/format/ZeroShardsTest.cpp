// ZeRO-1's partition of whole parameters over the ranks (ZeroShards.h).

#include "runtime/base/Error.h"
#include "runtime/format/ZeroShards.h"

#include <gtest/gtest.h>

namespace fbt {
namespace {

TEST(ZeroShardsTest, LargestFirstToTheLeastLoadedRank) {
  // In turn: 10 | 8, then 4 -> rank 1 (8 < 10) = 12, 3 -> rank 0 = 13,
  // 1 -> rank 1 = 13, 1 -> rank 0 (a tie goes to the lower rank) = 14.
  std::vector<int64_t> elements = {3, 10, 1, 8, 4, 1};
  EXPECT_EQ(zeroOwners(elements, 2), (std::vector<int>{0, 0, 1, 1, 1, 0}));
  EXPECT_EQ(zeroShares(elements, 2), (std::vector<int64_t>{14, 13}));
  EXPECT_EQ(zeroOwners(elements, 1), std::vector<int>(6, 0));
}

TEST(ZeroShardsTest, EqualSizesKeepTheirOrder) {
  EXPECT_EQ(zeroOwners({5, 5, 5, 5}, 3), (std::vector<int>{0, 1, 2, 0}));
}

TEST(ZeroShardsTest, MoreRanksThanParametersIsRefused) {
  try {
    zeroOwners({1, 2, 3}, 4);
    FAIL() << "4 ranks for 3 parameters were accepted";
  } catch (const RuntimeError &e) {
    EXPECT_STREQ(e.what(), "ZeRO-1 gives each rank whole parameters, but 4 ranks exceed the "
                           "model's 3 parameters: run on at most that many ranks, or set "
                           "training.zero to 0");
  }
  EXPECT_THROW(zeroOwners({1}, 0), RuntimeError);
}

} // namespace
} // namespace fbt
