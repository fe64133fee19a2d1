//===- CmdImport.cpp - fbt import: a Hugging Face Llama as a spec and weights ===//
//
// A LlamaForCausalLM folder becomes a spec (fbtc compiles it) and a
// checkpoint of its weights (fbt generate runs it; fbt train --init starts
// from it). What maps and what is refused is runtime/format/HfLlama.h's;
// this reads the folder, chooses the tokenizer and writes the two files.
//
// The tokenizer: a tokenizer.json that tokenizes as GPT-2 does
// (Gpt2Vocabulary.h) is copied beside the checkpoint and named by the run
// ("gpt2:PATH"), or is the byte-level vocabulary itself ("bytes", what fbt
// export --hf writes for byte-level runs). One that does not (Llama 2's
// Metaspace, Llama 3's Split) is refused by name unless the folder has a
// SentencePiece tokenizer.model, which is taken instead ("sp:PATH").
//
//===----------------------------------------------------------------------===//

#include "CommandLine.h"
#include "Commands.h"

#include "runtime/base/Error.h"
#include "runtime/base/FileIO.h"
#include "runtime/base/Json.h"
#include "runtime/format/HfLlama.h"
#include "runtime/format/Safetensors.h"
#include "runtime/text/Gpt2Vocabulary.h"
#include "runtime/text/Tokenizer.h"

#include <algorithm>
#include <cstdio>
#include <filesystem>

namespace fbt {

namespace {

namespace fs = std::filesystem;

/// The folder's tokenizer, checked by loading it where it is; copied beside
/// the checkpoint once everything else is checked too.
struct ImportedTokenizer {
  std::string kind;   ///< "bytes", "gpt2" or "sp"
  fs::path source;    ///< the file to copy ("" for bytes)
  std::string suffix; ///< the copy's: the checkpoint's stem + this
  int64_t vocab = 0;
  int32_t separator = 0;
};

ImportedTokenizer loaded(const std::string &kind, const fs::path &source,
                         const std::string &suffix) {
  std::unique_ptr<Tokenizer> t = loadTokenizer(kind + ":" + source.string());
  return {kind, source, suffix, t->vocabSize(), t->documentSeparator()};
}

/// The folder's tokenizer (see the file comment).
ImportedTokenizer importTokenizer(const fs::path &dir) {
  fs::path json = dir / "tokenizer.json", spm = dir / "tokenizer.model";
  if (!fs::exists(json)) {
    if (fs::exists(spm))
      return loaded("sp", spm, ".tokenizer.model");
    throw RuntimeError(dir.string() + ": no tokenizer.json or tokenizer.model in this folder");
  }
  gpt2::Vocabulary v;
  try {
    v = gpt2::readVocabulary(json.string());
  } catch (const RuntimeError &) {
    if (fs::exists(spm))
      return loaded("sp", spm, ".tokenizer.model");
    throw;
  }
  if (gpt2::isByteVocabulary(v))
    return {"bytes", {}, "", 256, byteTokenizer().documentSeparator()};
  return loaded("gpt2", json, ".tokenizer.json");
}

/// The name the checkpoint records for `tok`, copied beside it (`stem` is
/// its path without .safetensors) so the run does not depend on the folder.
std::string placeTokenizer(const ImportedTokenizer &tok, const std::string &stem, FileSet &out) {
  if (tok.kind == "bytes")
    return "bytes";
  std::string copy = stem + tok.suffix, bytes = readFile(tok.source.string());
  writeFileAtomic(out.stage(copy), {bytes});
  return canonicalTokenizerName(tok.kind + ":" + copy);
}

/// A spec name (letters, digits, '_', '-', '.'; at most 64) from a folder's.
std::string specName(const fs::path &dir) {
  std::string base = fs::absolute(dir).lexically_normal().filename().string();
  if (base.empty())
    base = fs::absolute(dir).lexically_normal().parent_path().filename().string();
  for (char &c : base)
    if (!std::isalnum((unsigned char)c) && c != '_' && c != '-' && c != '.')
      c = '-';
  base.resize(std::min<size_t>(base.size(), 64));
  return base.empty() ? "imported" : base;
}

struct Lengths {
  int64_t training, prompt, sequence;
};

/// The spec: the model's keys, plain (fusion none) or, with `feedback`, an
/// FBT whose feedback path starts as the spec's defaults say (depth
/// scaling off, so its standard regime is the imported model).
Json specJson(const llama::Hyperparameters &h, bool feedback, const Lengths &n) {
  Json spec{{"name", h.name},
            {"vocab_size", h.vocab},
            {"hidden_size", h.hidden},
            {"num_hidden_layers", h.layers},
            {"num_attention_heads", h.heads},
            {"intermediate_size", h.intermediate},
            {"max_position_embeddings", h.contextLength},
            {"rms_norm_eps", h.rmsNormEps},
            {"rope_theta", h.ropeTheta}};
  if (h.ropeScaling.enabled())
    spec["rope_scaling"] = hf::ropeScalingJson(h.ropeScaling);
  spec["tie_word_embeddings"] = true;
  spec["bos_token_id"] = h.bosTokenId;
  spec["feedback"] = Json{{"fusion", feedback ? "glu" : "none"}, {"depth_scaling", false}};
  spec["training"] = Json{{"sequence_length", n.training}};
  spec["inference"] = Json{{"batch_size", 1},
                           {"max_prompt_length", n.prompt},
                           {"max_sequence_length", n.sequence}};
  return spec;
}

Lengths lengths(const CommandLine &args, int64_t context) {
  Lengths n;
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
  h.name = args.get("name", specName(dir));
  std::vector<Tensor> weights = hf::readLlamaWeights(dir.string(), h);
  Lengths n = lengths(args, h.contextLength);

  ImportedTokenizer tok = importTokenizer(dir);
  if (tok.vocab > h.vocab)
    throw RuntimeError(configPath + ": vocab_size " + std::to_string(h.vocab) +
                       " is smaller than the tokenizer's " + std::to_string(tok.vocab) +
                       " tokens");
  h.bosTokenId = tok.separator; // fbt's document separator, before every prompt

  // The checkpoint, its tokenizer and the spec: all three or none.
  FileSet out;
  std::string tokenizer = placeTokenizer(tok, ckptPath.substr(0, ckptPath.size() - 12), out);
  writeSafetensorsAtomic(out.stage(ckptPath), weights,
                         {{"format", "pt"},
                          {"fbt.model", h.name},
                          {"fbt.step", "0"},
                          {"fbt.tokenizer", tokenizer}});
  std::string spec = dumpJson(specJson(h, args.has("feedback"), n), 2) + "\n";
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
