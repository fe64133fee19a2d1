//===- CmdImport.cpp - fbt import: a Hugging Face Llama as a spec and weights ===//
//
// The command line of runtime/interop/HfImport.h: the folder, the files to
// write (the checkpoint, its tokenizer's copy and the spec, all three or
// none) and the spec's lengths.
//
//===----------------------------------------------------------------------===//

#include "CommandLine.h"
#include "Commands.h"

#include "runtime/base/Error.h"
#include "runtime/base/FileIO.h"
#include "runtime/base/Json.h"
#include "runtime/format/Safetensors.h"
#include "runtime/interop/HfImport.h"
#include "runtime/interop/HfLlama.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

namespace fbt {

namespace {

namespace fs = std::filesystem;

hf::SpecLengths lengths(const CommandLine &args, int64_t context) {
  hf::SpecLengths n;
  n.sequence = args.getInt("max-sequence-length", std::min<int64_t>(context, 1024));
  n.prompt = args.getInt("max-prompt-length", std::min<int64_t>(n.sequence, 256));
  n.training = args.getInt("sequence-length", std::min<int64_t>(context, 256));
  auto check = [&](const char *option, int64_t v, int64_t most, const char *what) {
    if (v < 1 || v > most)
      throw RuntimeError("--" + std::string(option) + " " + std::to_string(v) +
                         ": expected 1 .. " + std::to_string(most) + " (" + what + ")");
  };
  check("max-sequence-length", n.sequence, context, "max_position_embeddings");
  check("max-prompt-length", n.prompt, n.sequence, "the --max-sequence-length");
  check("sequence-length", n.training, context, "max_position_embeddings");
  return n;
}

} // namespace

int runImport(int argc, char **argv) {
  CommandLine args("fbt import",
                   "Turns a Hugging Face LlamaForCausalLM folder (config.json,\n"
                   "model.safetensors or its sharded index, tokenizer.json) into a spec\n"
                   "for fbtc and a checkpoint for fbt generate and fbt train --init.");
  args.positional("HF_DIR", "the folder to import")
      .positional("CKPT", "the checkpoint to write (.safetensors); it, its tokenizer's copy "
                          "and the spec are written together or not at all")
      .text("o,spec", "SPEC.json", "the spec to write (required)")
      .text("name", "NAME", "the model's name (default: the folder's)")
      .flag("feedback",
            "write the spec as an FBT (fusion glu, depth scaling off): the checkpoint "
            "then lacks only the feedback weights, which fbt train --init starts as "
            "the spec says")
      .integer("sequence-length", "N", "training.sequence_length (default: the context, at most 256)")
      .integer("max-prompt-length", "N", "inference.max_prompt_length (default at most 256)")
      .integer("max-sequence-length", "N",
               "inference.max_sequence_length (default: the context, at most 1024)")
      .footer("Refused, naming the key or tensor: untied embeddings, grouped-query\n"
              "attention, biases, activations other than silu, RoPE scaling other\n"
              "than linear, tokenizers that do not tokenize as GPT-2 does unless\n"
              "the folder has a SentencePiece tokenizer.model.");
  if (!args.parse(argc, argv))
    return 0;
  if (!args.has("HF_DIR") || !args.has("CKPT") || !args.has("spec"))
    throw RuntimeError("HF_DIR, CKPT and -o SPEC.json are required (see --help)");
  const fs::path dir = args.get("HF_DIR");
  const std::string ckptPath = args.get("CKPT"), specPath = args.get("spec");
  if (ckptPath.size() < 13 || ckptPath.substr(ckptPath.size() - 12) != ".safetensors")
    throw RuntimeError(ckptPath + ": the checkpoint's name must end in .safetensors");

  std::string configPath = (dir / "config.json").string();
  llama::Hyperparameters h = hf::readLlamaConfig(loadJsonFile(configPath), configPath);
  h.name = args.get("name", hf::specName(dir.string()));
  std::vector<Tensor> weights = hf::readLlamaWeights(dir.string(), h);
  hf::SpecLengths n = lengths(args, h.contextLength);

  hf::ImportedTokenizer tok = hf::importTokenizer(dir.string());
  if (tok.vocab > h.vocab)
    throw RuntimeError(configPath + ": vocab_size " + std::to_string(h.vocab) +
                       " is smaller than the tokenizer's " + std::to_string(tok.vocab) +
                       " tokens");
  h.bosTokenId = tok.separator; // fbt's document separator, before every prompt

  // The checkpoint, its tokenizer and the spec: all three or none.
  FileSet out;
  std::string tokenizer = hf::placeTokenizer(tok, ckptPath.substr(0, ckptPath.size() - 12), out);
  writeSafetensorsAtomic(out.stage(ckptPath), weights,
                         {{"format", "pt"},
                          {"fbt.model", h.name},
                          {"fbt.step", "0"},
                          {"fbt.tokenizer", tokenizer}});
  std::string spec = dumpJson(hf::importedSpec(h, args.has("feedback"), n), 2) + "\n";
  writeFileAtomic(out.stage(specPath), {spec});
  out.commit();
  std::printf("imported %s: %s (llama: V=%lld D=%lld L=%lld H=%lld F=%lld), %zu tensors, "
              "tokenizer %s (%lld tokens, separator %d)\nwrote %s and %s\n",
              dir.string().c_str(), h.name.c_str(), (long long)h.vocab, (long long)h.hidden,
              (long long)h.layers, (long long)h.heads, (long long)h.intermediate,
              weights.size(), tok.kind.c_str(),
              (long long)tok.vocab, tok.separator, specPath.c_str(), ckptPath.c_str());
  return 0;
}

} // namespace fbt
