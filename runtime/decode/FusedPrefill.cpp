//===- FusedPrefill.cpp - fused:N's passes over one prompt ----------------===//

#include "runtime/decode/FusedPrefill.h"

#include "runtime/base/Error.h"

#include <algorithm>

namespace fbt {

FusedPrefill::FusedPrefill(const Regime &regime, int64_t length, int64_t width)
    : passes_(regime.prefillPasses()), length_(length), width_(width) {
  if (length < 1 || width < 1)
    throw RuntimeError("a fused prefill needs a prompt and a state width");
}

const float *FusedPrefill::fed(const std::vector<int32_t> &prompt, int64_t t,
                               int32_t bos) const {
  if (pass_ == 1 || finished() || !feedsAt(prompt, t, bos) || before_.empty())
    return nullptr;
  return before_.data() + (t - 1) * width_;
}

int64_t FusedPrefill::advance(int64_t n, const float *states) {
  if (finished())
    return 0;
  n = std::max<int64_t>(0, std::min(n, length_ - prefilled_));
  if (states && keepsStates()) {
    now_.resize(length_ * width_);
    std::copy_n(states, n * width_, now_.begin() + prefilled_ * width_);
  }
  prefilled_ += n;
  if (prefilled_ == length_) { // again over the prompt, fed this pass's states
    ++pass_;
    prefilled_ = 0;
    std::swap(before_, now_);
    now_.clear();
    if (finished())
      before_.clear();
  }
  return n;
}

} // namespace fbt
