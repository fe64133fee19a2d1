//===- ModelConfig.h - the bundle's model config, typed -----------*- C++ -*-===//
//
// The manifest's "model" object is the resolved spec (frontend/SpecJson.cpp
// writes it). The runtime reads it once, through parseModelConfig(), into a
// ModelConfig that holds the fields the runtime and the tools use; the JSON
// stays available (Bundle::model(), Session::config()) for what dumps it
// whole. Field names are the JSON keys in camelCase; a comment gives the key
// where it differs by more than that.
//
// A missing key or a value of the wrong kind is a RuntimeError naming the
// key's path: "model.training.batch_size: missing key 'batch_size'",
// "model.vocab_size: expected an integer, got a string".
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_FORMAT_MODELCONFIG_H
#define FBT_RUNTIME_FORMAT_MODELCONFIG_H

#include "runtime/base/Json.h"
#include "runtime/format/Kinds.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fbt {

struct ModelConfig {
  /// "feedback": the feedback path's recipe.
  struct Feedback {
    Fusion fusion = Fusion::Glu; ///< None when the model has no feedback path
    /// "init": "normal" or "uniform"; absent in bundles from before it.
    std::optional<std::string> init;
    /// "init_std"; absent in bundles from before it.
    std::optional<double> initStd;
  };

  /// "training": the spec's training recipe (fbt train's defaults).
  struct Training {
    int64_t batchSize = 0;      ///< batch_size
    int64_t sequenceLength = 0; ///< sequence_length
    int64_t steps = 0;
    uint64_t seed = 0; ///< an integer, taken as its 64 bits
    double learningRate = 0;    ///< learning_rate
    double minLearningRate = 0; ///< min_learning_rate
    int64_t warmupSteps = 0;    ///< warmup_steps
    double singlePassFraction = 0; ///< single_pass_fraction
    int64_t passes = 0;
    double deepPassFraction = 0; ///< deep_pass_fraction
    int64_t deepPasses = 0;      ///< deep_passes
    /// "pass_distribution": {K, weight} in the JSON's order; empty when the
    /// key is absent.
    std::vector<std::pair<int64_t, double>> passDistribution;
  };

  /// "inference": the shapes the decoding steps were compiled for.
  struct Inference {
    int64_t batchSize = 0;         ///< batch_size
    int64_t maxPromptLength = 0;   ///< max_prompt_length
    int64_t maxSequenceLength = 0; ///< max_sequence_length
    /// weights: what the inference steps read the weight matrices as
    /// (absent in bundles from before it: f32).
    WeightForm weights = WeightForm::F32;
    /// activations: int8 where the inference steps' products by int8
    /// weights quantize their input rows too (the kernels do it; for
    /// reports).
    WeightForm activations = WeightForm::F32;
    /// kv_cache: how the decode steps' KV cache is stored (absent in
    /// bundles from before it: f32).
    CacheForm kvCache = CacheForm::F32;
  };

  std::string name;
  int64_t vocabSize = 0;         ///< vocab_size
  int64_t hiddenSize = 0;        ///< hidden_size
  int64_t numHiddenLayers = 0;   ///< num_hidden_layers
  int64_t numAttentionHeads = 0; ///< num_attention_heads
  int64_t intermediateSize = 0;  ///< intermediate_size
  int64_t bosTokenId = 0;        ///< bos_token_id
  Feedback feedback;
  Training training;
  Inference inference;
};

/// Reads `model` (a manifest's "model" object). Throws RuntimeError naming
/// the path of the first key that is missing or of the wrong kind.
ModelConfig parseModelConfig(const Json &model);

} // namespace fbt

#endif // FBT_RUNTIME_FORMAT_MODELCONFIG_H
