//===- ProtocolTest.cpp - the OpenAI API's requests and replies -----------===//

#include "runtime/serve/Protocol.h"

#include <gtest/gtest.h>

using namespace fbt;

namespace {
Regime soft() { return Regime::parse("soft"); }

/// The ApiError a body gets, or "" if it parses.
std::string errorOf(const std::string &body, bool chat = false) {
  try {
    parseGenerationRequest(body, chat, soft());
  } catch (const ApiError &e) {
    return std::to_string(e.status) + " " + e.param + ": " + e.message;
  }
  return "";
}
} // namespace

TEST(ProtocolTest, CompletionFieldsAndDefaults) {
  GenerationRequest r = parseGenerationRequest(
      R"({"model": "tiny", "prompt": ["Hi"], "max_tokens": 5, "temperature": 0,
          "top_p": 0.5, "stop": ["\n", "."], "seed": 7, "n": 2, "stream": true,
          "regime": "fused:3", "user": "u", "logprobs": null})",
      false, soft());
  EXPECT_EQ(r.prompt, "Hi");
  EXPECT_EQ(r.maxTokens, 5);
  EXPECT_EQ(r.sampling.temperature, 0);
  EXPECT_EQ(r.sampling.topP, 0.5);
  EXPECT_EQ(r.stop, (std::vector<std::string>{"\n", "."}));
  EXPECT_EQ(r.sampling.seed, 7u);
  EXPECT_EQ(r.n, 2);
  EXPECT_TRUE(r.stream);
  EXPECT_EQ(r.regime.name(), Regime::parse("fused:3").name());

  GenerationRequest d = parseGenerationRequest(R"({"prompt": "x"})", false, soft());
  EXPECT_EQ(d.maxTokens, 16);
  EXPECT_EQ(d.sampling.temperature, 1.0);
  EXPECT_EQ(d.regime.name(), "soft");
}

TEST(ProtocolTest, UnimplementedFieldsAreRefusedUnlessTheyAskForNothing) {
  // What SDKs send by default is accepted.
  EXPECT_EQ(errorOf(R"({"prompt": "a", "logprobs": false, "echo": false, "presence_penalty": 0,
      "frequency_penalty": 0, "best_of": 1, "logit_bias": {}, "top_logprobs": null,
      "response_format": {"type": "text"}, "suffix": "", "user": "u"})"),
            "");
  // Anything that would change the answer is a 400 naming the field.
  EXPECT_EQ(errorOf(R"({"prompt": "a", "logprobs": 5})"),
            "400 logprobs: 'logprobs' is not supported by this server (only null or false is "
            "accepted), got 5");
  EXPECT_EQ(errorOf(R"({"prompt": "a", "echo": true})"),
            "400 echo: 'echo' is not supported by this server (only null or false is accepted), "
            "got true");
  EXPECT_EQ(errorOf(R"({"prompt": "a", "presence_penalty": 0.5})"),
            "400 presence_penalty: 'presence_penalty' is not supported by this server (only null "
            "or 0 is accepted), got 0.5");
  EXPECT_EQ(errorOf(R"({"prompt": "a", "logit_bias": {"50": 100}})"),
            "400 logit_bias: 'logit_bias' is not supported by this server (only null or {} is "
            "accepted), got {\"50\":100}");
  EXPECT_EQ(errorOf(R"({"prompt": "a", "best_of": 3})"),
            "400 best_of: 'best_of' is not supported by this server (only null or 1 is accepted), "
            "got 3");
  EXPECT_EQ(errorOf(R"({"prompt": "a", "suffix": "end"})"),
            "400 suffix: 'suffix' is not supported by this server (only null or \"\" is accepted), "
            "got \"end\"");
  EXPECT_EQ(errorOf(R"({"messages": [{"role": "user", "content": "x"}],
      "response_format": {"type": "json_object"}})", true),
            "400 response_format: 'response_format' is not supported by this server (only null or "
            "{\"type\": \"text\"} is accepted), got {\"type\":\"json_object\"}");
  EXPECT_EQ(errorOf(R"({"prompt": "a", "user": 3})"),
            "400 user: 'user' must be a string, not a number");
}

TEST(ProtocolTest, BadRequestsNameTheField) {
  EXPECT_EQ(errorOf("{\"prompt\": 3}"), "400 prompt: 'prompt' must be a string, not a number");
  EXPECT_EQ(errorOf("{}"), "400 prompt: 'prompt' is required");
  EXPECT_EQ(errorOf("[1]"), "400 : the request body must be a JSON object");
  EXPECT_NE(errorOf("{\"prompt\": \"a\",").find("400 : the request body is not JSON"),
            std::string::npos);
  EXPECT_EQ(errorOf(R"({"prompt": "a", "max_tokens": 0})"),
            "400 max_tokens: 'max_tokens' must be from 1 to 1048576, got 0");
  EXPECT_EQ(errorOf(R"({"prompt": "a", "temperature": 3})"),
            "400 temperature: 'temperature' must be from 0 to 2, got 3");
  EXPECT_EQ(errorOf(R"({"prompt": "a", "stop": ["", "b"]})"),
            "400 stop: a 'stop' string must not be empty");
  EXPECT_EQ(errorOf(R"({"prompt": "a", "n": 9})"), "400 n: 'n' must be from 1 to 8, got 9");
  EXPECT_EQ(errorOf(R"({"prompt": "a", "stream": "yes"})"),
            "400 stream: 'stream' must be true or false");
  EXPECT_EQ(errorOf(R"({"prompt": "a", "temprature": 0})"),
            "400 temprature: unknown field 'temprature'");
  EXPECT_NE(errorOf(R"({"prompt": "a", "regime": "warp"})").find("400 regime: 'regime'"),
            std::string::npos);
  // The request's own text stays on the message's one line (found by
  // request_fuzzer: a field named "max_tok\ns").
  EXPECT_EQ(errorOf(R"({"prompt": "a", "max_tok\ns\u0001": 1})"),
            "400 max_tok\ns\x01: unknown field 'max_tok\\ns\\x01'");
  // Duplicate keys are refused by the JSON reader.
  EXPECT_NE(errorOf(R"({"prompt": "a", "prompt": "b"})").find("not JSON"), std::string::npos);
}

TEST(ProtocolTest, ChatTemplateAndStop) {
  GenerationRequest r = parseGenerationRequest(
      R"({"messages": [{"role": "system", "content": "Be brief."},
                       {"role": "user", "content": "Hi"}]})",
      true, soft());
  EXPECT_EQ(r.prompt, "<|system|>\nBe brief.\n<|user|>\nHi\n<|assistant|>\n");
  EXPECT_EQ(stopAt("Hello!\n<|user|>\nmore", r), 6u);
  EXPECT_EQ(errorOf(R"({"messages": [{"role": "robot", "content": "x"}]})", true),
            "400 messages[0].role: 'messages[0].role' must be system, user or "
            "assistant, got 'robot'");
  EXPECT_EQ(errorOf(R"({"messages": []})", true),
            "400 messages: 'messages' must be a non-empty array of {role, content}");
  GenerationRequest c = parseGenerationRequest(R"({"prompt": "a", "stop": "."})", false, soft());
  EXPECT_EQ(stopAt("one. two.", c), 3u);
  EXPECT_EQ(stopAt("none", c), std::string::npos);
}

TEST(ProtocolTest, Utf8TextHoldsBackIncompleteCharacters) {
  EXPECT_EQ(utf8Text("caf\xC3\xA9", false), "caf\xC3\xA9");
  EXPECT_EQ(utf8Text("caf\xC3", false), "caf");              // wait for the rest
  EXPECT_EQ(utf8Text("caf\xC3", true), "caf\xEF\xBF\xBD");   // the end: U+FFFD
  EXPECT_EQ(utf8Text("a\xFF" "b", false), "a\xEF\xBF\xBD" "b"); // never valid
  EXPECT_EQ(utf8Text("\xE0\x80\x80", true), "\xEF\xBF\xBD");    // overlong
  EXPECT_EQ(utf8Text("\xF0\x9F\x99\x82", false), "\xF0\x9F\x99\x82");
}

TEST(ProtocolTest, RepliesAreOpenAiShaped) {
  GenerationRequest r = parseGenerationRequest(R"({"prompt": "a"})", false, soft());
  r.model = "tiny";
  std::string reply = replyJson(r, "cmpl-1", 5, {{"bc", "length"}}, 2, 2);
  EXPECT_EQ(reply,
            R"({"id":"cmpl-1","object":"text_completion","created":5,"model":"tiny",)"
            R"("choices":[{"index":0,"text":"bc","logprobs":null,"finish_reason":"length"}],)"
            R"("usage":{"prompt_tokens":2,"completion_tokens":2,"total_tokens":4}})");
  r.chat = true;
  EXPECT_EQ(chunkJson(r, "c", 5, 0, "", "", true),
            R"({"id":"c","object":"chat.completion.chunk","created":5,"model":"tiny",)"
            R"("choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]})");
  ApiError e{400, "bad", "n"};
  EXPECT_EQ(e.body(),
            R"({"error":{"message":"bad","type":"invalid_request_error","param":"n","code":null}})");
}
