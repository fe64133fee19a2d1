//===- CmdExport.cpp - fbt export: a checkpoint as GGUF or a Hugging Face Llama ===//
//
// Reads a checkpoint's model weights (checked as loading it would check
// them) and writes its standard regime as llama.cpp's "llama" architecture
// through runtime/format/LlamaGguf.h, which says how the two differ and how
// the conversion makes up for it, or as a Hugging Face Llama folder
// (runtime/format/HfLlama.h), which fbt import reads back. The feedback weights: llama.cpp refuses a
// file holding tensors its architecture does not use ("done_getting_tensors:
// wrong number of tensors"), so they are left out unless --with-feedback
// asks for them (as fbt.feedback.*), for readers other than llama.cpp.
//
//===----------------------------------------------------------------------===//

#include "CommandLine.h"
#include "Commands.h"

#include "runtime/base/Error.h"
#include "runtime/format/Bundle.h"
#include "runtime/base/FileIO.h"
#include "runtime/base/Json.h"
#include "runtime/format/Gguf.h"
#include "runtime/format/HfLlama.h"
#include "runtime/format/LlamaGguf.h"
#include "runtime/format/ModelConfig.h"
#include "runtime/format/Safetensors.h"
#include "runtime/text/Gpt2Vocabulary.h"
#include "runtime/text/Tokenizer.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <cstdint>
#include <cstdio>
#include <string_view>

namespace fbt {

namespace {

/// The hyperparameters: ModelConfig's, and what the export needs of the
/// resolved spec beyond it. Errors name the key's path, as
/// parseModelConfig's do.
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

/// The run's vocabulary as the export writes it, and the id fbt puts
/// before every prompt (llama.cpp's BOS and EOS, Hugging Face's too).
struct RunVocabulary {
  std::string tokenizer; ///< the run's ("bytes", "gpt2:PATH")
  gpt2::Vocabulary vocabulary;
  int32_t separator = 0;
};

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

/// llama.cpp's form of it: the separator and the added tokens are control
/// tokens (the byte vocabulary's separator is byte 0, kept a plain byte).
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

/// A weight of the bundle's model from `ckpt`, checked the way loading a
/// checkpoint checks it.
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

} // namespace

namespace {

void writeGguf(const std::string &outPath, const Bundle &bundle, const llama::Hyperparameters &h,
               const RunVocabulary &vocab, const SafetensorsFile &ckpt,
               const llama::WeightSource &weight, bool withFeedback, ggml::TensorType type) {
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
  std::printf("wrote %s: %s, %zu tensors (llama: V=%lld D=%lld L=%lld H=%lld "
              "F=%lld, matrices %s), depth scaling %.4g folded%s\n",
              outPath.c_str(), h.name.c_str(), gguf.tensorCount(), (long long)h.vocab,
              (long long)h.hidden, (long long)h.layers, (long long)h.heads,
              (long long)h.intermediate, ggml::typeName(type), h.depthScale,
              feedbackTensors ? ", feedback weights as fbt.feedback.*" : "");
}

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

/// config.json, model.safetensors and tokenizer.json in `dir` (made if
/// missing), placed together or not at all (FileSet).
void writeHfFolder(const std::string &dir, const llama::Hyperparameters &h,
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
  std::printf("wrote %s: %s, config.json, model.safetensors (%zu tensors, f32), "
              "tokenizer.json (%zu tokens); depth scaling %.4g folded\n",
              dir.c_str(), h.name.c_str(), tensors.size(), vocab.vocabulary.tokens.size(),
              h.depthScale);
}

} // namespace

int runExport(int argc, char **argv) {
  CommandLine args(
      "fbt export",
      "Writes the standard (K=1) model of a checkpoint, what `fbt generate --mode\n"
      "standard` computes, as a GGUF file of llama.cpp's \"llama\" architecture\n"
      "(f32, f16, bf16 or q8_0) or as a Hugging Face LlamaForCausalLM folder.");
  args.positional("BUNDLE", "the compiled bundle the checkpoint was trained with")
      .text("ckpt", "CKPT", "a checkpoint from fbt train (required)")
      .text("gguf", "OUT.gguf", "the GGUF file to write (replaced atomically)")
      .text("hf", "DIR",
            "the folder to write: config.json, model.safetensors, tokenizer.json "
            "(fbt import reads it back)")
      .text("type", "T",
            "--gguf: the matrices' type: f32 (default), f16, bf16 or q8_0 (llama.cpp's "
            "8-bit blocks of 32: every row a multiple of 32); norms stay f32")
      .flag("with-feedback",
            "also store the feedback weights in the GGUF, as fbt.feedback.* (llama.cpp "
            "then refuses the file: it loads only files whose every tensor "
            "its architecture uses)")
      .footer("Depth scaling is folded into attn_output / o_proj and ffn_down /\n"
              "down_proj; for GGUF, W_q and W_k rows are permuted to llama.cpp's\n"
              "RoPE pairs. The vocabulary is the run's: byte-level (GPT-2 byte\n"
              "symbols without merges) or GPT-2 BPE with its merges. Runs with a\n"
              "SentencePiece tokenizer are not exported yet.");
  if (!args.parse(argc, argv))
    return 0;
  if (!args.has("ckpt") || args.has("gguf") == args.has("hf"))
    throw RuntimeError("--ckpt and one of --gguf and --hf are required (see --help)");
  if (args.has("hf") && args.has("with-feedback"))
    throw RuntimeError("--with-feedback is for --gguf: a Hugging Face Llama has no "
                       "feedback weights (see --help)");
  const std::string ckptPath = args.get("ckpt");

  Bundle bundle = Bundle::load(args.require("BUNDLE"));
  llama::Hyperparameters h = readHyperparameters(bundle);
  const bool withFeedback = args.has("with-feedback");
  if (args.has("type") && !args.has("gguf"))
    throw RuntimeError("--type is for --gguf: the Hugging Face folder is f32 (see --help)");
  const ggml::TensorType type = ggml::parseType(args.get("type", "f32"));

  // The model's weights alone: the AdamW moments beside them are twice
  // their size and not exported.
  auto isModelWeight = [&](std::string_view name) {
    for (const ParamSpec &p : bundle.params())
      if (p.name == name)
        return withFeedback || name.rfind("feedback.", 0) != 0;
    return false;
  };
  SafetensorsFile ckpt = readSafetensorsSome(ckptPath, isModelWeight);
  if (auto it = ckpt.metadata.find("fbt.model"); it != ckpt.metadata.end() && it->second != h.name)
    throw RuntimeError(ckptPath + ": a checkpoint of model '" + it->second + "', not of " +
                       bundle.path() + "'s '" + h.name + "'");
  RunVocabulary vocab = runVocabulary(ckpt, ckptPath);
  h.bosTokenId = vocab.separator;
  auto weight = [&](const std::string &name) {
    return checkedWeight(bundle, ckpt, ckptPath, name);
  };
  if (args.has("gguf"))
    writeGguf(args.get("gguf"), bundle, h, vocab, ckpt, weight, withFeedback, type);
  else
    writeHfFolder(args.get("hf"), h, vocab, weight);
  return 0;
}

} // namespace fbt
