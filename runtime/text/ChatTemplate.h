//===- ChatTemplate.h - conversations as the text a model reads --*- C++ -*-===//
//
// One definition of the chat template, for `fbt serve` (the prompt it
// answers) and for training on instruction data (the conversations it
// learns from): plain text a byte-level or BPE model can learn,
//   "<|system|>\n{content}\n" ... "<|user|>\n{content}\n" ...
//   "<|assistant|>\n{content}\n" ...
// A prompt ends with "<|assistant|>\n", the assistant's turn to speak; an
// answer ends where the next turn starts, at "\n<|" (kChatTurnStart), which
// is where serving stops.
//
// Training counts the tokens an assistant says: each assistant turn's
// content, its closing "\n" and the "<|" that opens the turn after it (so
// the model learns where its answer stops), or, after the conversation's
// last turn, the next document's separator. Headers, system and user turns
// are context only.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_TEXT_CHATTEMPLATE_H
#define FBT_RUNTIME_TEXT_CHATTEMPLATE_H

#include "runtime/base/Error.h"
#include "runtime/base/Json.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fbt {

struct ChatMessage {
  std::string role; ///< system, user or assistant
  std::string content;
};

/// A message list that does not fit the template; `field` names the part
/// ("messages[1].role") for an API error.
class ChatFormatError : public RuntimeError {
public:
  ChatFormatError(std::string field, const std::string &message)
      : RuntimeError(message), field(std::move(field)) {}
  std::string field;
};

/// Where an answer stops: the start of the next turn.
constexpr const char kChatTurnStart[] = "\n<|";

/// `messages`: a non-empty array of {role, content[, name]} objects, role
/// system, user or assistant and content a string; throws ChatFormatError.
std::vector<ChatMessage> parseChatMessages(const Json &messages);

/// The template's text for `messages`, ending with the assistant's turn to
/// speak: what a model answering them continues.
std::string chatPrompt(const std::vector<ChatMessage> &messages);

/// A conversation rendered for training: its text and, per byte, whether it
/// is part of what the assistant says (1) or context (0).
struct RenderedChat {
  std::string text;
  std::vector<uint8_t> trained;
  /// Whether the last turn is the assistant's: then the token after the
  /// conversation (the next document's separator) is trained on too.
  bool endsWithAnswer = false;
};
RenderedChat renderConversation(const std::vector<ChatMessage> &messages);

} // namespace fbt

#endif // FBT_RUNTIME_TEXT_CHATTEMPLATE_H
