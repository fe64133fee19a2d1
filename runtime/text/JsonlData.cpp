//===- JsonlData.cpp - JSON Lines training data ---------------------------===//

#include "runtime/text/JsonlData.h"

#include "runtime/base/Error.h"
#include "runtime/base/Json.h"
#include "runtime/text/ChatTemplate.h"
#include "runtime/text/Tokenizer.h"

#include <algorithm>
#include <cstdint>
#include <vector>

namespace fbt {

namespace {

/// Builds the stream a document at a time.
class MaskedIds {
public:
  explicit MaskedIds(const Tokenizer &tokenizer) : tokenizer_(tokenizer) {}

  /// Opens a document: its separator, trained on after an answer (the model
  /// learns to stop there) and after plain text, as pretraining does.
  void startDocument() {
    starts_.push_back(static_cast<int64_t>(ids_.size()));
    push({tokenizer_.documentSeparator()}, previousTrained_);
  }
  /// `text` whose bytes are trained on where `trained` says, piece by piece.
  void add(const std::string &text, const std::vector<uint8_t> &trained) {
    for (size_t at = 0; at < text.size();) {
      size_t end = at;
      while (end < text.size() && trained[end] == trained[at])
        ++end;
      push(tokenizer_.encode(std::string_view(text).substr(at, end - at)), trained[at]);
      at = end;
    }
  }
  void add(const std::string &text, bool trained) {
    if (!text.empty())
      push(tokenizer_.encode(text), trained);
  }
  /// Whether the separator of the next document is trained on.
  void endDocument(bool trainSeparator) { previousTrained_ = trainSeparator; }

  bool masked = false;
  std::vector<int32_t> ids_;
  std::vector<uint8_t> trained_;
  std::vector<int64_t> starts_;

private:
  void push(const std::vector<int32_t> &ids, bool trained) {
    ids_.insert(ids_.end(), ids.begin(), ids.end());
    trained_.insert(trained_.end(), ids.size(), trained ? 1 : 0);
  }
  const Tokenizer &tokenizer_;
  bool previousTrained_ = false; // the first separator is no target
};

const std::string &stringField(const Json &record, const char *key,
                               const std::string &where) {
  const Json *v = jsonFind(record, key);
  if (!v || !v->is_string())
    throw RuntimeError(where + ": '" + key + "' must be a string");
  return asString(*v);
}

/// One record into `out`.
void addRecord(const Json &record, const std::string &where, MaskedIds &out) {
  if (!record.is_object())
    throw RuntimeError(where + ": a record must be an object with \"text\", "
                               "\"messages\" or \"prompt\" and \"completion\"");
  if (jsonFind(record, "messages")) {
    std::vector<ChatMessage> messages;
    try {
      messages = parseChatMessages(jsonAt(record, "messages"));
    } catch (const ChatFormatError &e) {
      throw RuntimeError(where + ": " + e.what());
    }
    RenderedChat chat = renderConversation(messages);
    out.masked = true;
    out.startDocument();
    out.add(chat.text, chat.trained);
    out.endDocument(chat.endsWithAnswer);
  } else if (jsonFind(record, "prompt") || jsonFind(record, "completion")) {
    const std::string &prompt = stringField(record, "prompt", where);
    const std::string &completion = stringField(record, "completion", where);
    out.masked = true;
    out.startDocument();
    out.add(prompt, false);
    out.add(completion, true);
    out.endDocument(true);
  } else if (jsonFind(record, "text")) {
    const std::string &text = stringField(record, "text", where);
    if (text.empty())
      return;
    out.startDocument();
    out.add(text, true);
    out.endDocument(true);
  } else {
    throw RuntimeError(where + ": no field \"text\", \"messages\" or \"prompt\"");
  }
}
} // namespace

void forEachJsonLine(const std::string &path, std::string_view contents,
                     const std::function<bool(const Json &, const std::string &)> &record) {
  size_t line = 0;
  for (size_t at = 0; at < contents.size();) {
    size_t end = contents.find('\n', at);
    if (end == std::string_view::npos)
      end = contents.size();
    std::string_view l = contents.substr(at, end - at);
    at = end + 1;
    ++line;
    if (l.find_first_not_of(" \t\r") == std::string_view::npos)
      continue;
    std::string where = path + ":" + std::to_string(line);
    if (!record(parseJson(l, where), where))
      return;
  }
}

TokenStream jsonlStream(const std::string &path, std::string_view contents,
                        const Tokenizer &tokenizer) {
  MaskedIds out(tokenizer);
  // No tokenizer gives more tokens than bytes, and each record adds one
  // separator (a chat template's text aside): reserved at once, as untouched
  // pages cost nothing, the stream is not copied as it grows.
  size_t bound = contents.size() + (size_t)std::count(contents.begin(), contents.end(), '\n') + 1;
  out.ids_.reserve(bound);
  out.trained_.reserve(bound);
  forEachJsonLine(path, contents, [&](const Json &record, const std::string &where) {
    try {
      addRecord(record, where, out);
    } catch (const RuntimeError &e) {
      std::string what = e.what();
      throw RuntimeError(what.rfind(where, 0) == 0 ? what : where + ": " + what);
    }
    return true;
  });
  if (out.ids_.empty())
    throw RuntimeError(path + ": no text");
  if (!out.masked)
    return TokenStream(std::move(out.ids_), path);
  return TokenStream(std::move(out.ids_), std::move(out.trained_), std::move(out.starts_),
                     path);
}

std::vector<std::string> jsonlTexts(const std::string &path, std::string_view contents,
                                    const std::string &field) {
  std::vector<std::string> texts;
  forEachJsonLine(path, contents, [&](const Json &record, const std::string &where) {
    const Json *text = jsonFind(record, field);
    if (!text || !text->is_string())
      throw RuntimeError(where + ": no string field '" + field + "'");
    texts.push_back(asString(*text));
    return true;
  });
  return texts;
}

} // namespace fbt
