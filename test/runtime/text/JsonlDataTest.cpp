// Instruction data: conversations and prompt/completion pairs in JSON Lines,
// rendered with the chat template serving uses, masked so that only what the
// assistant says is trained on, and batched in windows that start at
// conversations.

#include "runtime/base/Error.h"
#include "runtime/base/IgnoredTarget.h"
#include "runtime/text/ChatTemplate.h"
#include "runtime/text/DataSplits.h"
#include "runtime/text/JsonlData.h"
#include "runtime/text/Tokenizer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace fbt;

namespace {

std::string errorOf(const std::string &contents) {
  try {
    jsonlStream("d.jsonl", contents, byteTokenizer());
  } catch (const RuntimeError &e) {
    return e.what();
  }
  return "no error";
}

/// The stream's text with each trained byte in brackets, BOS as '#'.
std::string marked(const TokenStream &s) {
  std::string out;
  for (int64_t i = 0; i < s.size(); ++i) {
    char c = s[i] == 0 ? '#' : char(s[i]);
    out += s.trained(i) ? std::string("[") + c + "]" : std::string(1, c);
  }
  return out;
}

const char kChat[] =
    R"({"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"},)"
    R"( {"role": "user", "content": "ok"}]})";

} // namespace

TEST(JsonlDataTest, ConversationsTrainOnWhatTheAssistantSays) {
  TokenStream s = jsonlStream("d.jsonl", std::string(kChat) + "\n", byteTokenizer());
  ASSERT_TRUE(s.masked());
  // The answer, its newline and the "<|" that ends it; not the headers, not
  // the user's turns.
  EXPECT_EQ(marked(s), "#<|user|>\nhi\n<|assistant|>\n[y][o][\n][<][|]user|>\nok\n");
  // The template is the one serving answers with.
  std::vector<ChatMessage> m = {{"user", "hi"}};
  EXPECT_EQ(chatPrompt(m), "<|user|>\nhi\n<|assistant|>\n");
  EXPECT_EQ(std::string(kChatTurnStart), "\n<|");
}

TEST(JsonlDataTest, PairsAndTextMixWithConversations) {
  TokenStream s = jsonlStream(
      "d.jsonl",
      "{\"prompt\": \"2+2=\", \"completion\": \"4\"}\n\n{\"text\": \"ab\"}\n"
      R"({"messages": [{"role": "system", "content": "s"}, {"role": "assistant", "content": "a"}]})"
      "\n{\"text\": \"c\"}\n",
      byteTokenizer());
  // A completion and the separator after it are trained on; plain text
  // wholly; the separator after a conversation that ends with an answer.
  EXPECT_EQ(marked(s), "#2+2=[4][#][a][b][#]<|system|>\ns\n<|assistant|>\n[a][\n][#][c]");
  EXPECT_EQ(s.startsThrough(s.size() - 1), 4);
  EXPECT_EQ(s.start(1), 6);
}

TEST(JsonlDataTest, PlainTextIsNotMasked) {
  TokenStream s = jsonlStream("d.jsonl", "{\"text\": \"ab\"}\n", byteTokenizer());
  EXPECT_FALSE(s.masked());
  EXPECT_TRUE(s.trained(1));
}

TEST(JsonlDataTest, BadRecordsNameTheLineAndField) {
  EXPECT_EQ(errorOf("{\"text\": \"a\"}\n{\"body\": \"b\"}\n"),
            "d.jsonl:2: no field \"text\", \"messages\" or \"prompt\"");
  EXPECT_EQ(errorOf(R"({"messages": [{"role": "robot", "content": "x"}]})"),
            "d.jsonl:1: 'messages[0].role' must be system, user or assistant, got 'robot'");
  EXPECT_EQ(errorOf(R"({"messages": []})"),
            "d.jsonl:1: 'messages' must be a non-empty array of {role, content}");
  EXPECT_EQ(errorOf(R"({"prompt": "a"})"), "d.jsonl:1: 'completion' must be a string");
  EXPECT_EQ(errorOf("[1]"), "d.jsonl:1: a record must be an object with \"text\", "
                            "\"messages\" or \"prompt\" and \"completion\"");
}

TEST(JsonlDataTest, BatchesStartAtConversationsAndIgnoreContext) {
  std::string file;
  for (int i = 0; i < 40; ++i)
    file += std::string(kChat) + "\n";
  TokenStream s = jsonlStream("d.jsonl", file, byteTokenizer());
  const int64_t T = 28;
  for (int64_t step = 0; step < 20; ++step) {
    Batch b = sampleBatch(s, 2, T, 7, step);
    for (int64_t row = 0; row < 2; ++row) {
      EXPECT_EQ(b.inputs[row * T], 0) << "a window starts at a conversation";
      // "#<|user|>\nhi\n<|assistant|>\n" (27 tokens) is context: the
      // targets before the answer's first byte are ignored.
      for (int64_t t = 0; t < 26; ++t)
        EXPECT_EQ(b.targets[row * T + t], kIgnoredTarget) << t;
      EXPECT_EQ(b.targets[row * T + 26], 'y');
      EXPECT_EQ(b.targets[row * T + 27], 'o');
    }
  }
  // Slices (the train / validation / test parts) keep the mask.
  TokenStream tail = s.slice(s.start(0) + 30, s.size() - 30);
  EXPECT_TRUE(tail.masked());
  EXPECT_EQ(tail.trained(0), s.trained(30));
  EXPECT_EQ(tail.start(0), s.start(1) - 30);
}
