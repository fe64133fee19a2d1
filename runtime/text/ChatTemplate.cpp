//===- ChatTemplate.cpp - conversations as the text a model reads ---------===//

#include "runtime/text/ChatTemplate.h"

namespace fbt {

namespace {
[[noreturn]] void bad(const std::string &field, const std::string &message) {
  throw ChatFormatError(field, message);
}

std::string header(const std::string &role) { return "<|" + role + "|>\n"; }
} // namespace

std::vector<ChatMessage> parseChatMessages(const Json &messages) {
  if (!messages.is_array() || messages.empty())
    bad("messages", "'messages' must be a non-empty array of {role, content}");
  std::vector<ChatMessage> out;
  for (size_t i = 0; i < messages.size(); ++i) {
    const Json &m = jsonAt(messages, i);
    std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object())
      bad(where, "'" + where + "' must be an object with role and content");
    const Json *role = jsonFind(m, "role"), *content = jsonFind(m, "content");
    if (!role || !content)
      bad(where, "'" + where + "' needs a role and a content");
    if (!role->is_string())
      bad(where + ".role", "'" + where + ".role' must be a string, not " + std::string(jsonKindName(*role)));
    if (!content->is_string())
      bad(where + ".content", "'" + where + ".content' must be a string, not " + std::string(jsonKindName(*content)));
    const std::string &r = asString(*role);
    if (r != "system" && r != "user" && r != "assistant")
      bad(where + ".role", "'" + where + ".role' must be system, user or "
                           "assistant, got '" + r + "'");
    for (const auto &[key, value] : asObject(m))
      if (key != "role" && key != "content" && key != "name")
        bad(where + "." + key, "unknown field '" + where + "." + key + "'");
    out.push_back({r, asString(*content)});
  }
  return out;
}

std::string chatPrompt(const std::vector<ChatMessage> &messages) {
  std::string prompt;
  for (const ChatMessage &m : messages)
    prompt += header(m.role) + m.content + "\n";
  return prompt + header("assistant");
}

RenderedChat renderConversation(const std::vector<ChatMessage> &messages) {
  RenderedChat r;
  auto add = [&](const std::string &text, bool trained) {
    r.text += text;
    r.trained.insert(r.trained.end(), text.size(), trained ? 1 : 0);
  };
  bool afterAnswer = false;
  for (const ChatMessage &m : messages) {
    std::string h = header(m.role);
    if (afterAnswer) { // the "<|" that ends the answer before it
      add(h.substr(0, 2), true);
      h = h.substr(2);
    }
    add(h, false);
    bool answer = m.role == "assistant";
    add(m.content + "\n", answer);
    afterAnswer = answer;
  }
  r.endsWithAnswer = afterAnswer;
  return r;
}

} // namespace fbt
