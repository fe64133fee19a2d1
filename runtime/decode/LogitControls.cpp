//===- LogitControls.cpp - bias, penalties and log-probabilities ----------===//

#include "runtime/decode/LogitControls.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace fbt {

std::vector<float> controlledLogits(const float *logits, int64_t vocab,
                                    const LogitControls &controls,
                                    const TokenCounts &counts) {
  std::vector<float> out(logits, logits + vocab);
  for (const auto &[id, bias] : controls.bias)
    if (id >= 0 && id < vocab)
      out[id] += (float)bias;
  if (controls.presencePenalty != 0 || controls.frequencyPenalty != 0)
    for (const auto &[id, count] : counts)
      if (id >= 0 && id < vocab && count > 0)
        out[id] -= (float)(controls.presencePenalty +
                           controls.frequencyPenalty * (double)count);
  return out;
}

ChosenLogprob chosenLogprob(const float *logits, int64_t vocab, int32_t chosen,
                            int64_t top) {
  double m = -INFINITY;
  for (int64_t j = 0; j < vocab; ++j)
    m = std::max(m, (double)logits[j]);
  double sum = 0;
  for (int64_t j = 0; j < vocab; ++j)
    sum += std::exp((double)logits[j] - m);
  double lse = m + std::log(sum);
  ChosenLogprob out;
  out.id = chosen;
  out.logprob = (double)logits[chosen] - lse;
  top = std::min<int64_t>(top, vocab);
  if (top <= 0)
    return out;
  std::vector<int32_t> ids(vocab);
  std::iota(ids.begin(), ids.end(), 0);
  std::partial_sort(ids.begin(), ids.begin() + top, ids.end(), [&](int32_t a, int32_t b) {
    return logits[a] != logits[b] ? logits[a] > logits[b] : a < b;
  });
  for (int64_t k = 0; k < top; ++k)
    out.top.push_back({ids[k], (double)logits[ids[k]] - lse});
  return out;
}

} // namespace fbt
