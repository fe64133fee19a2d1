//===- PrefillCacheTest.cpp - the decoder's prefill cache is exact --------===//
//
// Needs a compiled CPU bundle: CTest's fixture.tiny_batch1 compiles one
// and runs this with FBT_TEST_BUNDLE set (test/emucuda/cuda-tests.test on a
// GPU bundle); without it, it skips.
// With random weights the carried state is a dense vector that every
// decoding step feeds back (soft, fused), so a restore that missed any of
// KV rows, state or logits shows as different bits.
//
//===----------------------------------------------------------------------===//

#include "runtime/decode/Decoder.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

using namespace fbt;

namespace {
struct Generated {
  std::vector<int32_t> ids;
  std::vector<float> state;
};

Generated generate(Decoder &d, const std::vector<int32_t> &prompt, const Regime &r) {
  SamplingOptions greedy;
  Generated out;
  out.ids = d.generate({prompt}, r, greedy, 6, [](int64_t, int32_t) { return true; })[0];
  out.state.assign(d.state(0), d.state(0) + d.width());
  return out;
}
} // namespace

TEST(PrefillCacheTest, RestoredPrefillsDecodeBitForBit) {
  const char *bundle = std::getenv("FBT_TEST_BUNDLE");
  if (!bundle)
    GTEST_SKIP() << "needs FBT_TEST_BUNDLE (CTest's fixture.tiny_batch1 compiles one)";
  Session session(bundle);
  session.initialize(7);
  std::vector<int32_t> p = {0, 84, 104, 101, 32, 99, 97, 116}, q = {0, 65, 32, 100, 111, 103};
  for (const char *regime : {"standard", "soft", "fused:2"}) {
    SCOPED_TRACE(regime);
    Regime r = Regime::parse(regime);
    Decoder plain(session);
    Generated want = generate(plain, p, r);

    Decoder cached(session);
    cached.setPrefillCache(4);
    generate(cached, p, r);              // a miss: prefilled and kept
    generate(cached, q, r);              // another prompt between
    Generated got = generate(cached, p, r);    // a hit: restored
    EXPECT_EQ(cached.prefillCacheHits(), 1);
    EXPECT_EQ(cached.prefillCacheMisses(), 2);
    EXPECT_EQ(got.ids, want.ids);
    ASSERT_EQ(got.state.size(), want.state.size());
    EXPECT_EQ(0, std::memcmp(got.state.data(), want.state.data(),
                             want.state.size() * sizeof(float)));
  }
}
