//===- RopeScaling.h - Hugging Face's rope_scaling types -----------*- C++ -*-===//
//
// One definition of the RoPE scaling types fbt takes, shared by the compiler
// (the spec and the rope ops it builds), the Llama importer and exporters,
// and the PyTorch reference's twin (test/reference/fbt_reference.py):
//
//   linear   every position divided by the factor (position interpolation):
//            positions up to factor x the trained ones turn by angles the
//            model has seen.
//   dynamic  NTK-aware scaling: the base grows instead, so low frequencies
//            stretch and high ones stay. Hugging Face's transformers
//            recomputes the base from each call's sequence length L (past
//            the original max_position_embeddings P):
//              base * (factor * L / P - (factor - 1))^(d / (d - 2)),
//            d the rotated head width. A compiled step has a fixed shape, so
//            fbt fixes L at the extended length factor * P, as vLLM does:
//              base * (factor^2 - factor + 1)^(d / (d - 2)).
//            Equal to transformers at L = factor * P; shorter sequences turn
//            slower than transformers would turn them.
//
// Header-only and dependency-free, so the compiler can include it.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_FORMAT_ROPESCALING_H
#define FBT_RUNTIME_FORMAT_ROPESCALING_H

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>

namespace fbt {

enum class RopeScalingType { Linear, Dynamic };

/// "linear" or "dynamic"; nullopt for any other name (refused by the caller,
/// naming it).
inline std::optional<RopeScalingType> parseRopeScalingType(const std::string &name) {
  if (name == "linear")
    return RopeScalingType::Linear;
  if (name == "dynamic")
    return RopeScalingType::Dynamic;
  return std::nullopt;
}

inline const char *ropeScalingTypeName(RopeScalingType t) {
  return t == RopeScalingType::Linear ? "linear" : "dynamic";
}

/// The supported names, for errors.
constexpr const char kRopeScalingTypes[] = "linear, dynamic";

/// A model's rope_scaling: none when the factor is 1.
struct RopeScaling {
  RopeScalingType type = RopeScalingType::Linear;
  double factor = 1.0;

  bool enabled() const { return factor != 1.0; }
  /// What positions are multiplied by before their angles (fbt.rope's
  /// position_scale).
  double positionScale() const {
    return type == RopeScalingType::Linear ? 1.0 / factor : 1.0;
  }
  /// The base the angles use, for a head of `headDim` channels.
  double theta(double base, int64_t headDim) const {
    if (type == RopeScalingType::Linear || !enabled())
      return base;
    double d = (double)headDim;
    return base * std::pow(factor * factor - factor + 1.0, d / (d - 2.0));
  }
};

} // namespace fbt

#endif // FBT_RUNTIME_FORMAT_ROPESCALING_H
