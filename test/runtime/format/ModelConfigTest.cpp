//===- ModelConfigTest.cpp - the manifest's model config, typed -----------===//
//
// parseModelConfig reads what fbtc writes (frontend/SpecJson.cpp: the
// resolved spec; here specs/tiny.json resolved), and a key that is missing
// or of the wrong kind is a RuntimeError naming its path.
//
//===----------------------------------------------------------------------===//

#include "runtime/format/ModelConfig.h"

#include "runtime/base/Error.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

using namespace fbt;

namespace {

/// specs/tiny.json as fbtc resolves it into a bundle's manifest.
const char *const kTinyModel = R"({
  "name": "tiny",
  "vocab_size": 256,
  "hidden_size": 64,
  "num_hidden_layers": 2,
  "num_attention_heads": 4,
  "intermediate_size": 172,
  "max_position_embeddings": 256,
  "rms_norm_eps": 1e-05,
  "rope_theta": 10000.0,
  "tie_word_embeddings": true,
  "bos_token_id": 0,
  "feedback": {
    "fusion": "glu", "jitter": 0.02, "depth_scaling": true,
    "detach_state": false, "aux_loss_weight": 1.0, "prefix_mixin": false,
    "state": "post_norm", "input_norm": false, "gate_norm": true,
    "state_norm": false, "output_norm": false, "token_residual": true,
    "init": "normal", "init_std": 0.02
  },
  "training": {
    "single_pass_fraction": 0.25, "passes": 2, "deep_pass_fraction": 0.03,
    "deep_passes": 3, "grad_passes": 2, "batch_size": 8,
    "sequence_length": 64, "steps": 200, "learning_rate": 0.001,
    "beta1": 0.9, "beta2": 0.95, "adam_epsilon": 1e-08, "weight_decay": 0.1,
    "warmup_steps": 20, "min_learning_rate": 0.0001, "grad_clip": 1.0,
    "seed": 1234
  },
  "inference": {
    "batch_size": 1, "max_prompt_length": 64, "max_sequence_length": 256
  }
})";

Json tiny() { return parseJson(kTinyModel, "tiny"); }

/// The message parseModelConfig throws for tiny() after `edit` ("" if none).
std::string errorAfter(const std::function<void(Json &)> &edit) {
  Json model = tiny();
  edit(model);
  try {
    parseModelConfig(model);
  } catch (const RuntimeError &e) {
    return e.what();
  }
  return "";
}

/// The object member `key` of `object`, which must be there.
Json &member(Json &object, const char *key) {
  Json *m = jsonFind(object, key);
  if (!m)
    throw RuntimeError(std::string("test: no member '") + key + "'");
  return *m;
}

} // namespace

TEST(ModelConfigTest, ReadsTheResolvedSpec) {
  ModelConfig c = parseModelConfig(tiny());
  EXPECT_EQ(c.name, "tiny");
  EXPECT_EQ(c.vocabSize, 256);
  EXPECT_EQ(c.hiddenSize, 64);
  EXPECT_EQ(c.numHiddenLayers, 2);
  EXPECT_EQ(c.numAttentionHeads, 4);
  EXPECT_EQ(c.intermediateSize, 172);
  EXPECT_EQ(c.bosTokenId, 0);

  EXPECT_EQ(c.feedback.fusion, Fusion::Glu);
  ASSERT_TRUE(c.feedback.init.has_value());
  EXPECT_EQ(*c.feedback.init, "normal");
  ASSERT_TRUE(c.feedback.initStd.has_value());
  EXPECT_DOUBLE_EQ(*c.feedback.initStd, 0.02);

  const ModelConfig::Training &t = c.training;
  EXPECT_EQ(t.batchSize, 8);
  EXPECT_EQ(t.sequenceLength, 64);
  EXPECT_EQ(t.steps, 200);
  EXPECT_EQ(t.seed, 1234u);
  EXPECT_DOUBLE_EQ(t.learningRate, 0.001);
  EXPECT_DOUBLE_EQ(t.minLearningRate, 0.0001);
  EXPECT_EQ(t.warmupSteps, 20);
  EXPECT_DOUBLE_EQ(t.singlePassFraction, 0.25);
  EXPECT_EQ(t.passes, 2);
  EXPECT_DOUBLE_EQ(t.deepPassFraction, 0.03);
  EXPECT_EQ(t.deepPasses, 3);
  EXPECT_TRUE(t.passDistribution.empty());

  EXPECT_EQ(c.inference.batchSize, 1);
  EXPECT_EQ(c.inference.maxPromptLength, 64);
  EXPECT_EQ(c.inference.maxSequenceLength, 256);
}

TEST(ModelConfigTest, OptionalKeysMayBeAbsent) {
  Json model = tiny();
  member(model, "feedback").erase("init");
  member(model, "feedback").erase("init_std");
  ModelConfig c = parseModelConfig(model);
  EXPECT_FALSE(c.feedback.init.has_value());
  EXPECT_FALSE(c.feedback.initStd.has_value());
}

TEST(ModelConfigTest, ReadsAPassDistribution) {
  // A spec with a distribution resolves without the fixed schedule's keys.
  Json model = tiny();
  Json &training = member(model, "training");
  for (const char *key : {"passes", "deep_pass_fraction", "deep_passes"})
    training.erase(key);
  training["pass_distribution"] = parseJson(R"({"3": 1, "2": 0.5, "8": 2})", "distribution");
  ModelConfig c = parseModelConfig(model);
  // In the JSON's order, integral weights read as numbers.
  std::vector<std::pair<int64_t, double>> distribution = {{3, 1.0}, {2, 0.5}, {8, 2.0}};
  EXPECT_EQ(c.training.passDistribution, distribution);
  EXPECT_EQ(c.training.passes, 2); // unused, and valid: the smallest K
  EXPECT_EQ(c.training.deepPasses, 2);
  EXPECT_DOUBLE_EQ(c.training.deepPassFraction, 0);
  // Bundles compiled before kept both; the distribution wins.
  Json older = tiny();
  member(older, "training")["pass_distribution"] = parseJson(R"({"4": 1})", "distribution");
  EXPECT_EQ(parseModelConfig(older).training.passes, 4);
}

TEST(ModelConfigTest, MissingKeysNameTheirPath) {
  EXPECT_EQ(errorAfter([](Json &m) { m.erase("vocab_size"); }),
            "model.vocab_size: missing key 'vocab_size'");
  EXPECT_EQ(errorAfter([](Json &m) { member(m, "training").erase("batch_size"); }),
            "model.training.batch_size: missing key 'batch_size'");
  EXPECT_EQ(errorAfter([](Json &m) {
              member(m, "inference").erase("max_prompt_length");
            }),
            "model.inference.max_prompt_length: missing key 'max_prompt_length'");
  EXPECT_EQ(errorAfter([](Json &m) { member(m, "feedback").erase("fusion"); }),
            "model.feedback.fusion: missing key 'fusion'");
  EXPECT_EQ(errorAfter([](Json &m) { m.erase("inference"); }),
            "model.inference: missing key 'inference'");
}

TEST(ModelConfigTest, WrongKindsNameTheirPath) {
  EXPECT_EQ(errorAfter([](Json &m) { member(member(m, "feedback"), "fusion") = "gru"; }),
            "model.feedback.fusion: unknown fusion 'gru' (expected one of \"glu\", \"add\", "
            "\"concat\", \"none\")");
  EXPECT_EQ(errorAfter([](Json &m) { member(m, "vocab_size") = "256"; }),
            "model.vocab_size: expected an integer, got a string");
  EXPECT_EQ(errorAfter([](Json &m) { member(member(m, "training"), "sequence_length") = 6.5; }),
            "model.training.sequence_length: expected an integer, got 6.5");
  EXPECT_EQ(errorAfter([](Json &m) { member(member(m, "training"), "learning_rate") = true; }),
            "model.training.learning_rate: expected a number, got a bool");
  EXPECT_EQ(errorAfter([](Json &m) { member(m, "name") = 7; }),
            "model.name: expected a string, got a number");
  EXPECT_EQ(errorAfter([](Json &m) { member(member(m, "feedback"), "init") = 1; }),
            "model.feedback.init: expected a string, got a number");
  EXPECT_EQ(errorAfter([](Json &m) { member(m, "feedback") = Json::array(); }),
            "model.feedback: expected an object, got an array");
  EXPECT_EQ(errorAfter([](Json &m) { m = Json::array(); }),
            "model: expected an object, got an array");
}

TEST(ModelConfigTest, PassDistributionIsChecked) {
  EXPECT_EQ(errorAfter([](Json &m) { member(m, "training")["pass_distribution"] = 2; }),
            "model.training.pass_distribution: expected an object, got a number");
  EXPECT_EQ(errorAfter([](Json &m) {
              member(m, "training")["pass_distribution"] = Json::object({{"2", "x"}});
            }),
            "model.training.pass_distribution.2: expected a number, got a string");
  EXPECT_EQ(errorAfter([](Json &m) {
              member(m, "training")["pass_distribution"] = Json::object({{"two", 1}});
            }),
            "model.training.pass_distribution: the key 'two' is not a number of "
            "passes");
}
