//===- GrowingText.h - a sequence's text as its tokens arrive ----*- C++ -*-===//
//
// What a generation prints as it goes (fbt generate, the Python module's
// streaming generate): the text is decoded whole after each token, since a
// token may complete a character or, in SentencePiece, change how the
// previous one reads; the new part is what it adds to the text so far.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_TEXT_GROWINGTEXT_H
#define FBT_RUNTIME_TEXT_GROWINGTEXT_H

#include "runtime/text/Tokenizer.h"

#include <string>
#include <vector>

namespace fbt {

struct GrowingText {
  std::vector<int32_t> ids;
  std::string text;

  /// Adds `id`; returns the text it adds ("" while a character is partial).
  std::string add(const Tokenizer &tok, int32_t id) {
    ids.push_back(id);
    std::string now = tok.decode(ids);
    std::string piece = now.size() > text.size() && now.compare(0, text.size(), text) == 0
                            ? now.substr(text.size())
                            : "";
    if (!piece.empty())
      text = now;
    return piece;
  }
  /// Whether the text so far ends with `stop` (never for an empty one).
  bool endsWith(const std::string &stop) const {
    return !stop.empty() && text.size() >= stop.size() &&
           text.compare(text.size() - stop.size(), stop.size(), stop) == 0;
  }
};

} // namespace fbt

#endif // FBT_RUNTIME_TEXT_GROWINGTEXT_H
