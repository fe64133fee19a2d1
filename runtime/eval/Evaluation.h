//===- Evaluation.h - held-out losses, tasks and contraction ----*- C++ -*-===//
//
// What `fbt eval` measures, always in inference mode (no jitter, no prefix
// mix-in), on windows of held-out tokens:
//  - per pass: the compiled eval_k<K> step's loss of passes 1..K over whole
//    windows, the state fed back from t = 1 (passes k > 1 see the states of
//    pass k - 1, as training's passes do);
//  - per regime: each window's first part is a plain prompt, the rest a
//    continuation teacher-forced through the compiled decoder (standard,
//    soft = the exact recurrence, fused:N); the loss of the continuation's
//    tokens, and bits per byte for byte-level data;
//  - beside each loss its standard error: over windows (per regime; per pass
//    over batches of windows, the eval step's unit), and over documents (the
//    windows grouped by the document they start in, a cluster standard
//    error, which is the honest one when a few long documents make up the
//    part); and each regime's paired difference from standard on the same
//    windows, with its standard error.
// The windows are spread evenly over the whole part (ValBatches), never its
// first bytes alone.
//  - tasks: exact-match accuracy of greedy answers per regime on problems
//    the training text does not hold (runtime/eval/Tasks.h);
//  - contraction: how fast the feedback map's passes converge over a prompt,
//    ||s_{k+1} - s_k|| / ||s_k||, and the state's RMS along a soft generation.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_EVAL_EVALUATION_H
#define FBT_RUNTIME_EVAL_EVALUATION_H

#include "runtime/base/Json.h"
#include "runtime/decode/Decoder.h"
#include "runtime/session/Session.h"
#include "runtime/text/TokenStream.h"

#include <functional>
#include <string>
#include <vector>

namespace fbt {

struct LossOptions {
  int64_t windows = 0;         ///< held-out windows, spread (0: every window;
                               ///< rounded up to whole batches)
  double promptFraction = 0.25; ///< of each window, the plain prompt
  int64_t passes = 8;          ///< passes reported (at most the eval step's K)
  std::vector<Regime> regimes; ///< empty: standard, soft, fused:2, fused:3
  bool byteLevel = true;       ///< one token per byte: report bits per byte
};

/// A mean loss and its standard errors.
struct MeanLoss {
  double loss = 0;        ///< mean nats per token
  double se = 0;          ///< over windows (per pass: over batches of windows)
  double seDocuments = 0; ///< over documents (cluster); 0 with one document
};

struct RegimeLoss {
  std::string name; ///< "standard", "soft", "fused:2", ...
  MeanLoss loss;    ///< over continuation tokens
  double bpb = -1;  ///< bits per byte; < 0 when unknown (not byte-level)
  /// loss - standard's, window by window (absent for standard itself).
  MeanLoss minusStandard;
};

struct LossReport {
  std::vector<MeanLoss> passes;   ///< loss of pass 1..N over whole windows
  std::vector<RegimeLoss> regimes;
  int64_t windows = 0, windowLength = 0, promptLength = 0;
  int64_t windowsInPart = 0;      ///< the non-overlapping windows the part holds
  int64_t documents = 0;          ///< documents the scored windows start in
  int64_t batchWindows = 0;       ///< windows per eval batch (the passes' unit)
  int64_t tokens = 0;             ///< continuation tokens scored per regime
};

/// `progress(done, total)` is called as windows are scored.
/// The regimes fbt eval measures unless told: standard, soft, fused:2 and
/// fused:3, or standard alone for a model without a feedback path.
std::vector<Regime> defaultRegimes(const Bundle &bundle);

/// `heldOut`'s documents begin with the model's BOS id.
LossReport evaluateLosses(Session &session, const TokenStream &heldOut,
                          const LossOptions &options,
                          const std::function<void(int64_t, int64_t)> &progress = {});

/// `count` windows of `length` tokens spread evenly over `part` (the first
/// at its start, the last at its end); `part` holds at least `length`.
std::vector<std::vector<int32_t>> spreadWindows(const TokenStream &part, int64_t count,
                                                int64_t length);

/// How the fused passes converge and whether the soft recurrence stays
/// bounded, measured so that it could come out otherwise: fused pass k is
/// exact below position k by causality (its inputs there are the exact
/// states of pass k - 1), so a ratio over all positions shrinks toward 0 as k
/// nears the prompt's length whatever the map does. `ratios` is taken over
/// the positions pass k + 1 can still change (t >= k) alone.
struct ContractionOptions {
  int64_t prompts = 64;   ///< windows spread over the part, each starting a document
  int64_t passes = 64;    ///< >= 2; at most the prompt's length is used
  int64_t generate = 500; ///< greedy soft tokens after the first prompt, within the context
  /// teacher-forced sequences of the bundle's whole context (soft and
  /// standard, the per-position loss); 0 for none
  int64_t sequences = 16;
};

struct ContractionReport {
  int64_t prompts = 0;
  int64_t promptLength = 0; ///< the horizon: each prompt's tokens
  /// ratios[k-1]: the mean over prompts of ||s_{k+1} - s_k|| / ||s_k|| over
  /// positions t >= k; ratiosSe its standard error over the prompts.
  std::vector<double> ratios, ratiosSe;
  /// The same over every position (the exact ones too): what a by-causality
  /// tail looks like, beside it.
  std::vector<double> ratiosAllPositions;
  /// The carried state's RMS after each token of a greedy soft generation
  /// after the first prompt.
  std::vector<double> stateRms;
  /// Teacher-forced over `sequences` windows of the whole context: the mean
  /// loss (nats) of each position's next token under soft decoding (the
  /// state fed back at every step) and under standard decoding.
  int64_t sequences = 0;
  std::vector<double> softLoss, standardLoss;
};

/// `fbt eval --contraction` over a held-out part (its documents begin with
/// the model's BOS id); a model with a feedback path.
ContractionReport evaluateContractionOn(Session &session, const TokenStream &heldOut,
                                        const ContractionOptions &options);

Json toJson(const LossReport &r);
Json toJson(const ContractionReport &r);

} // namespace fbt

#endif // FBT_RUNTIME_EVAL_EVALUATION_H
