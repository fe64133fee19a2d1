//===- CheckpointExport.h - a checkpoint as GGUF or a HF Llama --*- C++ -*-===//
//
// fbt export's conversion, apart from its command line: a checkpoint's model
// weights (checked as loading it would check them) written as its standard
// regime, as llama.cpp's "llama" architecture (LlamaGguf.h says how the two
// differ and how the conversion makes up for it) or as a Hugging Face Llama
// folder (HfLlama.h), which fbt import reads back. The feedback weights:
// llama.cpp refuses a file holding tensors its architecture does not use, so
// a GGUF holds them (as fbt.feedback.*) only when asked.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_INTEROP_CHECKPOINTEXPORT_H
#define FBT_RUNTIME_INTEROP_CHECKPOINTEXPORT_H

#include "runtime/format/Bundle.h"
#include "runtime/format/GgmlTypes.h"
#include "runtime/format/Safetensors.h"
#include "runtime/interop/LlamaGguf.h"
#include "runtime/text/Gpt2Vocabulary.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fbt {

/// The hyperparameters: ModelConfig's, and what the export needs of the
/// bundle's resolved spec beyond it. Errors name the key's path.
llama::Hyperparameters readHyperparameters(const Bundle &bundle);

/// The run's vocabulary as the export writes it, and the id fbt puts
/// before every prompt (llama.cpp's BOS and EOS, Hugging Face's too).
struct RunVocabulary {
  std::string tokenizer; ///< the run's ("bytes", "gpt2:PATH")
  gpt2::Vocabulary vocabulary;
  int32_t separator = 0;
};

/// The vocabulary of the run `ckpt` (read from `ckptPath`) was trained with:
/// byte-level or GPT-2 BPE; a SentencePiece run is refused by name.
RunVocabulary runVocabulary(const SafetensorsFile &ckpt, const std::string &ckptPath);

/// llama.cpp's form of it: the separator and the added tokens are control
/// tokens (the byte vocabulary's separator is byte 0, kept a plain byte).
llama::BpeVocabulary ggufVocabulary(const RunVocabulary &r);

/// A weight of the bundle's model from `ckpt`, checked the way loading a
/// checkpoint checks it (present, of the bundle's shape, finite).
std::vector<float> checkedWeight(const Bundle &bundle, const SafetensorsFile &ckpt,
                                 const std::string &ckptPath, const std::string &name);

/// What a written export holds.
struct ExportCounts {
  size_t tensors = 0, feedbackTensors = 0;
};

/// `outPath` (replaced atomically): a GGUF of the "llama" architecture with
/// matrices of `type`, and with `withFeedback` the feedback weights too.
ExportCounts writeGguf(const std::string &outPath, const Bundle &bundle,
                       const llama::Hyperparameters &h, const RunVocabulary &vocab,
                       const SafetensorsFile &ckpt, const llama::WeightSource &weight,
                       bool withFeedback, ggml::TensorType type);

/// config.json, model.safetensors and tokenizer.json in `dir` (made if
/// missing, removed again if the export fails), placed together or not at
/// all.
ExportCounts writeHfFolder(const std::string &dir, const llama::Hyperparameters &h,
                           const RunVocabulary &vocab, const llama::WeightSource &weight);

} // namespace fbt

#endif // FBT_RUNTIME_INTEROP_CHECKPOINTEXPORT_H
