//===- CmdExport.cpp - fbt export: a checkpoint as a llama.cpp GGUF -------===//
//
// Reads a checkpoint's model weights (checked as loading it would check
// them) and writes its standard regime as llama.cpp's "llama" architecture
// through runtime/format/LlamaGguf.h, which says how the two differ and how
// the conversion makes up for it. The feedback weights: llama.cpp refuses a
// file holding tensors its architecture does not use ("done_getting_tensors:
// wrong number of tensors"), so they are left out unless --with-feedback
// asks for them (as fbt.feedback.*), for readers other than llama.cpp.
//
//===----------------------------------------------------------------------===//

#include "CommandLine.h"
#include "Commands.h"

#include "runtime/base/Error.h"
#include "runtime/format/Bundle.h"
#include "runtime/format/Gguf.h"
#include "runtime/format/LlamaGguf.h"
#include "runtime/format/ModelConfig.h"
#include "runtime/format/Safetensors.h"
#include "runtime/text/Gpt2Bytes.h"
#include "runtime/text/Tokenizer.h"

#include <cmath>
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
  if (const Json *scaling = jsonFind(model, "rope_scaling"); scaling && !scaling->is_null())
    h.ropeScaling = asDouble(jsonAt(*scaling, "factor"));
  h.depthScale = read("feedback.depth_scaling", number);
  return h;
}

/// The checkpoint's tokenizer, which must be byte-level.
std::string byteTokenizer(const SafetensorsFile &ckpt, const std::string &ckptPath) {
  std::string tokenizer = "bytes";
  if (auto it = ckpt.metadata.find("fbt.tokenizer"); it != ckpt.metadata.end())
    tokenizer = canonicalTokenizerName(it->second);
  if (tokenizer != "bytes")
    throw RuntimeError(ckptPath + ": its run's tokenizer is '" + tokenizer +
                       "'; fbt export supports byte-level runs (tokenizer "
                       "bytes) for now");
  return tokenizer;
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

int runExport(int argc, char **argv) {
  CommandLine args(
      "fbt export",
      "Writes the standard (K=1) model of a checkpoint as a GGUF file of\n"
      "llama.cpp's \"llama\" architecture, f32: what `fbt generate --mode\n"
      "standard` computes, for llama.cpp and the tools built on it.");
  args.positional("BUNDLE", "the compiled bundle the checkpoint was trained with")
      .text("ckpt", "CKPT", "a checkpoint from fbt train (required)")
      .text("gguf", "OUT.gguf", "the file to write (required; replaced atomically)")
      .flag("with-feedback",
            "also store the feedback weights, as fbt.feedback.* (llama.cpp "
            "then refuses the file: it loads only files whose every tensor "
            "its architecture uses)")
      .footer("Depth scaling is folded into attn_output and ffn_down, W_q and W_k\n"
              "rows are permuted to llama.cpp's RoPE pairs, and the byte-level\n"
              "vocabulary is stored as GPT-2 byte symbols without merges. Runs\n"
              "with a GPT-2 BPE or SentencePiece tokenizer are not exported yet.");
  if (!args.parse(argc, argv))
    return 0;
  if (!args.has("ckpt") || !args.has("gguf"))
    throw RuntimeError("--ckpt and --gguf are required (see --help)");
  const std::string ckptPath = args.get("ckpt"), outPath = args.get("gguf");

  Bundle bundle = Bundle::load(args.require("BUNDLE"));
  llama::Hyperparameters h = readHyperparameters(bundle);
  const bool withFeedback = args.has("with-feedback");

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
  std::string tokenizer = byteTokenizer(ckpt, ckptPath);
  auto weight = [&](const std::string &name) {
    return checkedWeight(bundle, ckpt, ckptPath, name);
  };

  GgufWriter gguf; // alignment 32, llama.cpp's default, written explicitly
  try {
    llama::addHyperparameters(gguf, h);
    llama::addByteVocabulary(gguf, h, gpt2::byteSymbols());
  } catch (const RuntimeError &e) {
    throw RuntimeError(bundle.path() + ": " + e.what());
  }
  // Where it came from; readers ignore keys they do not know.
  gguf.addString("fbt.tokenizer", tokenizer);
  if (auto it = ckpt.metadata.find("fbt.step"); it != ckpt.metadata.end())
    gguf.addString("fbt.step", it->second);
  gguf.addF32("fbt.depth_scaling_folded", (float)h.depthScale);
  llama::addTensors(gguf, h, weight);
  size_t feedbackTensors = 0;
  if (withFeedback)
    for (const ParamSpec &p : bundle.params())
      if (p.name.rfind("feedback.", 0) == 0) {
        gguf.addTensor("fbt." + p.name, p.shape, weight(p.name));
        ++feedbackTensors;
      }

  gguf.writeAtomic(outPath);
  std::printf("wrote %s: %s, %zu tensors (llama: V=%lld D=%lld L=%lld H=%lld "
              "F=%lld), depth scaling %.4g folded%s\n",
              outPath.c_str(), h.name.c_str(), gguf.tensorCount(), (long long)h.vocab,
              (long long)h.hidden, (long long)h.layers, (long long)h.heads,
              (long long)h.intermediate, h.depthScale,
              feedbackTensors ? ", feedback weights as fbt.feedback.*" : "");
  return 0;
}

} // namespace fbt
