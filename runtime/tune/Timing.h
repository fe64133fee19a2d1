//===- Timing.h - what measuring a choice takes ------------------*- C++ -*-===//
//
// The pieces of fbt tune that the measuring probe (Measurer.h) and the
// tuner (Tuner.h) share: the settings a run is given, timing alternatives
// interleaved, and whether an alternative's results match the default's.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_TUNE_TIMING_H
#define FBT_RUNTIME_TUNE_TIMING_H

#include "runtime/base/DType.h"

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace fbt {

/// Whether `got` matches `want` (elements of `type`, `bytes` long): f32
/// within 1e-4 + 1e-3 |want|, bf16 within 1e-2 + 2^-6 |want|, f16 within
/// 1e-3 + 2^-9 |want|, integers exactly; NaN only where NaN. Otherwise
/// `why` says where.
bool resultsMatch(DType type, const void *want, const void *got, size_t bytes,
                  std::string &why);

/// Times `run(i)` for each of `count` alternatives: `warmup` untimed runs,
/// then `repeats` timed ones each, `restore()` (untimed) before every run.
/// Alternatives are interleaved round by round so that drift hits all
/// alike. Returns each one's median seconds, by `clock`.
std::vector<double> timeAlternatives(size_t count, const std::function<void(size_t)> &run,
                                     const std::function<void()> &restore,
                                     const std::function<double()> &clock, int warmup,
                                     int repeats);

struct TuneSettings {
  std::vector<std::string> steps; ///< plan steps to probe; empty: all
  /// For measuring (kernels not reached keep their defaults), and again
  /// for timing the steps before and after (the rest are left untimed).
  double budgetSeconds = 120;
  int warmup = 1, repeats = 5;    ///< per variant and sampled call
  int callsPerStep = 2;           ///< sampled calls of a kernel per step
  int stepRepeats = 3;            ///< timed runs of each step, twice before and after
  std::function<double()> clock;  ///< seconds; steady_clock when empty
  bool progress = true;           ///< a progress line on stderr
  std::string cachePath;          ///< empty: the device's default file
};

} // namespace fbt

#endif // FBT_RUNTIME_TUNE_TIMING_H
