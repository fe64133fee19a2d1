//===- RandomTest.cpp - The counter-based generator -----------------------===//
//
// The exact values below are the cross-check with every other
// implementation of the generator (compiled kernels, the Python reference).
//
//===----------------------------------------------------------------------===//

#include "runtime/base/Random.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace fbt;

namespace {

TEST(RandomTest, MixIsSplitmix64) {
  // splitmix64's first output from state 0.
  EXPECT_EQ(rng::mix(0), 0xE220A8397B1DCDAFull);
  static_assert(rng::mix(0) == 0xE220A8397B1DCDAFull, "usable at compile time");
}

TEST(RandomTest, ExactReferenceValues) {
  EXPECT_EQ(rng::bits(0, 0, 0), 0xA706DD2F4D197E6Full);
  EXPECT_EQ(rng::bits(1234, 2, 5), 0xF792749FA4A5FAEAull);
  // uniform(0, 0, 0) = 10946269 * 2^-24 and uniform(1234, 2, 5) =
  // 16224884 * 2^-24, both exact in float.
  EXPECT_EQ(rng::uniform(0, 0, 0), 0x1.4e0dbap-1f);
  EXPECT_EQ(rng::uniform(0, 0, 0), 0.6524484753608704f);
  EXPECT_EQ(rng::uniform(1234, 2, 5), 0x1.ef24e8p-1f);
  EXPECT_EQ(rng::uniform(1234, 2, 5), 0.967078447341919f);
  // More points of the shared table: (seed, stream, i) -> top 24 bits.
  struct Point {
    uint64_t seed, stream, i, bits;
    uint32_t top24;
  } points[] = {
      {1234, 0, 0, 0x9E17E35F6D9238EDull, 10360803},
      {1234, 3, 5, 0x82CF94346F8AA2C9ull, 8572820},
      {7, 1, 123456789, 0xC5E0E91FF0CBC7CEull, 12968169},
  };
  for (const Point &p : points) {
    EXPECT_EQ(rng::bits(p.seed, p.stream, p.i), p.bits);
    EXPECT_EQ(rng::uniform(p.seed, p.stream, p.i), float(p.top24) * 0x1p-24f);
  }
  // floor(bits * n / 2^64).
  EXPECT_EQ(rng::uniformInt(1234, rng::streams::kBatch, 3, 1000), 573u);
  // Box-Muller goes through libm, so allow a few ulps across platforms.
  EXPECT_FLOAT_EQ(rng::normal(1234, 7, 0), -0.0954516530f);
}

TEST(RandomTest, UniformIntMatchesA128BitProduct) {
#ifdef __SIZEOF_INT128__
  for (uint64_t i = 0; i < 10000; ++i) {
    uint64_t n = rng::bits(99, 1, i) >> (i % 64); // every magnitude
    if (n == 0)
      n = 1;
    unsigned __int128 wide =
        static_cast<unsigned __int128>(rng::bits(5, 6, i)) * n;
    EXPECT_EQ(rng::uniformInt(5, 6, i, n), static_cast<uint64_t>(wide >> 64));
  }
#endif
  EXPECT_EQ(rng::uniformInt(1, 2, 3, 1), 0u);
  // floor(x * (2^64 - 1) / 2^64) = x - 1 for any x > 0.
  EXPECT_EQ(rng::uniformInt(1, 2, 3, ~0ull), rng::bits(1, 2, 3) - 1);
}

TEST(RandomTest, DistributionsLookRight) {
  const int n = 200000;
  double sum = 0, sumNormal = 0, sumSq = 0;
  int buckets[10] = {};
  for (int i = 0; i < n; ++i) {
    float u = rng::uniform(42, 3, uint64_t(i));
    ASSERT_GE(u, 0.0f);
    ASSERT_LT(u, 1.0f);
    sum += u;
    uint64_t k = rng::uniformInt(42, 4, uint64_t(i), 10);
    ASSERT_LT(k, 10u);
    ++buckets[k];
    float z = rng::normal(42, 5, uint64_t(i));
    ASSERT_TRUE(std::isfinite(z));
    sumNormal += z;
    sumSq += double(z) * z;
  }
  EXPECT_NEAR(sum / n, 0.5, 0.005);
  for (int b : buckets)
    EXPECT_NEAR(b / double(n), 0.1, 0.005);
  EXPECT_NEAR(sumNormal / n, 0.0, 0.01);
  EXPECT_NEAR(sumSq / n, 1.0, 0.02);
}

TEST(RandomTest, StreamsAndSeedsAreIndependent) {
  EXPECT_NE(rng::bits(1, 0, 0), rng::bits(2, 0, 0));
  EXPECT_NE(rng::bits(1, 0, 0), rng::bits(1, 1, 0));
  EXPECT_NE(rng::bits(1, 0, 0), rng::bits(1, 0, 1));
  // A pure function: same arguments, same value, in any order.
  EXPECT_EQ(rng::uniform(7, 8, 9), rng::uniform(7, 8, 9));
}

TEST(RandomTest, SyntheticIdsAvoidBosAndVaryByRound) {
  std::vector<int32_t> a = rng::syntheticIds(4096, 7, rng::streams::kSyntheticIds, 3);
  std::vector<int32_t> seen(7, 0);
  for (int32_t id : a) {
    ASSERT_GE(id, 1);
    ASSERT_LT(id, 7);
    ++seen[id];
  }
  for (int id = 1; id < 7; ++id)
    EXPECT_GT(seen[id], 500) << id; // about 4096 / 6 each
  EXPECT_EQ(a, rng::syntheticIds(4096, 7, rng::streams::kSyntheticIds, 3));
  EXPECT_NE(a, rng::syntheticIds(4096, 7, rng::streams::kSyntheticIds, 4));
  EXPECT_NE(a, rng::syntheticIds(4096, 7, rng::streams::kSyntheticTargets, 3));
}

} // namespace
