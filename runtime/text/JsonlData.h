//===- JsonlData.h - JSON Lines training data ---------------------*- C++ -*-===//
//
// A .jsonl file holds a document a line, in any of three forms (mixed
// freely):
//   {"text": "..."}                          every token is trained on
//   {"messages": [{"role", "content"}, ...]} a conversation in the chat
//                                            template (text/ChatTemplate.h):
//                                            what the assistant says is
//                                            trained on, the rest is context
//   {"prompt": "...", "completion": "..."}   the completion is trained on,
//                                            and the separator after it
// Each document is preceded by the tokenizer's separator. Text is encoded a
// piece at a time, a piece being a run of bytes all trained on or all not,
// so the mask falls on token boundaries with every tokenizer (with BPE the
// pieces are cut where the template's turns meet). A file with a
// conversation or a pair in it is instruction data: its stream is masked()
// and its windows start at documents (TokenStream.h, sampleBatch).
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_TEXT_JSONLDATA_H
#define FBT_RUNTIME_TEXT_JSONLDATA_H

#include "runtime/base/Json.h"
#include "runtime/text/TokenStream.h"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace fbt {

class Tokenizer;

/// Calls `record(value, where)` for each non-blank line of a JSON Lines
/// file's `contents`, `where` being "path:line", until it returns false. A
/// line that is not JSON is an error naming path:line.
void forEachJsonLine(const std::string &path, std::string_view contents,
                     const std::function<bool(const Json &, const std::string &)> &record);

/// The `field` strings of each non-blank line of a JSON Lines file's
/// `contents`, in order; a line that is not JSON or lacks the field is an
/// error naming path:line.
std::vector<std::string> jsonlTexts(const std::string &path, std::string_view contents,
                                    const std::string &field = "text");

/// The documents of a JSON Lines file's `contents` as one stream; errors
/// name path:line and the field.
TokenStream jsonlStream(const std::string &path, std::string_view contents,
                        const Tokenizer &tokenizer);

} // namespace fbt

#endif // FBT_RUNTIME_TEXT_JSONLDATA_H
