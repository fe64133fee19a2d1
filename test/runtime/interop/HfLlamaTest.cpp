//===- HfLlamaTest.cpp - Hugging Face Llama configs and weights ------------===//
//
// readLlamaConfig takes what fbt's model is and refuses, by its key, what it
// is not; readLlamaWeights takes the folder's tensors under their names and
// refuses, by name, a missing one, one fbt has no place for and an lm_head
// of its own; llamaTensors folds depth scaling and reads back as it wrote.
//
//===----------------------------------------------------------------------===//

#include "runtime/interop/HfLlama.h"

#include "runtime/base/Error.h"
#include "test/runtime/TempDir.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>

using namespace fbt;

namespace {

Json tinyConfig() {
  return parseJson(R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama",
    "vocab_size": 10, "hidden_size": 8, "intermediate_size": 12,
    "num_hidden_layers": 1, "num_attention_heads": 2, "num_key_value_heads": 2,
    "max_position_embeddings": 32, "rms_norm_eps": 1e-5, "rope_theta": 500.0,
    "tie_word_embeddings": true, "hidden_act": "silu"})");
}

/// The RuntimeError readLlamaConfig gives `config` ("" if none).
std::string refusal(const Json &config) {
  try {
    hf::readLlamaConfig(config, "config.json");
  } catch (const RuntimeError &e) {
    return e.what();
  }
  return "";
}

std::string refusalWith(const char *key, const Json &value) {
  Json c = tinyConfig();
  c[key] = value;
  return refusal(c);
}

/// A weight whose every value says where it is.
std::vector<float> filled(const std::vector<int64_t> &shape, float base) {
  std::vector<float> v(shapeElements(shape));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = base + 0.001f * i;
  return v;
}

std::vector<Tensor> folderTensors(const llama::Hyperparameters &h) {
  std::vector<Tensor> out;
  float base = 0;
  for (const auto &[name, shape] : hf::llamaWeightShapes(h))
    out.push_back(Tensor::fromF32(name, shape, filled(shape, base += 1)));
  return out;
}

} // namespace

TEST(HfLlamaTest, AConfigGivesTheHyperparameters) {
  llama::Hyperparameters h = hf::readLlamaConfig(tinyConfig(), "config.json");
  EXPECT_EQ(h.vocab, 10);
  EXPECT_EQ(h.hidden, 8);
  EXPECT_EQ(h.intermediate, 12);
  EXPECT_EQ(h.layers, 1);
  EXPECT_EQ(h.heads, 2);
  EXPECT_EQ(h.contextLength, 32);
  EXPECT_EQ(h.ropeTheta, 500.0);
  EXPECT_FALSE(h.ropeScaling.enabled());
  EXPECT_EQ(h.depthScale, 1);
  // What we write reads back the same.
  llama::Hyperparameters again = hf::readLlamaConfig(hf::llamaConfig(h), "config.json");
  EXPECT_EQ(again.vocab, h.vocab);
  EXPECT_EQ(again.rmsNormEps, h.rmsNormEps);
  h.ropeScaling.factor = 4;
  EXPECT_EQ(hf::readLlamaConfig(hf::llamaConfig(h), "config.json").ropeScaling.factor, 4);
  h.ropeScaling.type = RopeScalingType::Dynamic;
  RopeScaling dynamic = hf::readLlamaConfig(hf::llamaConfig(h), "config.json").ropeScaling;
  EXPECT_EQ(dynamic.type, RopeScalingType::Dynamic);
  EXPECT_EQ(dynamic.factor, 4);
}

TEST(HfLlamaTest, WhatFbtsModelIsNotIsRefusedByItsKey) {
  EXPECT_NE(refusalWith("num_key_value_heads", 1).find("config.json: num_key_value_heads: "),
            std::string::npos);
  EXPECT_NE(refusalWith("head_dim", 8).find("config.json: head_dim: 8"), std::string::npos);
  EXPECT_NE(refusalWith("hidden_act", "gelu").find("hidden_act: 'gelu'"), std::string::npos);
  EXPECT_NE(refusalWith("attention_bias", true).find("attention_bias: true"), std::string::npos);
  EXPECT_NE(refusalWith("mlp_bias", true).find("mlp_bias: true"), std::string::npos);
  EXPECT_NE(refusalWith("tie_word_embeddings", false).find("tie_word_embeddings: false"),
            std::string::npos);
  EXPECT_NE(refusalWith("architectures", parseJson(R"(["MistralForCausalLM"])"))
                .find("architectures: "),
            std::string::npos);
  EXPECT_NE(refusalWith("model_type", "qwen2").find("model_type: 'qwen2'"), std::string::npos);
  EXPECT_NE(refusalWith("rope_scaling", parseJson(R"({"rope_type": "yarn", "factor": 2})"))
                .find("rope_scaling: 'yarn' is not supported"),
            std::string::npos);
  // The older spelling of the type is read too.
  EXPECT_EQ(refusalWith("rope_scaling", parseJson(R"({"type": "linear", "factor": 2})")), "");
  EXPECT_EQ(refusalWith("rope_scaling", parseJson(R"({"rope_type": "dynamic", "factor": 2})")),
            "");
  EXPECT_NE(refusalWith("hidden_size", 9).find("hidden_size: 9 is not a multiple"),
            std::string::npos);
  Json noVocab = tinyConfig();
  noVocab.erase("vocab_size");
  EXPECT_NE(refusal(noVocab).find("vocab_size: "), std::string::npos);
  // Hugging Face's default is untied: a config that does not say is refused.
  Json silent = tinyConfig();
  silent.erase("tie_word_embeddings");
  EXPECT_NE(refusal(silent).find("tie_word_embeddings"), std::string::npos);
}

TEST(HfLlamaTest, WeightsAreReadByNameAndRefusedByName) {
  test::TempDir dir;
  llama::Hyperparameters h = hf::readLlamaConfig(tinyConfig(), "config.json");
  std::vector<Tensor> tensors = folderTensors(h);
  writeSafetensorsAtomic(dir.file("model.safetensors"), tensors);
  std::vector<Tensor> read = hf::readLlamaWeights(dir.path(), h);
  ASSERT_EQ(read.size(), tensors.size());
  for (size_t i = 0; i < read.size(); ++i) {
    EXPECT_EQ(read[i].name, tensors[i].name);
    EXPECT_EQ(read[i].toF32(), tensors[i].toF32()) << read[i].name;
  }

  auto refusedWith = [&](std::vector<Tensor> ts) {
    writeSafetensorsAtomic(dir.file("model.safetensors"), ts);
    try {
      hf::readLlamaWeights(dir.path(), h);
    } catch (const RuntimeError &e) {
      return std::string(e.what());
    }
    return std::string();
  };
  // An lm_head equal to the embedding is tied in all but name; another is not.
  std::vector<Tensor> tied = tensors;
  tied.push_back(Tensor::fromF32("lm_head.weight", {10, 8}, tensors[0].toF32()));
  EXPECT_EQ(refusedWith(tied), "");
  std::vector<Tensor> untied = tensors;
  untied.push_back(Tensor::fromF32("lm_head.weight", {10, 8}, filled({10, 8}, -5)));
  EXPECT_NE(refusedWith(untied).find("'lm_head.weight' differs"), std::string::npos);
  std::vector<Tensor> extra = tensors;
  extra.push_back(Tensor::fromF32("model.layers.0.self_attn.q_proj.bias", {8}, filled({8}, 0)));
  EXPECT_NE(refusedWith(extra).find("'model.layers.0.self_attn.q_proj.bias' has no place"),
            std::string::npos);
  std::vector<Tensor> missing(tensors.begin(), tensors.end() - 1);
  EXPECT_NE(refusedWith(missing).find("no tensor 'model.norm.weight'"), std::string::npos);
  std::vector<Tensor> wrong = tensors;
  wrong.back() = Tensor::fromF32("model.norm.weight", {4}, filled({4}, 0));
  EXPECT_NE(refusedWith(wrong).find("'model.norm.weight' has shape [4]; config.json gives [8]"),
            std::string::npos);
  std::remove(dir.file("model.safetensors").c_str());
  try {
    hf::readLlamaWeights(dir.path(), h);
    ADD_FAILURE() << "a folder without weights was read";
  } catch (const RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find("neither model.safetensors nor"), std::string::npos);
  }
}

TEST(HfLlamaTest, WritingFoldsDepthScalingIntoTheBranchEnds) {
  llama::Hyperparameters h = hf::readLlamaConfig(tinyConfig(), "config.json");
  h.depthScale = 0.5;
  std::map<std::string, std::vector<float>> given;
  for (const auto &[name, shape] : hf::llamaWeightShapes(h))
    given[name] = filled(shape, 1);
  std::vector<Tensor> out = hf::llamaTensors(h, [&](const std::string &n) { return given[n]; });
  for (const Tensor &t : out) {
    bool branchEnd = t.name.find("o_proj") != std::string::npos ||
                     t.name.find("down_proj") != std::string::npos;
    std::vector<float> want = given[t.name];
    if (branchEnd)
      for (float &x : want)
        x *= 0.5f;
    EXPECT_EQ(t.toF32(), want) << t.name;
  }
}
