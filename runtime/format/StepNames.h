//===- StepNames.h - the names of a bundle's compiled steps -------*- C++ -*-===//
//
// One definition of the step names, shared by the compiler (the frontend
// names the functions it builds, fbt-optimizer its gradient-only copies)
// and the runtime (sessions, the decoder and the tuner look steps up):
//
//   train_k<K>          K passes: forward, backward, clipping and AdamW
//   train_k<K>_grads    the same loss and gradients, without the update
//   eval_k<K>           inference-mode losses of K passes (no jitter, no
//                       prefix mix-in, no gradients)
//   prefill[_fused][_row][_t<T>]
//                       the prompt's plain pass (fused: passes 2..n into a
//                       fresh KV cache), over the decode batch or one row of
//                       it, over the longest prompt or T positions
//   prefill_states, prefill_fused_states
//                       prefill and prefill_fused that also return every
//                       layer's residual stream (residual.0 .. residual.L:
//                       each block's input, then the top-layer state);
//                       compiled on request (fbtc --with-states), for probes
//   decode_step, decode_step_plain
//                       one token per row, with and without the feedback
//   mixed_n<N>          N tokens of any rows of the decode batch, each at
//                       its own row and position: the running rows' next
//                       tokens beside the joining rows' prompt chunks
//
// Header-only and dependency-free, so the compiler can include it.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_FORMAT_STEPNAMES_H
#define FBT_RUNTIME_FORMAT_STEPNAMES_H

#include <cstdint>
#include <string>

namespace fbt::step {

constexpr const char kGradsSuffix[] = "_grads";
constexpr const char kDecode[] = "decode_step";
constexpr const char kDecodePlain[] = "decode_step_plain";

inline std::string train(int64_t passes) { return "train_k" + std::to_string(passes); }
inline std::string trainGrads(int64_t passes) { return train(passes) + kGradsSuffix; }
inline std::string eval(int64_t passes) { return "eval_k" + std::to_string(passes); }

/// "prefill", "prefill_fused", "prefill_row_t64", ...: `row`, one row of
/// the decode batch; `length`, T positions (always one row's), 0 for the
/// longest prompt.
inline std::string prefill(bool fused, bool row = false, int64_t length = 0) {
  std::string name = fused ? "prefill_fused" : "prefill";
  if (row || length > 0)
    name += "_row";
  if (length > 0)
    name += "_t" + std::to_string(length);
  return name;
}

/// "prefill_states", "prefill_fused_states" (fbtc --with-states).
inline std::string prefillStates(bool fused) {
  return fused ? "prefill_fused_states" : "prefill_states";
}
/// The result holding layer `l`'s input (l = L: the top-layer state).
inline std::string residual(int64_t l) { return "residual." + std::to_string(l); }

/// The KV caches a prefill, decode or mixed step takes and updates in place:
/// kKeyCache + l and kValueCache + l for each layer l.
constexpr const char kKeyCache[] = "k_cache.";
constexpr const char kValueCache[] = "v_cache.";
/// The layer of cache buffer `name`, `values` set where it holds values;
/// -1 where `name` is no cache.
inline int64_t cacheLayer(const std::string &name, bool &values) {
  for (const char *kind : {kKeyCache, kValueCache})
    if (name.rfind(kind, 0) == 0) {
      values = kind == kValueCache;
      return std::stoll(name.substr(std::string(kind).size()));
    }
  return -1;
}

namespace detail {
/// The decimal number `name` holds after `prefix` and before `suffix`, or 0.
inline int64_t numberBetween(const std::string &name, const std::string &prefix,
                             const std::string &suffix) {
  if (name.size() <= prefix.size() + suffix.size() || name.compare(0, prefix.size(), prefix) ||
      name.compare(name.size() - suffix.size(), suffix.size(), suffix))
    return 0;
  std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
  if (digits.size() > 9 || digits[0] == '0')
    return 0;
  for (char c : digits)
    if (c < '0' || c > '9')
      return 0;
  return std::stoll(digits);
}
} // namespace detail

/// The K of train_k<K>, train_k<K>_grads or eval_k<K>; 0 for any other name.
inline int64_t passesOf(const std::string &name) {
  if (int64_t k = detail::numberBetween(name, "train_k", ""))
    return k;
  if (int64_t k = detail::numberBetween(name, "train_k", kGradsSuffix))
    return k;
  return detail::numberBetween(name, "eval_k", "");
}

/// "mixed_n256": a mixed batch of `tokens` tokens.
inline std::string mixed(int64_t tokens) { return "mixed_n" + std::to_string(tokens); }

/// The N of mixed_n<N>; 0 for any other name.
inline int64_t mixedTokens(const std::string &name) {
  return detail::numberBetween(name, "mixed_n", "");
}

/// The T of prefill_row_t<T> (a one-row plain prefill of T positions); 0
/// for any other name.
inline int64_t rowPrefillLength(const std::string &name) {
  return detail::numberBetween(name, "prefill_row_t", "");
}

} // namespace fbt::step

#endif // FBT_RUNTIME_FORMAT_STEPNAMES_H
