//===- Sampler.h - a token from the logits ------------------------*- C++ -*-===//
//
// Greedy, or temperature sampling within the top k and the top-p nucleus.
// A draw is a pure function of (seed, counter), so a sequence samples the
// same tokens whatever rows it shares a decode step with.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_DECODE_SAMPLER_H
#define FBT_RUNTIME_DECODE_SAMPLER_H

#include <cstdint>

namespace fbt {

struct SamplingOptions {
  double temperature = 0; ///< 0: greedy
  int64_t topK = 0;       ///< 0: off
  double topP = 1.0;      ///< 1: off
  uint64_t seed = 0;
};

/// A RuntimeError unless temperature >= 0, top-k >= 0 and 0 < top-p <= 1.
void checkSampling(const SamplingOptions &options);

/// The token `options` choose from `vocab` logits; `counter` numbers the
/// draw within the sequence (its uniform is rng::uniform(seed, ., counter)).
int32_t sampleToken(const float *logits, int64_t vocab, const SamplingOptions &options,
                    uint64_t counter);

} // namespace fbt

#endif // FBT_RUNTIME_DECODE_SAMPLER_H
