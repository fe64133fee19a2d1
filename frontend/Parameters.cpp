//===- Parameters.cpp - a spec's parameter tensors -------------------------===//

#include "frontend/Parameters.h"

namespace fbt {

std::vector<ParameterInfo> parameterList(const ModelSpec &s) {
  const int64_t d = s.hiddenSize, f = s.intermediateSize;
  std::vector<ParameterInfo> p;
  p.push_back({"model.embed_tokens.weight", {s.vocabSize, d}, false, false});
  for (int64_t l = 0; l < s.numHiddenLayers; ++l) {
    std::string pre = "model.layers." + std::to_string(l) + ".";
    p.push_back({pre + "input_layernorm.weight", {d}, false, false});
    p.push_back({pre + "self_attn.q_proj.weight", {d, d}});
    p.push_back({pre + "self_attn.k_proj.weight", {d, d}});
    p.push_back({pre + "self_attn.v_proj.weight", {d, d}});
    p.push_back({pre + "self_attn.o_proj.weight", {d, d}});
    p.push_back({pre + "post_attention_layernorm.weight", {d}, false, false});
    p.push_back({pre + "mlp.gate_proj.weight", {f, d}});
    p.push_back({pre + "mlp.up_proj.weight", {f, d}});
    p.push_back({pre + "mlp.down_proj.weight", {d, f}});
  }
  p.push_back({"model.norm.weight", {d}, false, false});
  switch (s.feedback.fusion) {
  case Fusion::Glu:
    p.push_back({"feedback.value_proj.weight", {d, d}, true});
    p.push_back({"feedback.gate_proj.weight", {d, d}, true});
    break;
  case Fusion::Add:
    p.push_back({"feedback.value_proj.weight", {d, d}, true});
    break;
  case Fusion::Concat:
    p.push_back({"feedback.proj.weight", {d, 2 * d}, true});
    break;
  case Fusion::None:
    break;
  }
  return p;
}

} // namespace fbt
