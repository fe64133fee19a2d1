//===- FusedPrefill.h - fused:N's passes over one prompt -------*- C++ -*-===//
//
// fused:N prefills a prompt N times: pass 1 plain, each pass after it fed at
// position t (t > 0, not a document start) the state the pass before carried
// at t - 1, as training's passes are fed. This is the one owner of that
// schedule. The decoder drives it a whole pass at a time, on the device
// (prefill_fused reads the pass before's states where they lie, and applies
// the same feed rule in its mask); the serving engine drives it a chunk at a
// time inside mixed steps, and the plan keeps the pass before's states on the
// host for it.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_DECODE_FUSEDPREFILL_H
#define FBT_RUNTIME_DECODE_FUSEDPREFILL_H

#include "runtime/decode/Regime.h"

#include <cstdint>
#include <vector>

namespace fbt {

class FusedPrefill {
public:
  /// `regime`'s passes (1 for standard and soft) over a prompt of `length`
  /// positions whose carried states are `width` wide.
  FusedPrefill(const Regime &regime, int64_t length, int64_t width);

  /// Whether a fused pass feeds position `t` of `prompt` the state of the
  /// pass before: not at its start nor at a document start (`bos`).
  static bool feedsAt(const std::vector<int32_t> &prompt, int64_t t, int32_t bos) {
    return t > 0 && prompt[t] != bos;
  }

  int64_t pass() const { return pass_; }      ///< 1..passes(); passes() + 1 when finished
  int64_t passes() const { return passes_; }
  bool finished() const { return pass_ > passes_; }
  /// Positions of this pass already in.
  int64_t prefilled() const { return prefilled_; }
  /// Whether another pass follows this one: then it reads this pass's states.
  bool keepsStates() const { return pass_ < passes_; }
  /// The state this pass feeds position `t` of `prompt` ([width]), or null
  /// where it feeds none (pass 1, or feedsAt false). Needs the chunked
  /// driver's states (advance with them).
  const float *fed(const std::vector<int32_t> &prompt, int64_t t, int32_t bos) const;

  /// This pass's next `n` positions went in (clamped to what is left), with
  /// their carried states ([n, width]) when keepsStates() and the driver
  /// keeps them here (null: the decoder's, on the device). At the prompt's
  /// end the next pass begins. Returns the positions taken.
  int64_t advance(int64_t n, const float *states = nullptr);

private:
  int64_t passes_, length_, width_;
  int64_t pass_ = 1, prefilled_ = 0;
  std::vector<float> before_, now_; ///< the pass before's states, this one's so far
};

} // namespace fbt

#endif // FBT_RUNTIME_DECODE_FUSEDPREFILL_H
