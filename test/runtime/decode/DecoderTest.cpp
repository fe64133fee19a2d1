//===- DecoderTest.cpp - the decoding regimes on one set of weights -------===//
//
// On the fixture's tiny bundle with random weights: greedy decoding is a
// function of the weights and the prompt in every regime; teacher-forced
// scoring of a greedy continuation ranks each generated token first; and
// the fused regime's prefill is pass after pass of the same map.
//
//===----------------------------------------------------------------------===//

#include "runtime/decode/Decoder.h"

#include "test/runtime/TinyBundle.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

using namespace fbt;

namespace {

std::vector<int32_t> greedy(Decoder &d, const std::vector<int32_t> &prompt, const Regime &r,
                            int64_t tokens) {
  SamplingOptions options;
  return d.generate({prompt}, r, options, tokens, [](int64_t, int32_t) { return true; })[0];
}

const std::vector<int32_t> kPrompt = {0, 84, 104, 101, 32, 99, 97, 116};

TEST(DecoderTest, GreedyDecodingRepeatsInEveryRegime) {
  FBT_TEST_BUNDLE_OR_SKIP(bundle);
  Session session(bundle);
  session.initialize(7);
  for (const char *regime : {"standard", "soft", "fused:2", "fused:3"}) {
    SCOPED_TRACE(regime);
    Regime r = Regime::parse(regime);
    Decoder a(session), b(session);
    std::vector<int32_t> first = greedy(a, kPrompt, r, 5);
    EXPECT_EQ(first.size(), 5u);
    EXPECT_EQ(greedy(b, kPrompt, r, 5), first);
    EXPECT_EQ(greedy(a, kPrompt, r, 5), first); // a decoder reused
  }
}

TEST(DecoderTest, ScoringAGreedyContinuationRanksItsTokensFirst) {
  FBT_TEST_BUNDLE_OR_SKIP(bundle);
  Session session(bundle);
  session.initialize(7);
  Regime r = Regime::parse("standard");
  Decoder d(session);
  std::vector<int32_t> sequence = kPrompt, generated = greedy(d, kPrompt, r, 4);
  sequence.insert(sequence.end(), generated.begin(), generated.end());
  auto logits = d.score({sequence}, {(int64_t)kPrompt.size()}, r);
  ASSERT_EQ(logits.size(), 1u);
  for (size_t i = 0; i < generated.size(); ++i) {
    const std::vector<float> &row = logits[0][kPrompt.size() - 1 + i];
    int64_t best = std::max_element(row.begin(), row.end()) - row.begin();
    EXPECT_EQ(best, generated[i]) << "token " << i;
  }
}

TEST(DecoderTest, PassStatesHaveOneStatePerPassAndPosition) {
  FBT_TEST_BUNDLE_OR_SKIP(bundle);
  Session session(bundle);
  session.initialize(7);
  Decoder d(session);
  auto states = d.passStates(kPrompt, 3);
  ASSERT_EQ(states.size(), 3u);
  for (const auto &s : states)
    EXPECT_EQ((int64_t)s.size(), (int64_t)kPrompt.size() * d.width());
  // Pass 2 reads pass 1's states: they differ.
  EXPECT_NE(states[0], states[1]);
}

} // namespace
