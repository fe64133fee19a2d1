//===- ParallelEncode.h - many documents encoded on many threads -*- C++ -*-===//
//
// fbt tokenize's encoding, apart from its command line: documents in order,
// each preceded by the tokenizer's separator, encoded on several threads.
// Long documents are cut where the tokenizer allows (Tokenizer::splitPoint,
// a boundary its encoding does not cross), so that threads share them and
// the ids are those of encoding each document whole.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_TEXT_PARALLELENCODE_H
#define FBT_RUNTIME_TEXT_PARALLELENCODE_H

#include "runtime/text/Tokenizer.h"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace fbt {

struct TextDocument {
  std::string_view text;
  std::string where; ///< "file" or "file: document N", for errors
};

struct EncodeOptions {
  int threads = 1;
  /// Documents longer than twice this are cut near every multiple of it.
  size_t chunkBytes = size_t(1) << 20;
  /// Called as pieces finish with the bytes encoded so far, from one thread
  /// at a time (not necessarily the caller's; a thread that finds it busy
  /// skips it).
  std::function<void(int64_t)> progress;
};

/// The ids of every document, each after the separator. A RuntimeError
/// "<where>: <what>" for the first document that fails (no ids then).
std::vector<int32_t> encodeDocuments(const Tokenizer &tokenizer,
                                     const std::vector<TextDocument> &documents,
                                     const EncodeOptions &options = {});

} // namespace fbt

#endif // FBT_RUNTIME_TEXT_PARALLELENCODE_H
