//===- HfImport.h - a Hugging Face Llama as a spec and weights -*- C++ -*-===//
//
// fbt import's conversion, apart from its command line: a LlamaForCausalLM
// folder becomes a spec (fbtc compiles it) and a checkpoint of its weights.
// What maps and what is refused is HfLlama.h's; this chooses the tokenizer
// and makes the spec.
//
// The tokenizer: a tokenizer.json that tokenizes as GPT-2 does
// (Gpt2Vocabulary.h) is copied beside the checkpoint and named by the run
// ("gpt2:PATH"), or is the byte-level vocabulary itself ("bytes", what fbt
// export --hf writes for byte-level runs). One that does not (Llama 2's
// Metaspace, Llama 3's Split) is refused by name unless the folder has a
// SentencePiece tokenizer.model, which is taken instead ("sp:PATH").
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_INTEROP_HFIMPORT_H
#define FBT_RUNTIME_INTEROP_HFIMPORT_H

#include "runtime/base/FileIO.h"
#include "runtime/base/Json.h"
#include "runtime/interop/LlamaGguf.h"

#include <cstdint>
#include <string>

namespace fbt::hf {

/// The folder's tokenizer, checked by loading it where it is; copied beside
/// the checkpoint once everything else is checked too.
struct ImportedTokenizer {
  std::string kind;   ///< "bytes", "gpt2" or "sp"
  std::string source; ///< the file to copy ("" for bytes)
  std::string suffix; ///< the copy's: the checkpoint's stem + this
  int64_t vocab = 0;
  int32_t separator = 0;
};

/// The tokenizer of the folder `dir` (see the file comment); a RuntimeError
/// naming the folder where it has none fbt can take.
ImportedTokenizer importTokenizer(const std::string &dir);

/// The name the checkpoint records for `tok`, staged in `out` beside it
/// (`stem` is its path without .safetensors) so the run does not depend on
/// the folder.
std::string placeTokenizer(const ImportedTokenizer &tok, const std::string &stem, FileSet &out);

/// A spec name (letters, digits, '_', '-', '.'; at most 64) from a folder's.
std::string specName(const std::string &dir);

/// The spec's lengths: training.sequence_length, inference.max_prompt_length
/// and inference.max_sequence_length.
struct SpecLengths {
  int64_t training, prompt, sequence;
};

/// The spec: the model's keys, plain (fusion none) or, with `feedback`, an
/// FBT whose feedback path starts as the spec's defaults say (depth
/// scaling off, so its standard regime is the imported model).
Json importedSpec(const llama::Hyperparameters &h, bool feedback, const SpecLengths &n);

} // namespace fbt::hf

#endif // FBT_RUNTIME_INTEROP_HFIMPORT_H
