//===- CmdExport.cpp - fbt export: a checkpoint as GGUF or a Hugging Face Llama ===//
//
// The command line of runtime/interop/CheckpointExport.h: which checkpoint,
// which form, and what was written.
//
//===----------------------------------------------------------------------===//

#include "CommandLine.h"
#include "Commands.h"

#include "runtime/base/Error.h"
#include "runtime/format/Bundle.h"
#include "runtime/format/Safetensors.h"
#include "runtime/interop/CheckpointExport.h"

#include <cstdio>
#include <string_view>

namespace fbt {

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
  if (args.has("gguf")) {
    ExportCounts n =
        writeGguf(args.get("gguf"), bundle, h, vocab, ckpt, weight, withFeedback, type);
    std::printf("wrote %s: %s, %zu tensors (llama: V=%lld D=%lld L=%lld H=%lld "
                "F=%lld, matrices %s), depth scaling %.4g folded%s\n",
                args.get("gguf").c_str(), h.name.c_str(), n.tensors, (long long)h.vocab,
                (long long)h.hidden, (long long)h.layers, (long long)h.heads,
                (long long)h.intermediate, ggml::typeName(type), h.depthScale,
                n.feedbackTensors ? ", feedback weights as fbt.feedback.*" : "");
  } else {
    ExportCounts n = writeHfFolder(args.get("hf"), h, vocab, weight);
    std::printf("wrote %s: %s, config.json, model.safetensors (%zu tensors, f32), "
                "tokenizer.json (%zu tokens); depth scaling %.4g folded\n",
                args.get("hf").c_str(), h.name.c_str(), n.tensors,
                vocab.vocabulary.tokens.size(), h.depthScale);
  }
  return 0;
}

} // namespace fbt
