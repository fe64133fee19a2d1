//===- LayerProbes.h - what each layer of a model can read -----*- C++ -*-===//
//
// fbt probe's measure, for the CLI and the Python module alike: windows
// spread over a held-out part go through plain prefill and the fused passes
// (prefill_states, prefill_fused_states: fbtc --with-states); at every layer
// of every pass a ridge probe (Probe.h) reads each target off the residual
// stream. Windows are split 3:1:1 into the probe's train, validation (its
// regularization) and test (its R^2) parts; random features of the same
// width give the floor. `soft` adds the states soft decoding carries,
// teacher-forced: with the feedback from t = 1 and no jitter, fused pass k
// is exact for positions below k, so pass T (the window's length) is the
// soft recurrence at every position. Each fused pass's layers are scored
// beside the state the pass was handed (the previous pass's carried state at
// t-1): its layer 0 holds that state by construction, so only reading more
// than it says a layer computed something from it.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_EVAL_LAYERPROBES_H
#define FBT_RUNTIME_EVAL_LAYERPROBES_H

#include "runtime/base/Json.h"
#include "runtime/eval/Probe.h"
#include "runtime/session/Session.h"
#include "runtime/text/TokenStream.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fbt {

struct LayerProbeOptions {
  /// default: depth, indent, letter
  std::vector<probe::Target> targets = {probe::Target::Depth, probe::Target::Indent,
                                        probe::Target::Letter};
  int64_t passes = 0;  ///< plain prefill and fused passes up to this; 0: 8, or 1 without feedback
  bool soft = false;   ///< also the soft recurrence (fused pass T)
  int64_t windows = 96;
  uint64_t seed = 1;   ///< the random features'
};

/// "depth,indent" -> the targets; a RuntimeError naming the choices else.
std::vector<probe::Target> parseProbeTargets(const std::string &list);

/// Probes of every layer of `session` (a bytes model, compiled with states)
/// on `options.windows` windows of `part` (named `partLabel` in the result):
/// fbt probe --json's object, {split, windows, positions, layers, targets:
/// {name: {test_r2 | test_accuracy: {regime: [per layer]}, handed_state:
/// {fused regime: score}, positions, random[, majority]}}}. Throws a
/// RuntimeError on options the model cannot take (passes or soft without
/// feedback, fewer than 5 windows, a part shorter than a window, another
/// tokenizer than bytes).
Json probeLayers(Session &session, const TokenStream &part, const std::string &partLabel,
                 const LayerProbeOptions &options);

} // namespace fbt

#endif // FBT_RUNTIME_EVAL_LAYERPROBES_H
