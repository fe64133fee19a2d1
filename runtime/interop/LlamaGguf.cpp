//===- LlamaGguf.cpp - an FBT's standard regime as llama.cpp's llama ------===//

#include "runtime/interop/LlamaGguf.h"

#include "runtime/base/Error.h"

#include <algorithm>
#include <cstdint>

namespace fbt::llama {

namespace {
std::vector<float> scaled(std::vector<float> w, double a) {
  for (float &x : w)
    x = (float)(x * a);
  return w;
}
} // namespace

std::vector<float> ropeRowsToPairs(const std::vector<float> &w, int64_t rows, int64_t cols,
                                   int64_t heads) {
  int64_t dh = rows / heads, half = dh / 2;
  std::vector<float> out(w.size());
  for (int64_t h = 0; h < heads; ++h)
    for (int64_t i = 0; i < half; ++i)
      for (int64_t j = 0; j < 2; ++j) {
        const float *from = &w[(h * dh + j * half + i) * cols];
        std::copy(from, from + cols, &out[(h * dh + 2 * i + j) * cols]);
      }
  return out;
}

void addHyperparameters(GgufWriter &gguf, const Hyperparameters &h, ggml::TensorType matrices) {
  if (h.vocab > INT32_MAX || h.hidden > UINT32_MAX || h.intermediate > UINT32_MAX ||
      h.contextLength > UINT32_MAX)
    throw RuntimeError("the model is too large for GGUF's u32 hyperparameters");
  gguf.addString("general.architecture", "llama");
  gguf.addString("general.name", h.name);
  gguf.addU32("general.file_type", fileType(matrices));
  gguf.addU32("llama.context_length", (uint32_t)h.contextLength);
  gguf.addU32("llama.embedding_length", (uint32_t)h.hidden);
  gguf.addU32("llama.block_count", (uint32_t)h.layers);
  gguf.addU32("llama.feed_forward_length", (uint32_t)h.intermediate);
  gguf.addU32("llama.attention.head_count", (uint32_t)h.heads);
  gguf.addU32("llama.attention.head_count_kv", (uint32_t)h.heads);
  gguf.addU32("llama.rope.dimension_count", (uint32_t)(h.hidden / h.heads));
  // llama.cpp has no dynamic type: fbt's (a base fixed at the extended
  // length, runtime/format/RopeScaling.h) is that base, unscaled.
  gguf.addF32("llama.rope.freq_base", (float)h.ropeScaling.theta(h.ropeTheta, h.hidden / h.heads));
  if (h.ropeScaling.enabled() && h.ropeScaling.type == RopeScalingType::Linear) {
    gguf.addString("llama.rope.scaling.type", "linear"); // positions / factor, as fbt
    gguf.addF32("llama.rope.scaling.factor", (float)h.ropeScaling.factor);
  }
  gguf.addF32("llama.attention.layer_norm_rms_epsilon", (float)h.rmsNormEps);
  gguf.addU32("llama.vocab_size", (uint32_t)h.vocab);
}

void addBpeVocabulary(GgufWriter &gguf, const Hyperparameters &h, const BpeVocabulary &v) {
  if ((int64_t)v.tokens.size() > h.vocab)
    throw RuntimeError("the model's vocabulary (" + std::to_string(h.vocab) +
                       ") is smaller than the tokenizer's " + std::to_string(v.tokens.size()) +
                       " tokens");
  std::vector<std::string> tokens = v.tokens;
  std::vector<int32_t> types(tokens.size(), 1); // LLAMA_TOKEN_TYPE_NORMAL
  for (int64_t id : v.control)
    types.at(id) = 3; // LLAMA_TOKEN_TYPE_CONTROL: never produced by tokenizing text
  for (int64_t id = 0; id < h.vocab; ++id) {
    if (id == (int64_t)tokens.size())
      tokens.emplace_back(), types.push_back(1);
    if (tokens[id].empty()) { // ids no token has: the padding of the embedding
      tokens[id] = "<fbt_unused_" + std::to_string(id) + ">";
      types[id] = 5; // LLAMA_TOKEN_TYPE_UNUSED
    }
  }
  // Without merges, how text is split into words does not change the ids
  // (each byte stays its own token): "default". With them, GPT-2's regex.
  gguf.addString("tokenizer.ggml.model", "gpt2");
  gguf.addString("tokenizer.ggml.pre", v.merges.empty() ? "default" : "gpt-2");
  gguf.addStringArray("tokenizer.ggml.tokens", tokens);
  gguf.addI32Array("tokenizer.ggml.token_type", types);
  gguf.addStringArray("tokenizer.ggml.merges", v.merges);
  gguf.addU32("tokenizer.ggml.bos_token_id", (uint32_t)v.separator);
  gguf.addU32("tokenizer.ggml.eos_token_id", (uint32_t)v.separator);
  gguf.addBool("tokenizer.ggml.add_bos_token", true);
  gguf.addBool("tokenizer.ggml.add_eos_token", false);
}

size_t addTensors(GgufWriter &gguf, const Hyperparameters &h, const WeightSource &weight,
                  ggml::TensorType matrices) {
  const int64_t V = h.vocab, D = h.hidden, H = h.heads, F = h.intermediate;
  size_t before = gguf.tensorCount();
  gguf.addTensor("token_embd.weight", {V, D}, weight("model.embed_tokens.weight"), matrices);
  for (int64_t l = 0; l < h.layers; ++l) {
    std::string from = "model.layers." + std::to_string(l) + ".";
    std::string to = "blk." + std::to_string(l) + ".";
    gguf.addTensor(to + "attn_norm.weight", {D}, weight(from + "input_layernorm.weight"));
    gguf.addTensor(to + "attn_q.weight", {D, D},
                   ropeRowsToPairs(weight(from + "self_attn.q_proj.weight"), D, D, H), matrices);
    gguf.addTensor(to + "attn_k.weight", {D, D},
                   ropeRowsToPairs(weight(from + "self_attn.k_proj.weight"), D, D, H), matrices);
    gguf.addTensor(to + "attn_v.weight", {D, D}, weight(from + "self_attn.v_proj.weight"),
                   matrices);
    gguf.addTensor(to + "attn_output.weight", {D, D},
                   scaled(weight(from + "self_attn.o_proj.weight"), h.depthScale), matrices);
    gguf.addTensor(to + "ffn_norm.weight", {D},
                   weight(from + "post_attention_layernorm.weight"));
    gguf.addTensor(to + "ffn_gate.weight", {F, D}, weight(from + "mlp.gate_proj.weight"),
                   matrices);
    gguf.addTensor(to + "ffn_up.weight", {F, D}, weight(from + "mlp.up_proj.weight"), matrices);
    gguf.addTensor(to + "ffn_down.weight", {D, F},
                   scaled(weight(from + "mlp.down_proj.weight"), h.depthScale), matrices);
  }
  gguf.addTensor("output_norm.weight", {D}, weight("model.norm.weight"));
  return gguf.tensorCount() - before;
}

uint32_t fileType(ggml::TensorType t) {
  switch (t) {
  case ggml::TensorType::F32:
    return 0;
  case ggml::TensorType::F16:
    return 1;
  case ggml::TensorType::Q8_0:
    return 7;
  case ggml::TensorType::BF16:
    return 32;
  }
  return 0;
}

} // namespace fbt::llama
