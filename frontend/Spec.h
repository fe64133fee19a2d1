//===- Spec.h - FBT model specs (JSON) --------------------------*- C++ -*-===//
//
// A model spec is the JSON a user writes: HF-config-like keys for the
// transformer, plus a `feedback` section (the FBT path) and a `training`
// section (schedule, optimizer, batch). Defaults follow DESIGN.md section 2.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_FRONTEND_SPEC_H
#define FBT_FRONTEND_SPEC_H

#include "runtime/format/Kinds.h"
#include "runtime/format/RopeScaling.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fbt {

/// Which top-layer state is carried to the next position: the residual
/// stream before the final norm, or the final norm's output (what the LM
/// head reads).
enum class StateSource { PreNorm, PostNorm };

llvm::StringRef stateSourceName(StateSource s);

/// How the feedback weights (W_U, W_G, W) start: N(0, std^2), or
/// U(-sqrt(3) std, sqrt(3) std) (the same variance).
enum class FeedbackInit { Normal, Uniform };

llvm::StringRef feedbackInitName(FeedbackInit i);

/// The defaults the feedback and training sections start from (a spec's
/// top-level "recipe", or fbtc --recipe); every key a spec gives overrides
/// them, so each difference between the two is one key away:
///   fbt    the measured default: u = e + (W_U s) * sigmoid(W_G norm(e)),
///          s after the final norm, 25% single-pass steps, then K uniform
///          over 2..8 with gradients through the last 2 passes;
///   paper  the method as its paper states it (DESIGN.md section 7):
///          u = (W_U h) * sigmoid(W_G e), h before the final norm, prefix
///          mix-in, gradients through every pass, 75% of the steps single-
///          pass, then K = 2 or 3 at 22 : 3 (75/22/3 of all batches).
enum class Recipe { Fbt, Paper };

llvm::StringRef recipeName(Recipe r);

struct FeedbackSpec;
struct TrainingSpec;
/// Sets the fields `r` gives defaults for (the pass distribution is the
/// one resolveDefaults applies when a spec names no K).
void applyRecipe(Recipe r, FeedbackSpec &fb, TrainingSpec &t);

struct FeedbackSpec {
  Fusion fusion = Fusion::Glu;
  /// Noise amplitude on the carried state in training: s += jitter * U(-1,1).
  double jitter = 0.02;
  /// Residual branch scale `a`; the default is 1/sqrt(2L) (resolved on load).
  double depthScaling = 0;
  bool detachState = false;
  /// lambda in L = L_1 + lambda * mean(L_2..L_K).
  double auxLossWeight = 1.0;
  /// Per-document plain-prefix length 1 + floor(U * doc_len) in training.
  /// Off by default: measured, the feedback regimes lose more than the
  /// standard one gains (the state is fed back from t = 1 otherwise).
  bool prefixMixin = false;

  // The recipe: which state is carried, and the scale-free RMS norms
  // (fbt.normalize) around the fusion. The default, measured with fbt eval:
  //   u = e + (W_U s) * sigmoid(W_G norm(e)),  s = RMSNorm_f(h)
  // the token on the value path too (token_residual), so that a fed-back
  // input starts as the plain one plus a small state term. Normalizing the
  // plain inputs (input_norm) costs the plain model much (tiny: 0.89 ->
  // 1.53 nats), so plain inputs stay raw embeddings.
  StateSource state = StateSource::PostNorm;
  bool inputNorm = false; ///< plain inputs are norm(e)
  bool gateNorm = true;   ///< the gate reads norm(e)
  bool stateNorm = false; ///< the value path reads norm(s)
  bool outputNorm = false; ///< the fused input is norm(fuse(e, s))
  /// The plain input added to the fused one (before its norm, if any), so a
  /// fed-back position always carries its token on the value path too and
  /// the map from state to input starts near identity in the token (glu
  /// only).
  bool tokenResidual = true;
  FeedbackInit init = FeedbackInit::Normal;
  /// Standard deviation of the feedback weights' init; 0 = the default
  /// (1/sqrt(hidden_size) for uniform, 0.02 for normal), resolved on load.
  double initStd = 0;
};

struct TrainingSpec {
  // Progressive schedule: K=1 for the first `singlePassFraction` of the
  // steps, then K drawn from `passDistribution` (by default uniform over
  // 2..8, measured to make the feedback map converge), or, when `passes`
  // is given, K=`passes` with `deepPassFraction` of the batches at
  // K=`deepPasses` (`deepPasses` defaults to `passes` + 1 on load).
  double singlePassFraction = 0.25;
  int64_t passes = 2;
  double deepPassFraction = 0.03;
  int64_t deepPasses = 3;
  /// The multi-pass phase's K as a distribution, {K: weight}, instead of
  /// passes / deep_passes / deep_pass_fraction; empty when not given.
  /// Ascending in K; weights sum to 1 after loading.
  std::vector<std::pair<int64_t, double>> passDistribution;
  /// Truncated backpropagation through passes: with G > 0, only pass 1 and
  /// the last G passes are trained (and get gradients); the passes between
  /// run forward only, and the state entering the trained ones is cut from
  /// the gradient. 0: every pass is trained.
  int64_t gradPasses = 2;

  int64_t batchSize = 8;
  int64_t sequenceLength = 64;
  int64_t steps = 1000;

  // AdamW.
  double learningRate = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double adamEpsilon = 1e-8;
  double weightDecay = 0.1;
  // Learning-rate schedule: linear warmup, then cosine decay to min_lr.
  int64_t warmupSteps = 100;
  double minLearningRate = 1e-4;
  double gradClip = 1.0;
  uint64_t seed = 1234;
  /// ZeRO stage of data-parallel runs: 0 (every rank keeps all of AdamW's
  /// state) or 1 (each rank keeps and updates its share of the parameters).
  int64_t zero = 0;
};

struct InferenceSpec {
  /// Sequences decoded together.
  int64_t batchSize = 1;
  /// Longest prompt one prefill call takes (default: the training length).
  int64_t maxPromptLength = 0;
  /// KV-cache length (default: max_position_embeddings).
  int64_t maxSequenceLength = 0;
  /// How the inference steps read the weight matrices (DESIGN.md §8).
  WeightForm weights = WeightForm::F32;
  /// int8: products by int8 weights of few rows (decoding) quantize their
  /// input rows per group of 32 too and multiply in integers (the CPU's
  /// int8 dot products, as llama.cpp's Q8_0); f32: they multiply in f32.
  WeightForm activations = WeightForm::F32;
  /// How the inference steps store the KV cache (their attention widens it
  /// to f32 as it reads).
  CacheForm kvCache = CacheForm::F32;
};

/// The most layers a spec may have: a model's layers are built and listed
/// one by one (its parameters, its ops), so a count far past any real
/// model's would take memory before any check of the figures.
constexpr int64_t kMaxLayers = 1024;

struct ModelSpec {
  std::string name = "fbt";
  Recipe recipe = Recipe::Fbt;
  int64_t vocabSize = 0;
  int64_t hiddenSize = 0;
  int64_t numHiddenLayers = 0;
  int64_t numAttentionHeads = 0;
  int64_t intermediateSize = 0;
  int64_t maxPositionEmbeddings = 0;
  double rmsNormEps = 1e-5;
  double ropeTheta = 10000.0;
  RopeScaling ropeScaling; ///< rope_scaling (runtime/format/RopeScaling.h)
  bool tieWordEmbeddings = true;
  int64_t bosTokenId = 0;

  FeedbackSpec feedback;
  TrainingSpec training;
  InferenceSpec inference;

  int64_t headDim() const { return hiddenSize / numAttentionHeads; }
  /// The distinct K values the schedule uses, ascending (e.g. {1, 2, 3}).
  std::vector<int64_t> scheduledPasses() const;
  /// {K, the expected share of the training.steps steps run at K}, ascending
  /// in K, as the runtime's PassSchedule draws them: K = 1 for the first
  /// ceil(single_pass_fraction * steps) steps, then the multi-pass phase's
  /// K by their weights.
  std::vector<std::pair<int64_t, double>> passShares() const;
  /// The passes `fbt eval` and validation report in inference mode.
  static constexpr int64_t kEvalPasses = 8;
};

/// Reads and validates a spec's fields and their consistency. Errors name
/// the JSON path and what was expected, e.g. "spec.json: training.passes:
/// expected an integer >= 1, got 0". `recipe`, when given, replaces the
/// spec's own "recipe" (fbtc --recipe). A spec whose figures would overflow
/// passes here: parseSpec (LoadSpec.h) is the whole check.
llvm::Expected<ModelSpec> readSpec(llvm::StringRef json, llvm::StringRef sourceName,
                                   std::optional<Recipe> recipe = std::nullopt);

/// "fbt" or "paper"; nullopt for any other name.
std::optional<Recipe> parseRecipe(llvm::StringRef name);

} // namespace fbt

#endif // FBT_FRONTEND_SPEC_H
