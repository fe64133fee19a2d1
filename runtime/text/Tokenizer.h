//===- Tokenizer.h - text to token ids and back ------------------*- C++ -*-===//
//
// Three kinds, named by one string (`fbt tokenize --tokenizer T`, the spec's
// "tokenizer"):
//   bytes        each byte its own id (vocab 256), id 0 before each document
//   gpt2:PATH    GPT-2's byte-level BPE: PATH is a folder holding
//                encoder.json + vocab.bpe (OpenAI's names) or vocab.json +
//                merges.txt (Hugging Face's), or a Hugging Face tokenizer.json
//                whose model is BPE; <|endoftext|> before each document
//   sp:PATH      a SentencePiece model (.model), through libsentencepiece;
//                its BOS (else EOS) before each document
// A bare path is read by its form: a .model file is SentencePiece, anything
// else GPT-2 BPE.
//
// encode() is the ordinary encoding: special tokens written in the text are
// text. Documents are separated structurally (documentSeparator()), never by
// parsing the text. encode() and decode() may be called from many threads.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_TEXT_TOKENIZER_H
#define FBT_RUNTIME_TEXT_TOKENIZER_H

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace fbt {

class Tokenizer {
public:
  virtual ~Tokenizer() = default;
  /// The name it was loaded by ("bytes", "gpt2:PATH", "sp:PATH").
  virtual std::string name() const = 0;
  virtual int64_t vocabSize() const = 0;
  /// The id placed before each document.
  virtual int32_t documentSeparator() const = 0;
  virtual std::vector<int32_t> encode(std::string_view text) const = 0;
  /// A position >= `from` where `text` may be cut into two texts encoded
  /// apart with the same ids as the whole (so that threads can share one
  /// long document), or npos if the tokenizer knows none.
  virtual size_t splitPoint(std::string_view text, size_t from) const {
    (void)text, (void)from;
    return std::string_view::npos;
  }
  /// The text of `ids`; ids outside the vocabulary are an error. Bytes that
  /// are not valid UTF-8 on their own (half a character) are kept as bytes.
  virtual std::string decode(const std::vector<int32_t> &ids) const = 0;
};

/// The name a run records for `what`: "bytes", or "gpt2:"/"sp:" and an
/// absolute path (a bare path's kind read from its form).
std::string canonicalTokenizerName(const std::string &what);

/// Loads the tokenizer `what` names (see the file comment); throws
/// RuntimeError naming the file and what is wrong with it.
std::unique_ptr<Tokenizer> loadTokenizer(const std::string &what);

/// `text` as a prompt: the document separator first, as every training
/// document starts (BOS for byte-level text, <|endoftext|> for GPT-2 BPE).
std::vector<int32_t> encodeDocument(const Tokenizer &tok, std::string_view text);

/// The byte-level tokenizer ("bytes"): the one there is, shared.
const Tokenizer &byteTokenizer();

} // namespace fbt

#endif // FBT_RUNTIME_TEXT_TOKENIZER_H
