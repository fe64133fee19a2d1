//===- HfImport.cpp - a Hugging Face Llama as a spec and weights ----------===//

#include "runtime/interop/HfImport.h"

#include "runtime/base/Error.h"
#include "runtime/interop/HfLlama.h"
#include "runtime/text/Gpt2Vocabulary.h"
#include "runtime/text/Tokenizer.h"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <memory>

namespace fbt::hf {

namespace fs = std::filesystem;

namespace {

ImportedTokenizer loaded(const std::string &kind, const fs::path &source,
                         const std::string &suffix) {
  std::unique_ptr<Tokenizer> t = loadTokenizer(kind + ":" + source.string());
  return {kind, source.string(), suffix, t->vocabSize(), t->documentSeparator()};
}

} // namespace

ImportedTokenizer importTokenizer(const std::string &folder) {
  const fs::path dir = folder;
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

std::string placeTokenizer(const ImportedTokenizer &tok, const std::string &stem, FileSet &out) {
  if (tok.kind == "bytes")
    return "bytes";
  std::string copy = stem + tok.suffix, bytes = readFile(tok.source);
  writeFileAtomic(out.stage(copy), {bytes});
  return canonicalTokenizerName(tok.kind + ":" + copy);
}

std::string specName(const std::string &folder) {
  const fs::path dir = folder;
  std::string base = fs::absolute(dir).lexically_normal().filename().string();
  if (base.empty())
    base = fs::absolute(dir).lexically_normal().parent_path().filename().string();
  for (char &c : base)
    if (!std::isalnum((unsigned char)c) && c != '_' && c != '-' && c != '.')
      c = '-';
  base.resize(std::min<size_t>(base.size(), 64));
  return base.empty() ? "imported" : base;
}

Json importedSpec(const llama::Hyperparameters &h, bool feedback, const SpecLengths &n) {
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

} // namespace fbt::hf
