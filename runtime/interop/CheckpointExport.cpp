//===- CheckpointExport.cpp - a checkpoint as GGUF or a HF Llama ----------===//

#include "runtime/interop/CheckpointExport.h"

#include "runtime/base/Error.h"
#include "runtime/base/FileIO.h"
#include "runtime/format/ModelConfig.h"
#include "runtime/interop/Gguf.h"
#include "runtime/interop/HfLlama.h"
#include "runtime/text/Tokenizer.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string_view>

namespace fbt {

llama::Hyperparameters readHyperparameters(const Bundle &bundle) {
  const Json &model = bundle.model();
  auto read = [&](const char *path, auto get) {
    try {
      const Json *at = &model;
      for (std::string_view rest = path; !rest.empty();) {
        size_t dot = rest.find('.');
        at = &jsonAt(*at, rest.substr(0, dot));
        rest = dot == std::string_view::npos ? "" : rest.substr(dot + 1);
      }
      return get(*at);
    } catch (const RuntimeError &e) {
      throw RuntimeError(bundle.path() + ": model." + path + ": " + e.what());
    }
  };
  auto number = [](const Json &v) { return asDouble(v); };
  ModelConfig m = parseModelConfig(model);
  llama::Hyperparameters h;
  h.name = m.name;
  h.vocab = m.vocabSize;
  h.hidden = m.hiddenSize;
  h.layers = m.numHiddenLayers;
  h.heads = m.numAttentionHeads;
  h.intermediate = m.intermediateSize;
  h.bosTokenId = m.bosTokenId;
  h.contextLength = read("max_position_embeddings", [](const Json &v) { return asInt(v); });
  h.rmsNormEps = read("rms_norm_eps", number);
  h.ropeTheta = read("rope_theta", number);
  if (const Json *scaling = jsonFind(model, "rope_scaling"); scaling && !scaling->is_null()) {
    // The bundle's spec, resolved by fbtc: its type is one fbtc took.
    std::string type = asString(jsonAt(*scaling, "rope_type"));
    h.ropeScaling.type = parseRopeScalingType(type).value_or(RopeScalingType::Linear);
    h.ropeScaling.factor = asDouble(jsonAt(*scaling, "factor"));
  }
  h.depthScale = read("feedback.depth_scaling", number);
  return h;
}

RunVocabulary runVocabulary(const SafetensorsFile &ckpt, const std::string &ckptPath) {
  RunVocabulary r;
  r.tokenizer = "bytes";
  if (auto it = ckpt.metadata.find("fbt.tokenizer"); it != ckpt.metadata.end())
    r.tokenizer = canonicalTokenizerName(it->second);
  if (r.tokenizer == "bytes") {
    r.vocabulary = gpt2::byteVocabulary();
    r.separator = byteTokenizer().documentSeparator();
    return r;
  }
  if (r.tokenizer.rfind("gpt2:", 0) != 0)
    throw RuntimeError(ckptPath + ": its run's tokenizer is '" + r.tokenizer +
                       "'; fbt export writes byte-level and GPT-2 BPE vocabularies "
                       "(SentencePiece is not exported yet)");
  try {
    r.vocabulary = gpt2::readVocabulary(r.tokenizer.substr(5));
    r.separator = loadTokenizer(r.tokenizer)->documentSeparator();
  } catch (const RuntimeError &e) {
    throw RuntimeError(ckptPath + ": its run's tokenizer: " + e.what());
  }
  return r;
}

llama::BpeVocabulary ggufVocabulary(const RunVocabulary &r) {
  llama::BpeVocabulary v;
  v.tokens = gpt2::tokensById(r.vocabulary);
  for (const auto &[a, b] : r.vocabulary.merges)
    v.merges.push_back(a + " " + b);
  v.control = r.vocabulary.added;
  if (r.tokenizer != "bytes" &&
      std::find(v.control.begin(), v.control.end(), r.separator) == v.control.end())
    v.control.push_back(r.separator);
  v.separator = r.separator;
  return v;
}

std::vector<float> checkedWeight(const Bundle &bundle, const SafetensorsFile &ckpt,
                                 const std::string &ckptPath, const std::string &name) {
  const ParamSpec *spec = nullptr;
  for (const ParamSpec &p : bundle.params())
    if (p.name == name)
      spec = &p;
  if (!spec)
    throw RuntimeError(bundle.path() + ": the bundle has no parameter '" + name + "'");
  const Tensor *t = ckpt.find(name);
  if (!t)
    throw RuntimeError(ckptPath + ": missing tensor '" + name +
                       "' (does this checkpoint belong to this bundle?)");
  if (t->shape != spec->shape)
    throw RuntimeError(ckptPath + ": tensor '" + name + "' has shape " +
                       shapeString(t->shape) + ", the bundle expects " +
                       shapeString(spec->shape) +
                       " (does this checkpoint belong to this bundle?)");
  std::vector<float> values = t->toF32();
  for (float x : values)
    if (!std::isfinite(x))
      throw RuntimeError(ckptPath + ": tensor '" + name + "' holds NaN or Inf");
  return values;
}

namespace {

/// A folder made for a command's outputs, removed again unless kept (a
/// failed export leaves no empty folder behind).
struct MadeFolder {
  std::filesystem::path path;
  bool made = false, kept = false;
  explicit MadeFolder(const std::string &dir) : path(dir) {
    std::error_code ec;
    if (std::filesystem::exists(path, ec) && !std::filesystem::is_directory(path, ec))
      throw RuntimeError(dir + ": exists and is not a folder");
    made = !std::filesystem::exists(path, ec);
    std::filesystem::create_directories(path, ec);
    if (ec)
      throw RuntimeError(dir + ": cannot make the folder: " + ec.message());
  }
  ~MadeFolder() {
    std::error_code ec;
    if (made && !kept)
      std::filesystem::remove(path, ec); // only if empty, as it was made
  }
};

} // namespace

ExportCounts writeGguf(const std::string &outPath, const Bundle &bundle,
                       const llama::Hyperparameters &h, const RunVocabulary &vocab,
                       const SafetensorsFile &ckpt, const llama::WeightSource &weight,
                       bool withFeedback, ggml::TensorType type) {
  GgufWriter gguf; // alignment 32, llama.cpp's default, written explicitly
  try {
    llama::addHyperparameters(gguf, h, type);
    llama::addBpeVocabulary(gguf, h, ggufVocabulary(vocab));
  } catch (const RuntimeError &e) {
    throw RuntimeError(bundle.path() + ": " + e.what());
  }
  // Where it came from; readers ignore keys they do not know.
  gguf.addString("fbt.tokenizer", vocab.tokenizer);
  if (auto it = ckpt.metadata.find("fbt.step"); it != ckpt.metadata.end())
    gguf.addString("fbt.step", it->second);
  gguf.addF32("fbt.depth_scaling_folded", (float)h.depthScale);
  try {
    llama::addTensors(gguf, h, weight, type);
  } catch (const RuntimeError &e) {
    throw RuntimeError(std::string("--type ") + ggml::typeName(type) + ": " + e.what() +
                       " (f32, f16 and bf16 take any shape)");
  }
  size_t feedbackTensors = 0;
  if (withFeedback)
    for (const ParamSpec &p : bundle.params())
      if (p.name.rfind("feedback.", 0) == 0) {
        gguf.addTensor("fbt." + p.name, p.shape, weight(p.name));
        ++feedbackTensors;
      }
  gguf.writeAtomic(outPath);
  return {gguf.tensorCount(), feedbackTensors};
}

ExportCounts writeHfFolder(const std::string &dir, const llama::Hyperparameters &h,
                           const RunVocabulary &vocab, const llama::WeightSource &weight) {
  if (vocab.vocabulary.tokens.size() > (size_t)h.vocab)
    throw RuntimeError("the model's vocabulary (" + std::to_string(h.vocab) +
                       ") is smaller than its tokenizer's");
  std::vector<Tensor> tensors = hf::llamaTensors(h, weight);
  MadeFolder folder(dir);
  std::string config = dumpJson(hf::llamaConfig(h), 2) + "\n";
  std::string tokenizer = gpt2::tokenizerJson(vocab.vocabulary);
  FileSet out;
  writeFileAtomic(out.stage(dir + "/config.json"), {config});
  writeFileAtomic(out.stage(dir + "/tokenizer.json"), {tokenizer});
  writeSafetensorsAtomic(out.stage(dir + "/model.safetensors"), tensors, {{"format", "pt"}});
  out.commit();
  folder.kept = true;
  return {tensors.size(), 0};
}

} // namespace fbt
