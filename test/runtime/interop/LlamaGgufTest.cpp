//===- LlamaGgufTest.cpp - the conversion fbt export writes ---------------===//
//
// The maths and names of the conversion, read back through the test reader
// (GgufReader.h). That llama.cpp decodes an export as fbt does is
// test/e2e/gguf-export.test.
//
//===----------------------------------------------------------------------===//

#include "runtime/base/Error.h"
#include "runtime/interop/LlamaGguf.h"

#include "test/runtime/interop/GgufReader.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>

using namespace fbt;
using namespace fbt::test;

namespace {

llama::Hyperparameters tiny() {
  llama::Hyperparameters h;
  h.name = "t";
  h.vocab = 260;
  h.hidden = 8;
  h.layers = 2;
  h.heads = 2;
  h.intermediate = 12;
  h.contextLength = 64;
  h.rmsNormEps = 1e-5;
  h.ropeTheta = 10000;
  h.depthScale = 0.5;
  return h;
}

/// Every weight's element i is 1000 * (its name's number) + i, so each
/// value says where it came from.
struct Weights {
  std::map<std::string, int> numbers;
  std::vector<float> operator()(const std::string &name, int64_t n) {
    int number = numbers.emplace(name, (int)numbers.size()).first->second;
    std::vector<float> w(n);
    for (int64_t i = 0; i < n; ++i)
      w[i] = float(1000 * number + i);
    return w;
  }
};

TEST(LlamaGgufTest, RopeRowsBecomeAdjacentPairs) {
  // One head of 4 rows: llama.cpp's rows 0, 1, 2, 3 are fbt's 0, 2, 1, 3.
  EXPECT_EQ(llama::ropeRowsToPairs({0, 1, 2, 3}, 4, 1, 1), (std::vector<float>{0, 2, 1, 3}));
  // Two heads of 4 rows, 2 columns: each head permuted on its own.
  std::vector<float> w;
  for (int r = 0; r < 8; ++r)
    w.insert(w.end(), {float(r), float(10 + r)});
  std::vector<float> out = llama::ropeRowsToPairs(w, 8, 2, 2);
  std::vector<float> rows;
  for (int r = 0; r < 8; ++r) {
    rows.push_back(out[2 * r]);
    EXPECT_EQ(out[2 * r + 1], 10 + out[2 * r]); // whole rows move
  }
  EXPECT_EQ(rows, (std::vector<float>{0, 2, 1, 3, 4, 6, 5, 7}));
}

TEST(LlamaGgufTest, TensorsAreNamedPermutedAndScaled) {
  llama::Hyperparameters h = tiny();
  Weights source;
  std::map<std::string, std::vector<float>> given;
  auto weight = [&](const std::string &name) {
    int64_t n = name == "model.embed_tokens.weight" ? h.vocab * h.hidden
                : name.find("mlp.") != std::string::npos ? h.intermediate * h.hidden
                : name.find("layernorm") != std::string::npos || name == "model.norm.weight"
                    ? h.hidden
                    : h.hidden * h.hidden;
    return given[name] = source(name, n);
  };
  GgufWriter gguf;
  EXPECT_EQ(llama::addTensors(gguf, h, weight), 2u + 9u * 2u);
  std::string bytes = gguf.serialize();
  Parsed p = parse(bytes, gguf.alignment());
  ASSERT_EQ(p.tensors.size(), 20u);
  EXPECT_EQ(p.tensors.front().name, "token_embd.weight");
  EXPECT_EQ(p.tensors[1].name, "blk.0.attn_norm.weight");
  EXPECT_EQ(p.tensors.back().name, "output_norm.weight");
  // Shapes innermost first: ffn_down is [D, F] row-major, so (F, D).
  EXPECT_EQ(tensorOf(bytes, p, "blk.1.ffn_down.weight").size(), size_t(h.hidden * h.intermediate));
  // Depth scaling folded into the two branch outputs, nowhere else.
  std::vector<float> o = tensorOf(bytes, p, "blk.1.attn_output.weight");
  const std::vector<float> &fbtO = given["model.layers.1.self_attn.o_proj.weight"];
  for (size_t i = 0; i < o.size(); ++i)
    ASSERT_EQ(o[i], float(fbtO[i] * 0.5)) << i;
  EXPECT_EQ(tensorOf(bytes, p, "blk.0.attn_v.weight"),
            given["model.layers.0.self_attn.v_proj.weight"]);
  // W_q's rows in RoPE pairs.
  EXPECT_EQ(tensorOf(bytes, p, "blk.0.attn_q.weight"),
            llama::ropeRowsToPairs(given["model.layers.0.self_attn.q_proj.weight"], 8, 8, 2));
}

TEST(LlamaGgufTest, TheByteVocabularyFillsTheEmbeddingRows) {
  llama::Hyperparameters h = tiny();
  llama::BpeVocabulary bytes256;
  for (int b = 0; b < 256; ++b)
    bytes256.tokens.push_back("b" + std::to_string(b));
  GgufWriter gguf;
  llama::addHyperparameters(gguf, h);
  llama::addBpeVocabulary(gguf, h, bytes256);
  std::string file = gguf.serialize();
  Parsed p = parse(file, gguf.alignment());
  const Value *tokens = keyOf(p, "tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens);
  ASSERT_EQ(tokens->strings.size(), 260u);
  EXPECT_EQ(tokens->strings[255], "b255");
  EXPECT_EQ(tokens->strings[259], "<fbt_unused_259>");
  const Value *types = keyOf(p, "tokenizer.ggml.token_type");
  ASSERT_TRUE(types);
  EXPECT_EQ(types->ints[0], 1);
  EXPECT_EQ(types->ints[259], 5);
  EXPECT_EQ(keyOf(p, "llama.rope.dimension_count")->u, 4u);
  EXPECT_EQ(keyOf(p, "tokenizer.ggml.model")->s, "gpt2");
  EXPECT_EQ(keyOf(p, "tokenizer.ggml.pre")->s, "default");

  h.vocab = 200;
  GgufWriter small;
  EXPECT_THROW(llama::addBpeVocabulary(small, h, bytes256), RuntimeError);
  h.contextLength = int64_t(1) << 33;
  EXPECT_THROW(llama::addHyperparameters(small, h), RuntimeError);
}

TEST(LlamaGgufTest, ABpeVocabularyKeepsItsMergesAndMarksSpecialTokens) {
  llama::Hyperparameters h = tiny();
  llama::BpeVocabulary v;
  v.tokens = {"a", "b", "", "ab", "<|endoftext|>"}; // id 2 has no token
  v.merges = {"a b"};
  v.control = {4};
  v.separator = 4;
  GgufWriter gguf;
  llama::addBpeVocabulary(gguf, h, v);
  std::string file = gguf.serialize();
  Parsed p = parse(file, gguf.alignment());
  const Value *tokens = keyOf(p, "tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens);
  ASSERT_EQ(tokens->strings.size(), 260u);
  EXPECT_EQ(tokens->strings[2], "<fbt_unused_2>");
  EXPECT_EQ(tokens->strings[3], "ab");
  const Value *types = keyOf(p, "tokenizer.ggml.token_type");
  EXPECT_EQ(types->ints[2], 5);
  EXPECT_EQ(types->ints[3], 1);
  EXPECT_EQ(types->ints[4], 3);
  EXPECT_EQ(keyOf(p, "tokenizer.ggml.merges")->strings, std::vector<std::string>{"a b"});
  EXPECT_EQ(keyOf(p, "tokenizer.ggml.pre")->s, "gpt-2");
  EXPECT_EQ(keyOf(p, "tokenizer.ggml.bos_token_id")->u, 4u);
  EXPECT_EQ(keyOf(p, "tokenizer.ggml.eos_token_id")->u, 4u);
}

TEST(LlamaGgufTest, LinearRopeScalingIsWrittenOnlyWhereSet) {
  llama::Hyperparameters h = tiny();
  GgufWriter plain;
  llama::addHyperparameters(plain, h);
  std::string file = plain.serialize();
  EXPECT_FALSE(keyOf(parse(file, plain.alignment()), "llama.rope.scaling.type"));
  h.ropeScaling.factor = 2;
  GgufWriter scaled;
  llama::addHyperparameters(scaled, h);
  file = scaled.serialize();
  Parsed p = parse(file, scaled.alignment());
  ASSERT_TRUE(keyOf(p, "llama.rope.scaling.type"));
  EXPECT_EQ(keyOf(p, "llama.rope.scaling.type")->s, "linear");
  EXPECT_EQ(keyOf(p, "llama.rope.scaling.factor")->f, 2.0);
}

TEST(LlamaGgufTest, DynamicRopeScalingIsItsFixedBase) {
  // llama.cpp has no dynamic type: the base fbt fixes at the extended
  // length, base * (f^2 - f + 1)^(d / (d - 2)), with no scaling key.
  llama::Hyperparameters h = tiny();
  h.ropeScaling = {RopeScalingType::Dynamic, 2.0};
  GgufWriter w;
  llama::addHyperparameters(w, h);
  std::string file = w.serialize();
  Parsed p = parse(file, w.alignment());
  EXPECT_FALSE(keyOf(p, "llama.rope.scaling.type"));
  double d = (double)(h.hidden / h.heads);
  EXPECT_FLOAT_EQ(keyOf(p, "llama.rope.freq_base")->f,
                  (float)(h.ropeTheta * std::pow(3.0, d / (d - 2.0))));
}

} // namespace
