//===- Gpt2Vocabulary.h - a byte-level BPE vocabulary's files ----*- C++ -*-===//
//
// The files a GPT-2-style byte-level BPE tokenizer is read from, and written
// to: OpenAI's encoder.json + vocab.bpe, Hugging Face's vocab.json +
// merges.txt, or a Hugging Face tokenizer.json. One reading for the
// tokenizer that encodes with it (Tokenizer.cpp), the GGUF exporter that
// writes it as llama.cpp's "gpt2" tokenizer model, and the Hugging Face
// import and export (fbt import, fbt export --hf).
//
// A tokenizer.json is accepted only when it tokenizes as GPT-2 does, since
// that is what fbt's encoder computes: a BPE model without byte fallback,
// no normalizer, and a pre-tokenizer that is ByteLevel with its GPT-2 regex
// (alone or as the only step of a Sequence). Others are refused by name:
// Llama 3's Split pattern, Llama 2's Metaspace / byte fallback, Digits and
// the rest.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_TEXT_GPT2VOCABULARY_H
#define FBT_RUNTIME_TEXT_GPT2VOCABULARY_H

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace fbt::gpt2 {

struct Vocabulary {
  /// Each token as the files spell it (byte-level tokens in GPT-2's byte
  /// symbols, Gpt2Bytes.h), with its id, in file order.
  std::vector<std::pair<std::string, int64_t>> tokens;
  /// The merges in rank order, each the two symbols it joins.
  std::vector<std::pair<std::string, std::string>> merges;
  /// The ids of tokenizer.json's added_tokens (special tokens such as
  /// <|endoftext|>); a folder's files list none apart.
  std::vector<int64_t> added;
};

/// Reads a folder (encoder.json + vocab.bpe or vocab.json + merges.txt) or a
/// tokenizer.json. RuntimeError naming the file and what is wrong with it.
Vocabulary readVocabulary(const std::string &path);

/// The spelling of each id, 0 .. the largest id; "" for an id no token has.
std::vector<std::string> tokensById(const Vocabulary &v);

/// The byte-level vocabulary with nothing else: the 256 byte symbols at
/// their byte's id and no merges (what `fbt export --hf` writes for a run
/// whose tokenizer is "bytes").
Vocabulary byteVocabulary();
bool isByteVocabulary(const Vocabulary &v);

/// A Hugging Face tokenizer.json holding `v`: byte-level BPE with GPT-2's
/// pre-tokenizer and decoder, the added tokens as special tokens.
std::string tokenizerJson(const Vocabulary &v);

} // namespace fbt::gpt2

#endif // FBT_RUNTIME_TEXT_GPT2VOCABULARY_H
