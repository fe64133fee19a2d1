//===- HfLlama.cpp - Hugging Face LlamaForCausalLM folders, in and out -----===//

#include "runtime/interop/HfLlama.h"

#include "runtime/base/Error.h"
#include "runtime/base/FileIO.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace fbt::hf {

namespace {

/// config.json's keys, read with Hugging Face's LlamaConfig defaults; errors
/// name the key.
class ConfigReader {
public:
  ConfigReader(const Json &config, const std::string &source)
      : config_(config), source_(source) {
    if (!config.is_object())
      fail("", "expected a JSON object, got " + std::string(jsonKindName(config)));
  }
  [[noreturn]] void fail(const std::string &key, const std::string &why) const {
    throw RuntimeError(source_ + ": " + (key.empty() ? "" : key + ": ") + why);
  }
  const Json *find(const char *key) const {
    const Json *v = jsonFind(config_, key);
    return v && !v->is_null() ? v : nullptr;
  }
  template <typename F> auto read(const char *key, F get) const {
    try {
      return get(jsonAt(config_, key));
    } catch (const RuntimeError &e) {
      fail(key, e.what());
    }
  }
  int64_t positive(const char *key) const {
    int64_t v = read(key, [](const Json &j) { return asInt(j); });
    if (v < 1)
      fail(key, "expected an integer >= 1, got " + std::to_string(v));
    return v;
  }
  int64_t integer(const char *key, int64_t fallback) const {
    return find(key) ? read(key, [](const Json &j) { return asInt(j); }) : fallback;
  }
  double number(const char *key, double fallback) const {
    return find(key) ? read(key, [](const Json &j) { return asDouble(j); }) : fallback;
  }
  bool flag(const char *key, bool fallback) const {
    return find(key) ? read(key, [](const Json &j) { return asBool(j); }) : fallback;
  }
  std::string text(const char *key, const std::string &fallback) const {
    return find(key) ? read(key, [](const Json &j) { return asString(j); }) : fallback;
  }

private:
  const Json &config_;
  const std::string &source_;
};

void checkArchitecture(const ConfigReader &r) {
  if (const Json *arch = r.find("architectures")) {
    bool llama = false;
    for (const Json &a : r.read("architectures", [](const Json &j) { return asArray(j); }))
      llama |= a.is_string() && asString(a) == "LlamaForCausalLM";
    if (!llama)
      r.fail("architectures", dumpJson(*arch) + " holds no LlamaForCausalLM (fbt imports "
                                                "Llama-family checkpoints)");
  }
  if (std::string type = r.text("model_type", "llama"); type != "llama")
    r.fail("model_type", "'" + type + "' is not 'llama'");
}

/// What fbt's model has no place for, refused by its key.
void checkUnsupported(const ConfigReader &r, const llama::Hyperparameters &h) {
  if (h.hidden % h.heads)
    r.fail("hidden_size", std::to_string(h.hidden) + " is not a multiple of " +
                              "num_attention_heads (" + std::to_string(h.heads) + ")");
  if (int64_t kv = r.integer("num_key_value_heads", h.heads); kv != h.heads)
    r.fail("num_key_value_heads",
           std::to_string(kv) + " key/value heads for " + std::to_string(h.heads) +
               " query heads: grouped-query attention is not supported (fbt's "
               "attention has as many key/value heads as query heads)");
  if (int64_t dh = r.integer("head_dim", h.hidden / h.heads); dh != h.hidden / h.heads)
    r.fail("head_dim", std::to_string(dh) + " is not hidden_size / num_attention_heads (" +
                           std::to_string(h.hidden / h.heads) + ")");
  if (std::string act = r.text("hidden_act", "silu"); act != "silu")
    r.fail("hidden_act", "'" + act + "' is not supported (fbt's MLP is SwiGLU: silu)");
  for (const char *bias : {"attention_bias", "mlp_bias"})
    if (r.flag(bias, false))
      r.fail(bias, "true: fbt's linear maps have no bias");
  if (!r.flag("tie_word_embeddings", false))
    r.fail("tie_word_embeddings",
           "false (Hugging Face's default for Llama): fbt's model ties the output "
           "projection to the embedding; an untied lm_head is not supported");
}

RopeScaling ropeScaling(const ConfigReader &r) {
  RopeScaling out;
  const Json *s = r.find("rope_scaling");
  if (!s)
    return out;
  if (!s->is_object())
    r.fail("rope_scaling", "expected an object or null");
  const Json *type = jsonFind(*s, "rope_type");
  if (!type)
    type = jsonFind(*s, "type");
  std::string name = type && type->is_string() ? asString(*type) : "";
  std::optional<RopeScalingType> kind = parseRopeScalingType(name);
  if (!kind)
    r.fail("rope_scaling", "'" + name + "' is not supported (supported: " +
                               kRopeScalingTypes + ")");
  double factor = r.read("rope_scaling", [](const Json &j) { return asDouble(jsonAt(j, "factor")); });
  if (!(factor >= 1))
    r.fail("rope_scaling", "factor " + std::to_string(factor) + " is below 1");
  out.type = *kind;
  out.factor = factor;
  return out;
}


/// Which file holds each tensor: one model.safetensors, or the shards of
/// model.safetensors.index.json's weight_map.
std::map<std::string, std::string> weightFiles(const std::string &dir) {
  std::string single = dir + "/model.safetensors", index = single + ".index.json";
  std::map<std::string, std::string> files;
  if (isFile(single)) {
    for (const Tensor &t : readSafetensorsHeader(single).tensors)
      files[t.name] = single;
    return files;
  }
  if (!isFile(index))
    throw RuntimeError(dir + ": neither model.safetensors nor "
                             "model.safetensors.index.json in this folder");
  Json map = jsonAt(loadJsonFile(index), "weight_map");
  for (const auto &[name, file] : asObject(map)) {
    const std::string &shard = asString(file);
    if (shard.find('/') != std::string::npos)
      throw RuntimeError(index + ": weight_map: '" + name + "' is in '" + shard +
                         "', outside the folder");
    files[name] = dir + "/" + shard;
  }
  return files;
}

} // namespace

llama::Hyperparameters readLlamaConfig(const Json &config, const std::string &source) {
  ConfigReader r(config, source);
  checkArchitecture(r);
  llama::Hyperparameters h;
  h.vocab = r.positive("vocab_size");
  h.hidden = r.positive("hidden_size");
  h.layers = r.positive("num_hidden_layers");
  h.heads = r.positive("num_attention_heads");
  h.intermediate = r.positive("intermediate_size");
  h.contextLength = r.integer("max_position_embeddings", 2048);
  if (h.contextLength < 1)
    r.fail("max_position_embeddings", "expected an integer >= 1, got " +
                                          std::to_string(h.contextLength));
  h.rmsNormEps = r.number("rms_norm_eps", 1e-6);
  h.ropeTheta = r.number("rope_theta", 10000.0);
  for (auto [key, v] : {std::pair<const char *, double>{"rms_norm_eps", h.rmsNormEps},
                        {"rope_theta", h.ropeTheta}})
    if (!(v > 0) || !std::isfinite(v))
      r.fail(key, "expected a number > 0, got " + dumpJson(Json(v)));
  h.ropeScaling = ropeScaling(r);
  h.depthScale = 1;
  h.bosTokenId = r.integer("bos_token_id", 1);
  checkUnsupported(r, h);
  return h;
}

Json ropeScalingJson(const RopeScaling &s) {
  if (!s.enabled())
    return nullptr;
  return Json{{"rope_type", ropeScalingTypeName(s.type)}, {"factor", s.factor}};
}

Json llamaConfig(const llama::Hyperparameters &h) {
  Json scaling = ropeScalingJson(h.ropeScaling);
  return Json{{"architectures", Json::array({"LlamaForCausalLM"})},
              {"model_type", "llama"},
              {"vocab_size", h.vocab},
              {"hidden_size", h.hidden},
              {"intermediate_size", h.intermediate},
              {"num_hidden_layers", h.layers},
              {"num_attention_heads", h.heads},
              {"num_key_value_heads", h.heads},
              {"head_dim", h.hidden / h.heads},
              {"hidden_act", "silu"},
              {"max_position_embeddings", h.contextLength},
              {"rms_norm_eps", h.rmsNormEps},
              {"rope_theta", h.ropeTheta},
              {"rope_scaling", scaling},
              {"attention_bias", false},
              {"mlp_bias", false},
              {"tie_word_embeddings", true},
              {"bos_token_id", h.bosTokenId},
              {"eos_token_id", h.bosTokenId},
              {"torch_dtype", "float32"}};
}

std::vector<std::pair<std::string, std::vector<int64_t>>>
llamaWeightShapes(const llama::Hyperparameters &h) {
  const int64_t V = h.vocab, D = h.hidden, F = h.intermediate;
  std::vector<std::pair<std::string, std::vector<int64_t>>> shapes = {
      {"model.embed_tokens.weight", {V, D}}};
  for (int64_t l = 0; l < h.layers; ++l) {
    std::string p = "model.layers." + std::to_string(l) + ".";
    for (const char *name : {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                             "self_attn.o_proj"})
      shapes.push_back({p + name + ".weight", {D, D}});
    shapes.push_back({p + "mlp.gate_proj.weight", {F, D}});
    shapes.push_back({p + "mlp.up_proj.weight", {F, D}});
    shapes.push_back({p + "mlp.down_proj.weight", {D, F}});
    shapes.push_back({p + "input_layernorm.weight", {D}});
    shapes.push_back({p + "post_attention_layernorm.weight", {D}});
  }
  shapes.push_back({"model.norm.weight", {D}});
  return shapes;
}

std::vector<Tensor> readLlamaWeights(const std::string &dir, const llama::Hyperparameters &h) {
  std::map<std::string, std::string> files = weightFiles(dir);
  // The sizes config.json states, against what the weights hold, before
  // anything is allocated from them: the layers the tensors' names number,
  // and the embedding's shape.
  int64_t layers = 0;
  for (const auto &[name, file] : files) {
    const std::string prefix = "model.layers.";
    if (name.compare(0, prefix.size(), prefix) == 0) {
      size_t end = name.find('.', prefix.size());
      std::string index = name.substr(prefix.size(), end - prefix.size());
      if (!index.empty() && index.size() < 10 &&
          index.find_first_not_of("0123456789") == std::string::npos)
        layers = std::max<int64_t>(layers, std::stoll(index) + 1);
    }
  }
  if (layers != h.layers)
    throw RuntimeError(dir + "/config.json: num_hidden_layers is " + std::to_string(h.layers) +
                       ", but the weights hold " + std::to_string(layers) + " layers");
  auto shapes = llamaWeightShapes(h);
  std::set<std::string> known = {"lm_head.weight"};
  for (const auto &[name, shape] : shapes)
    known.insert(name);
  for (const auto &[name, file] : files)
    if (!known.count(name) && name.find("rotary_emb.inv_freq") == std::string::npos)
      throw RuntimeError(file + ": tensor '" + name + "' has no place in fbt's model");
  // Each file read once, for the tensors it holds.
  std::map<std::string, SafetensorsFile> read;
  auto tensor = [&](const std::string &name) -> const Tensor & {
    const std::string &file = files.at(name);
    auto it = read.find(file);
    if (it == read.end())
      it = read.emplace(file, readSafetensorsSome(file, [&](std::string_view n) {
                          return known.count(std::string(n)) > 0;
                        })).first;
    return it->second.at(name);
  };
  std::vector<Tensor> out;
  for (const auto &[name, shape] : shapes) {
    if (!files.count(name))
      throw RuntimeError(dir + ": no tensor '" + name + "' in the folder's weights");
    const Tensor &t = tensor(name);
    if (t.shape != shape)
      throw RuntimeError(files.at(name) + ": tensor '" + name + "' has shape " +
                         shapeString(t.shape) + "; config.json gives " + shapeString(shape));
    std::vector<float> values = t.toF32();
    for (float x : values)
      if (!std::isfinite(x))
        throw RuntimeError(files.at(name) + ": tensor '" + name + "' holds NaN or Inf");
    out.push_back(Tensor::fromF32(name, shape, values));
  }
  if (files.count("lm_head.weight") &&
      tensor("lm_head.weight").toF32() != out.front().toF32())
    throw RuntimeError(files.at("lm_head.weight") +
                       ": tensor 'lm_head.weight' differs from model.embed_tokens.weight: "
                       "untied output embeddings are not supported");
  return out;
}

std::vector<Tensor> llamaTensors(const llama::Hyperparameters &h,
                                 const llama::WeightSource &weight) {
  std::vector<Tensor> out;
  for (const auto &[name, shape] : llamaWeightShapes(h)) {
    std::vector<float> values = weight(name);
    bool branchEnd = name.find("o_proj") != std::string::npos ||
                     name.find("down_proj") != std::string::npos;
    if (branchEnd)
      for (float &x : values)
        x = (float)(x * h.depthScale);
    out.push_back(Tensor::fromF32(name, shape, values));
  }
  return out;
}

} // namespace fbt::hf
