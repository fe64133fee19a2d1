//===- Regime.h - the decoding regimes and sampling options -----*- C++ -*-===//
//
// The three ways of decoding the same weights (runtime/decode/Decoder.h runs them)
// and how a token is chosen from the logits.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_DECODE_REGIME_H
#define FBT_RUNTIME_DECODE_REGIME_H

#include <cstdint>
#include <string>

namespace fbt {

struct Regime {
  enum class Kind { Standard, Soft, Fused };
  Kind kind = Kind::Standard;
  int64_t passes = 2; ///< fused:n: n

  /// "standard", "soft", "fused" (= fused:2) or "fused:3": the one spelling
  /// every command, the API and the reports use (name() writes it).
  static Regime parse(const std::string &text);
  std::string name() const;
};

struct SamplingOptions {
  double temperature = 0; ///< 0: greedy
  int64_t topK = 0;       ///< 0: off
  double topP = 1.0;      ///< 1: off
  uint64_t seed = 0;
};

} // namespace fbt

#endif // FBT_RUNTIME_DECODE_REGIME_H
