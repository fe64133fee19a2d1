//===- Regime.h - the decoding regimes by name -------------------*- C++ -*-===//
//
// The three ways of decoding the same weights (runtime/decode/Decoder.h runs
// them).
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
  /// The passes a prompt's prefill runs: n for fused:n, else 1.
  int64_t prefillPasses() const { return kind == Kind::Fused ? passes : 1; }
};

} // namespace fbt

#endif // FBT_RUNTIME_DECODE_REGIME_H
