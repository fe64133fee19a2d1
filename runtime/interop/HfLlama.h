//===- HfLlama.h - Hugging Face LlamaForCausalLM folders, in and out -*- C++ -*-===//
//
// A Hugging Face Llama folder holds config.json, the weights as
// model.safetensors (or shards listed by model.safetensors.index.json) and
// tokenizer.json. fbt's parameters already carry Hugging Face's names and
// its rotary layout is theirs (rotate-half), so the weights map as they are:
// what differs is what fbt's model does not have, which the reading refuses
// by the key that asks for it:
//  - untied embeddings (tie_word_embeddings false with an lm_head.weight of
//    its own): fbt's output projection is the embedding's transpose;
//  - grouped-query attention (num_key_value_heads below num_attention_heads),
//    a head_dim other than hidden_size / num_attention_heads, biases, an
//    activation other than silu, RoPE scaling other than linear.
// Writing is the reverse for the standard regime (u_t = e_t): depth scaling
// folded into o_proj and down_proj, as for GGUF (LlamaGguf.h).
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_INTEROP_HFLLAMA_H
#define FBT_RUNTIME_INTEROP_HFLLAMA_H

#include "runtime/base/Json.h"
#include "runtime/interop/LlamaGguf.h"
#include "runtime/format/Safetensors.h"

#include <string>
#include <vector>

namespace fbt::hf {

/// The hyperparameters of a config.json (`source` names it in errors, which
/// read "<source>: <key>: <why>"). depthScale is 1; bosTokenId is the
/// config's (the caller puts the tokenizer's document separator there).
llama::Hyperparameters readLlamaConfig(const Json &config, const std::string &source);

/// A config.json for `h` (LlamaForCausalLM, tied embeddings, f32).
Json llamaConfig(const llama::Hyperparameters &h);

/// rope_scaling as Hugging Face's config and fbt's spec write it
/// ({"rope_type", "factor"}); null without scaling.
Json ropeScalingJson(const RopeScaling &s);

/// The names and shapes of the model's weights, in fbt's order.
std::vector<std::pair<std::string, std::vector<int64_t>>>
llamaWeightShapes(const llama::Hyperparameters &h);

/// The weights of the folder `dir` as f32 tensors in llamaWeightShapes'
/// order: from model.safetensors or the shards model.safetensors.index.json
/// lists, bf16 and f16 widened exactly. Refused, naming the tensor: a missing
/// one, a shape other than `h` gives, an lm_head.weight other than the
/// embedding, a tensor fbt's model has no place for (a stored
/// rotary_emb.inv_freq, which RoPE recomputes, is skipped), NaN or Inf.
std::vector<Tensor> readLlamaWeights(const std::string &dir, const llama::Hyperparameters &h);

/// The weights as a folder stores them: every tensor of llamaWeightShapes,
/// f32, with depth scaling folded into o_proj and down_proj.
std::vector<Tensor> llamaTensors(const llama::Hyperparameters &h,
                                 const llama::WeightSource &weight);

} // namespace fbt::hf

#endif // FBT_RUNTIME_INTEROP_HFLLAMA_H
