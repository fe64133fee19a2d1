//===- TokenFiles.cpp - any data file as a token stream -------------------===//

#include "runtime/text/TokenFiles.h"

#include "runtime/base/Error.h"
#include "runtime/base/FileIO.h"
#include "runtime/text/JsonlData.h"
#include "runtime/text/Tokenizer.h"

namespace fbt {

namespace {
bool endsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

/// Byte-level text needs every byte to be an id.
void checkByteVocab(const std::string &path, int64_t vocabSize) {
  if (vocabSize < kByteVocabSize)
    throw RuntimeError(path + ": byte-level text needs a vocab size of at least 256, the "
                              "model has " + std::to_string(vocabSize));
}
} // namespace

TokenFileFormat tokenFileFormat(const std::string &path) {
  return endsWith(path, ".u32.bin") ? TokenFileFormat::U32
         : endsWith(path, ".bin")   ? TokenFileFormat::U16
         : endsWith(path, ".jsonl") ? TokenFileFormat::Jsonl
                                    : TokenFileFormat::Text;
}

TokenStream loadTokenFile(const std::string &path, int64_t vocabSize,
                          TokenFileFormat format,
                          std::string_view docSeparator,
                          const Tokenizer *tokenizer) {
  if (format == TokenFileFormat::Auto)
    format = tokenFileFormat(path);
  switch (format) {
  case TokenFileFormat::U16:
    return loadBinFile(path, vocabSize, 2);
  case TokenFileFormat::U32:
    return loadBinFile(path, vocabSize, 4);
  case TokenFileFormat::Jsonl: {
    if (!tokenizer)
      checkByteVocab(path, vocabSize);
    TokenStream stream =
        jsonlStream(path, readFile(path), tokenizer ? *tokenizer : byteTokenizer());
    checkVocab(stream, vocabSize);
    return stream;
  }
  default: {
    if (tokenizer && tokenizer->name() != "bytes") {
      TokenStream stream(tokenizeDocuments(readFile(path), docSeparator, *tokenizer, path),
                         path);
      checkVocab(stream, vocabSize);
      return stream;
    }
    checkByteVocab(path, vocabSize);
    return loadTextFile(path, docSeparator);
  }
  }
}

} // namespace fbt
