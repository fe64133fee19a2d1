//===- LogitControls.h - what a request does to a row's logits ----*- C++ -*-===//
//
// OpenAI's logit_bias, presence_penalty and frequency_penalty, applied to a
// row's logits before it samples:
//   logits[j] + bias[j] - presence * (count[j] > 0) - frequency * count[j]
// with count[j] the times token j was generated so far in this completion
// (the prompt's tokens do not count, as in vLLM). And the log-probabilities
// of what was chosen, taken from the model's own distribution (the logits
// before bias, penalties and temperature), as OpenAI's logprobs report them.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_DECODE_LOGITCONTROLS_H
#define FBT_RUNTIME_DECODE_LOGITCONTROLS_H

#include <cstdint>
#include <map>
#include <unordered_map>
#include <utility>
#include <vector>

namespace fbt {

struct LogitControls {
  std::map<int32_t, double> bias; ///< logit_bias: token id -> -100..100
  double presencePenalty = 0;     ///< presence_penalty, -2..2
  double frequencyPenalty = 0;    ///< frequency_penalty, -2..2

  bool any() const {
    return !bias.empty() || presencePenalty != 0 || frequencyPenalty != 0;
  }
};

/// How often each token was generated so far.
using TokenCounts = std::unordered_map<int32_t, int64_t>;

/// `logits` (vocab of them) with `controls` applied for `counts`.
std::vector<float> controlledLogits(const float *logits, int64_t vocab,
                                    const LogitControls &controls,
                                    const TokenCounts &counts);

/// A chosen token's log-probability and the likeliest tokens' (likeliest
/// first, ties by id).
struct ChosenLogprob {
  int32_t id = 0;
  double logprob = 0;
  std::vector<std::pair<int32_t, double>> top;
};

/// log softmax(logits) at `chosen`, and the `top` likeliest tokens (0: none),
/// computed in double precision.
ChosenLogprob chosenLogprob(const float *logits, int64_t vocab, int32_t chosen,
                            int64_t top);

} // namespace fbt

#endif // FBT_RUNTIME_DECODE_LOGITCONTROLS_H
