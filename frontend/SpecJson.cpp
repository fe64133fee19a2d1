//===- SpecJson.cpp - a resolved spec as JSON -----------------------------===//

#include "frontend/SpecJson.h"

using llvm::json::Object;

llvm::json::Value fbt::specToJson(const ModelSpec &s) {
  const FeedbackSpec &f = s.feedback;
  const TrainingSpec &t = s.training;
  const InferenceSpec &i = s.inference;
  Object distribution;
  for (auto [k, w] : t.passDistribution)
    distribution[std::to_string(k)] = w;
  Object training{{"single_pass_fraction", t.singlePassFraction},
                  {"grad_passes", t.gradPasses},
                  {"batch_size", t.batchSize},
                  {"sequence_length", t.sequenceLength},
                  {"steps", t.steps},
                  {"learning_rate", t.learningRate},
                  {"beta1", t.beta1},
                  {"beta2", t.beta2},
                  {"adam_epsilon", t.adamEpsilon},
                  {"weight_decay", t.weightDecay},
                  {"warmup_steps", t.warmupSteps},
                  {"min_learning_rate", t.minLearningRate},
                  {"grad_clip", t.gradClip},
                  {"seed", (int64_t)t.seed},
                  {"zero", t.zero}};
  // The schedule's K as the spec gave it: a distribution, or the fixed
  // K2/K3/p3 (a spec holding both is refused, so the resolved spec, which
  // is itself a spec, holds one).
  if (!t.passDistribution.empty()) {
    training["pass_distribution"] = std::move(distribution);
  } else {
    training["passes"] = t.passes;
    training["deep_pass_fraction"] = t.deepPassFraction;
    training["deep_passes"] = t.deepPasses;
  }
  Object spec{
      {"name", s.name},
      {"recipe", recipeName(s.recipe)},
      {"vocab_size", s.vocabSize},
      {"hidden_size", s.hiddenSize},
      {"num_hidden_layers", s.numHiddenLayers},
      {"num_attention_heads", s.numAttentionHeads},
      {"intermediate_size", s.intermediateSize},
      {"max_position_embeddings", s.maxPositionEmbeddings},
      {"rms_norm_eps", s.rmsNormEps},
      {"rope_theta", s.ropeTheta},
      {"tie_word_embeddings", s.tieWordEmbeddings},
      {"bos_token_id", s.bosTokenId},
      {"feedback", Object{{"fusion", kindName(f.fusion)},
                          {"jitter", f.jitter},
                          {"depth_scaling", f.depthScaling},
                          {"detach_state", f.detachState},
                          {"aux_loss_weight", f.auxLossWeight},
                          {"prefix_mixin", f.prefixMixin},
                          {"state", stateSourceName(f.state)},
                          {"input_norm", f.inputNorm},
                          {"gate_norm", f.gateNorm},
                          {"state_norm", f.stateNorm},
                          {"output_norm", f.outputNorm},
                          {"token_residual", f.tokenResidual},
                          {"init", feedbackInitName(f.init)},
                          {"init_std", f.initStd}}},
      {"training", std::move(training)},
      {"inference", Object{{"batch_size", i.batchSize},
                           {"max_prompt_length", i.maxPromptLength},
                           {"max_sequence_length", i.maxSequenceLength},
                           {"weights", kindName(i.weights)},
                           {"activations", kindName(i.activations)},
                           {"kv_cache", kindName(i.kvCache)}}},
  };
  // Only where set, so a spec without it resolves as before.
  if (s.ropeScaling.enabled())
    spec["rope_scaling"] = Object{{"rope_type", ropeScalingTypeName(s.ropeScaling.type)},
                                  {"factor", s.ropeScaling.factor}};
  return spec;
}
