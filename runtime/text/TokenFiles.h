//===- TokenFiles.h - any data file as a token stream -------------*- C++ -*-===//
//
// What fbt train and fbt eval read their data through: pre-tokenized .bin
// files, text files and JSON Lines files (JsonlData.h), told apart by name,
// each checked against the model's vocabulary.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_TEXT_TOKENFILES_H
#define FBT_RUNTIME_TEXT_TOKENFILES_H

#include "runtime/text/TokenStream.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace fbt {

class Tokenizer;

enum class TokenFileFormat {
  Auto, ///< ".u32.bin" -> U32, ".bin" -> U16, ".jsonl" -> Jsonl, else Text
  Text,
  Jsonl, ///< JSON Lines: each non-blank line's "text" field is a document
  U16,
  U32,
};
/// The format `path` has under Auto (by its name).
TokenFileFormat tokenFileFormat(const std::string &path);

/// Loads any supported data file and checks its ids against vocabSize.
/// Text goes through `tokenizer` (null: byte-level; then vocabSize >= 256),
/// each document after its separator; a .jsonl file's documents are its
/// lines' "text" fields.
TokenStream loadTokenFile(const std::string &path, int64_t vocabSize,
                          TokenFileFormat format = TokenFileFormat::Auto,
                          std::string_view docSeparator = {},
                          const Tokenizer *tokenizer = nullptr);

} // namespace fbt

#endif // FBT_RUNTIME_TEXT_TOKENFILES_H
