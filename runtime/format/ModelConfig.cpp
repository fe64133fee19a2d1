//===- ModelConfig.cpp - the bundle's model config, typed -----------------===//

#include "runtime/format/ModelConfig.h"

#include "runtime/base/Error.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <system_error>
#include <utility>

namespace fbt {

namespace {

/// Reads the members of one object, prefixing every error with the member's
/// path ("model.training" + ".batch_size").
class Section {
public:
  Section(const Json &object, std::string path)
      : object_(object), path_(std::move(path)) {
    if (!object_.is_object())
      throw RuntimeError(path_ + ": expected an object, got " +
                         jsonKindName(object_));
  }

  const std::string &path() const { return path_; }
  const Json &json() const { return object_; }
  bool has(const char *key) const { return jsonFind(object_, key) != nullptr; }

  /// read(member) for the member named key; errors name path.key.
  template <class Read> decltype(auto) get(const char *key, Read read) const {
    try {
      return read(jsonAt(object_, key));
    } catch (const RuntimeError &e) {
      throw RuntimeError(path_ + "." + key + ": " + e.what());
    }
  }
  /// As get(), or nullopt when the key is absent.
  template <class Read>
  auto find(const char *key, Read read) const
      -> std::optional<decltype(read(std::declval<const Json &>()))> {
    if (!has(key))
      return std::nullopt;
    return get(key, read);
  }

  int64_t integer(const char *key) const {
    return get(key, [](const Json &v) { return asInt(v); });
  }
  double number(const char *key) const {
    return get(key, [](const Json &v) { return asDouble(v); });
  }
  std::string string(const char *key) const {
    return get(key, [](const Json &v) { return asString(v); });
  }
  Section section(const char *key) const {
    return Section(get(key, [](const Json &v) -> const Json & { return v; }),
                   path_ + "." + key);
  }

private:
  const Json &object_;
  std::string path_;
};

/// "pass_distribution": {"K": weight, ...}, in the JSON's order.
std::vector<std::pair<int64_t, double>> passDistribution(const Section &training) {
  std::vector<std::pair<int64_t, double>> out;
  if (!training.has("pass_distribution"))
    return out;
  Section d = training.section("pass_distribution");
  for (const auto &member : asObject(d.json())) {
    const std::string &key = member.first;
    int64_t k = 0;
    const char *end = key.data() + key.size();
    auto [stop, ec] = std::from_chars(key.data(), end, k);
    if (key.empty() || ec != std::errc() || stop != end)
      throw RuntimeError(d.path() + ": the key '" + key +
                         "' is not a number of passes");
    out.push_back({k, d.number(key.c_str())});
  }
  return out;
}

} // namespace

ModelConfig parseModelConfig(const Json &model) {
  Section m(model, "model");
  ModelConfig c;
  c.name = m.string("name");
  c.vocabSize = m.integer("vocab_size");
  c.hiddenSize = m.integer("hidden_size");
  c.numHiddenLayers = m.integer("num_hidden_layers");
  c.numAttentionHeads = m.integer("num_attention_heads");
  c.intermediateSize = m.integer("intermediate_size");
  c.bosTokenId = m.integer("bos_token_id");

  Section f = m.section("feedback");
  c.feedback.fusion =
      f.get("fusion", [](const Json &v) { return requireKind<Fusion>(asString(v), "fusion"); });
  c.feedback.init = f.find("init", [](const Json &v) { return asString(v); });
  c.feedback.initStd = f.find("init_std", [](const Json &v) { return asDouble(v); });

  Section t = m.section("training");
  c.training.batchSize = t.integer("batch_size");
  c.training.sequenceLength = t.integer("sequence_length");
  c.training.steps = t.integer("steps");
  c.training.seed = static_cast<uint64_t>(t.integer("seed"));
  c.training.learningRate = t.number("learning_rate");
  c.training.minLearningRate = t.number("min_learning_rate");
  c.training.warmupSteps = t.integer("warmup_steps");
  c.training.singlePassFraction = t.number("single_pass_fraction");
  c.training.passDistribution = passDistribution(t);
  if (c.training.passDistribution.empty()) {
    c.training.passes = t.integer("passes");
    c.training.deepPassFraction = t.number("deep_pass_fraction");
    c.training.deepPasses = t.integer("deep_passes");
  } else {
    // A distribution gives every multi-pass K; the fixed schedule's keys
    // are absent (older bundles kept them, unused). Its smallest K keeps
    // the unused fields valid.
    int64_t k = std::min_element(c.training.passDistribution.begin(),
                                 c.training.passDistribution.end())
                    ->first;
    c.training.passes = c.training.deepPasses = k;
    c.training.deepPassFraction = 0;
  }

  Section i = m.section("inference");
  c.inference.batchSize = i.integer("batch_size");
  c.inference.maxPromptLength = i.integer("max_prompt_length");
  c.inference.maxSequenceLength = i.integer("max_sequence_length");
  c.inference.weights = i.find("weights", [](const Json &v) {
                           return requireKind<WeightForm>(asString(v), "inference.weights");
                         }).value_or(WeightForm::F32);
  c.inference.activations = i.find("activations", [](const Json &v) {
                               return requireKind<WeightForm>(asString(v), "inference.activations");
                             }).value_or(WeightForm::F32);
  c.inference.kvCache = i.find("kv_cache", [](const Json &v) {
                           return requireKind<CacheForm>(asString(v), "inference.kv_cache");
                         }).value_or(CacheForm::F32);
  return c;
}

} // namespace fbt
