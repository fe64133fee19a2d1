//===- Spec.h - FBT model specs (JSON) --------------------------*- C++ -*-===//
//
// A model spec is the JSON a user writes: HF-config-like keys for the
// transformer, plus a `feedback` section (the FBT path) and a `training`
// section (schedule, optimizer, batch). Defaults follow DESIGN.md section 2.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_FRONTEND_SPEC_H
#define FBT_FRONTEND_SPEC_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fbt {

/// How the carried state is fused with the token embedding.
enum class Fusion { Glu, Add, Concat, None };

llvm::StringRef fusionName(Fusion f);

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
  bool prefixMixin = true;
};

struct TrainingSpec {
  // Progressive schedule: K=1 for the first `singlePassFraction` of the
  // steps, then K=`passes`, with `deepPassFraction` of the batches at
  // K=`deepPasses`. `deepPassFraction` is a fraction of the multi-pass
  // phase's batches; `deepPasses` defaults to `passes` + 1 on load.
  double singlePassFraction = 0.5;
  int64_t passes = 2;
  double deepPassFraction = 0.03;
  int64_t deepPasses = 3;

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
};

struct InferenceSpec {
  /// Sequences decoded together.
  int64_t batchSize = 1;
  /// Longest prompt one prefill call takes (default: the training length).
  int64_t maxPromptLength = 0;
  /// KV-cache length (default: max_position_embeddings).
  int64_t maxSequenceLength = 0;
};

struct ModelSpec {
  std::string name = "fbt";
  int64_t vocabSize = 0;
  int64_t hiddenSize = 0;
  int64_t numHiddenLayers = 0;
  int64_t numAttentionHeads = 0;
  int64_t intermediateSize = 0;
  int64_t maxPositionEmbeddings = 0;
  double rmsNormEps = 1e-5;
  double ropeTheta = 10000.0;
  bool tieWordEmbeddings = true;
  int64_t bosTokenId = 0;

  FeedbackSpec feedback;
  TrainingSpec training;
  InferenceSpec inference;

  int64_t headDim() const { return hiddenSize / numAttentionHeads; }
  /// The distinct K values the schedule uses, ascending (e.g. {1, 2, 3}).
  std::vector<int64_t> scheduledPasses() const;
};

/// Parses and validates a spec. Errors name the JSON path and what was
/// expected, e.g. "spec.json: training.passes: expected an integer >= 1, got 0".
llvm::Expected<ModelSpec> parseSpec(llvm::StringRef json,
                                    llvm::StringRef sourceName);

/// Reads a file and parses it; a missing, empty or binary file is an error.
llvm::Expected<ModelSpec> loadSpec(llvm::StringRef path);

} // namespace fbt

#endif // FBT_FRONTEND_SPEC_H
