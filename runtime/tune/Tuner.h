//===- Tuner.h - choosing kernel variants and GEMM algorithms ----*- C++ -*-===//
//
// `fbt tune` on the device at hand. A bundle compiled with --tune-space
// holds several builds (variants) of its kernels. The tuner runs the real
// steps (training, evaluation, prefill and decode, on synthetic tokens) with
// a CallProbe on every runner: before a call of a kernel that has variants
// runs, it saves the call's arguments, runs the default and every variant on
// them (restoring the arguments before each), rejects a variant whose
// results differ from the default's beyond the tolerance of their type, and
// times the rest (warm-up, then the median of repeats). On a GPU it does the
// same for each GEMM shape over cuBLASLt's heuristic candidates. A kernel's
// time is its sampled calls' medians, weighted by how often each step calls
// it; the fastest variant wins if it beats the default by kMinGain, ties
// going to the earlier variant. Then it times each workload with the
// defaults and with the choice, alternating; one the choice slows down gets
// the defaults back for what its steps call. The choice goes into the
// device's tune cache.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_TUNE_TUNER_H
#define FBT_RUNTIME_TUNE_TUNER_H

#include "runtime/base/Median.h"
#include "runtime/format/Bundle.h"
#include "runtime/format/TuneCache.h"
#include "runtime/hal/Device.h"
#include "runtime/tune/Timing.h"

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

namespace fbt {

class Session;

/// A hash of what a cache entry's choices depend on: the bundle's kernel
/// binaries, its variant table and its target.
std::string bundleKey(const Bundle &bundle);

/// What a command does with the tune cache (--tune-cache FILE, --no-tune).
struct TuneOptions {
  bool enabled = true;
  std::string path; ///< empty: the device's default file
};

/// The choice for `bundle` from the cache, or none. Never throws: a missing
/// default file is silence; a stale, foreign or corrupt one is a one-line
/// warning on stderr and the defaults. `note` gets the line to print when
/// an entry applies.
KernelChoice loadKernelChoice(const Bundle &bundle, const Json &deviceKey,
                              const TuneOptions &options, std::string &note,
                              std::vector<TunedGemm> *gemms = nullptr);

/// Runs the kernels (and GEMM algorithms) the tune cache chose for the
/// session's bundle on its device, saying so on stderr; call before any step
/// runs. A missing, stale, foreign or corrupt cache leaves the defaults (with
/// a warning); a bundle compiled with fbtc --tuned uses its own choice.
/// Returns whether a choice applies.
bool useTuning(Session &session, const TuneOptions &options);

/// A variant must beat the default by this factor to be chosen.
constexpr double kMinGain = 1.02;


/// One variant's measurement; `seconds` summed over the kernel's weighted
/// calls, negative when it was rejected.
struct VariantTiming {
  std::string symbol;
  std::map<std::string, int64_t> config;
  double seconds = 0;
  std::string rejected; ///< why, if rejected
};

/// The index of the variant to use: the fastest accepted one if it beats
/// timings[0] (the default) by kMinGain, else 0. Ties go to the earlier.
size_t chooseVariant(const std::vector<VariantTiming> &timings);

struct KernelTuning {
  std::string kernel;
  std::vector<VariantTiming> variants; ///< the default first
  size_t chosen = 0;
  double speedup = 1; ///< default's seconds over the chosen one's
  bool measured = false; ///< false: never called, or out of budget
  std::string reverted;  ///< why the default was put back, if it was
};

struct GemmTuning {
  std::string shape;
  int algorithms = 0; ///< candidates tried
  int chosen = 0;
  double speedup = 1;
  std::vector<std::string> rejected; ///< "algorithm 3: why"
  std::string reverted;              ///< why algorithm 0 was put back, if it was
};

struct StepTiming {
  double defaultSeconds = 0, tunedSeconds = 0;
};

/// What to put back to the default after the step-level comparison: for
/// each workload the choice made slower by more than kMinGain, every key of
/// `calls[workload]` (kernels, "gemm:<shape>") that is in `chosen`, with why.
std::map<std::string, std::string>
choicesToPutBack(const std::map<std::string, StepTiming> &steps,
                 const std::map<std::string, std::set<std::string>> &calls,
                 const std::set<std::string> &chosen);

struct TuneReport {
  std::string device, cachePath, bundleKey;
  std::vector<KernelTuning> kernels;
  std::vector<GemmTuning> gemms;
  std::map<std::string, StepTiming> steps; ///< per workload ("train_k2", "decode:soft")
  std::vector<std::string> untimed;        ///< workloads the budget left out
  bool outOfBudget = false;                ///< some kernels were not measured
  /// The cache entry: every measured kernel's choice and every GEMM's.
  TuneEntry entry(const Bundle &bundle) const;
  Json toJson() const;
};

/// Tunes `bundlePath` on the device that runs it.
TuneReport tuneBundle(const std::string &bundlePath, const TuneSettings &settings);

} // namespace fbt

#endif // FBT_RUNTIME_TUNE_TUNER_H
