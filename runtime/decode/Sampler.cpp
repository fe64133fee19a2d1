//===- Sampler.cpp - a token from the logits -------------------------------===//

#include "runtime/decode/Sampler.h"

#include "runtime/base/Error.h"
#include "runtime/base/Random.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <vector>

namespace fbt {

void checkSampling(const SamplingOptions &s) {
  if (!(s.temperature >= 0) || s.topK < 0 || !(s.topP > 0) || s.topP > 1)
    throw RuntimeError("sampling options: temperature >= 0, top-k >= 0, "
                       "0 < top-p <= 1");
}

int32_t sampleToken(const float *logits, int64_t vocab, const SamplingOptions &s,
                    uint64_t counter) {
  if (s.temperature <= 0)
    return (int32_t)(std::max_element(logits, logits + vocab) - logits);
  std::vector<int32_t> order(vocab);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(),
            [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  int64_t keep = s.topK > 0 ? std::min<int64_t>(s.topK, vocab) : vocab;
  std::vector<double> p(keep);
  double total = 0;
  for (int64_t i = 0; i < keep; ++i) {
    p[i] = std::exp((logits[order[i]] - logits[order[0]]) / s.temperature);
    total += p[i];
  }
  // Nucleus: the smallest prefix holding top_p of the mass.
  double mass = 0;
  int64_t cut = keep;
  for (int64_t i = 0; i < keep; ++i) {
    mass += p[i] / total;
    if (mass >= s.topP) {
      cut = i + 1;
      break;
    }
  }
  double sum = std::accumulate(p.begin(), p.begin() + cut, 0.0);
  double u = rng::uniform(s.seed, 0x5A3D, counter) * sum;
  for (int64_t i = 0; i < cut; ++i) {
    if (u < p[i])
      return order[i];
    u -= p[i];
  }
  return order[cut - 1];
}

} // namespace fbt
