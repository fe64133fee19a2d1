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
  EXPECT_EQ(errorOf(R"({"messages": [{"role": "user", "content": "x"}], "echo": true})", true),
            "400 echo: 'echo' is not supported by this server (only null or false is accepted), "
            "got true");
  EXPECT_EQ(errorOf(R"({"prompt": "a", "suffix": "end"})"),
            "400 suffix: 'suffix' is not supported by this server (only null or \"\" is accepted), "
            "got \"end\"");
  EXPECT_EQ(errorOf(R"({"messages": [{"role": "user", "content": "x"}], "best_of": 2})", true),
            "400 best_of: 'best_of' is not supported by this server (only null or 1 is accepted), "
            "got 2");
  EXPECT_EQ(errorOf(R"({"prompt": "a", "user": 3})"),
            "400 user: 'user' must be a string, not a number");
}

TEST(ProtocolTest, ResponseFormats) {
  auto format = [](const std::string &f) {
    return parseGenerationRequest(R"({"prompt": "a", "response_format": )" + f + "}", false,
                                  soft())
        .format;
  };
  EXPECT_FALSE(format("null").constrained());
  EXPECT_FALSE(format(R"({"type": "text"})").constrained());
  EXPECT_EQ(format(R"({"type": "json_object"})").key(), "json_object");
  ResponseFormat f = format(R"({"type": "json_schema", "json_schema": {"name": "p-1",
      "strict": true, "description": "d", "schema": {"type": "object"}}})");
  EXPECT_EQ(f.kind, ResponseFormat::Kind::JsonSchema);
  EXPECT_EQ(f.name, "p-1");
  EXPECT_EQ(f.key(), R"(json_schema:{"type":"object"})");
  // Without a schema: any object, the grammar json_object's.
  EXPECT_EQ(format(R"({"type": "json_schema", "json_schema": {"name": "p"}})").key(),
            "json_object");
  EXPECT_EQ(errorOf(R"({"prompt": "a", "response_format": {"type": "xml"}})"),
            "400 response_format: 'response_format': unknown type 'xml' (text, json_object or "
            "json_schema)");
  EXPECT_EQ(errorOf(R"({"prompt": "a", "response_format": {"type": "json_schema",
      "json_schema": {"name": "has space", "schema": {}}}})"),
            "400 response_format: 'response_format': 'json_schema.name' must be 1 to 64 letters, "
            "digits, '_' or '-', got \"has space\"");
  EXPECT_EQ(errorOf(R"({"prompt": "a", "response_format": {"type": "json_schema",
      "json_schema": {"name": "p", "schema": {}, "extra": 1}}})"),
            "400 response_format: 'response_format': unknown field 'json_schema.extra'");
  EXPECT_EQ(errorOf(R"({"prompt": "a", "response_format": "json"})"),
            "400 response_format: 'response_format': must be an object with a 'type': text, "
            "json_object or json_schema");
}

TEST(ProtocolTest, LogprobsBiasPenaltiesAndBestOf) {
  GenerationRequest r = parseGenerationRequest(
      R"({"prompt": "a", "logprobs": 3, "logit_bias": {"7": -100, "65": 2.5},
          "presence_penalty": 0.5, "frequency_penalty": -1, "best_of": 4, "n": 2})",
      false, soft());
  EXPECT_TRUE(r.logprobs);
  EXPECT_EQ(r.topLogprobs, 3);
  EXPECT_EQ(r.controls.bias.at(7), -100);
  EXPECT_EQ(r.controls.bias.at(65), 2.5);
  EXPECT_EQ(r.controls.presencePenalty, 0.5);
  EXPECT_EQ(r.controls.frequencyPenalty, -1);
  EXPECT_EQ(r.bestOf, 4);
  EXPECT_EQ(r.candidates(), 4);
  GenerationRequest chat = parseGenerationRequest(
      R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true, "top_logprobs": 20})",
      true, soft());
  EXPECT_TRUE(chat.logprobs);
  EXPECT_EQ(chat.topLogprobs, 20);
  EXPECT_EQ(parseGenerationRequest(R"({"prompt": "a", "logprobs": 0})", false, soft()).logprobs,
            true);

  EXPECT_EQ(errorOf(R"({"prompt": "a", "logprobs": 6})"),
            "400 logprobs: 'logprobs' must be from 0 to 5, got 6");
  EXPECT_EQ(errorOf(R"({"messages": [{"role": "user", "content": "x"}], "logprobs": 2})", true),
            "400 logprobs: 'logprobs' must be true or false");
  EXPECT_EQ(errorOf(R"({"messages": [{"role": "user", "content": "x"}], "top_logprobs": 2})",
                    true),
            "400 top_logprobs: 'top_logprobs' needs 'logprobs': true");
  EXPECT_EQ(errorOf(R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true,
      "top_logprobs": 21})", true),
            "400 top_logprobs: 'top_logprobs' must be from 0 to 20, got 21");
  EXPECT_EQ(errorOf(R"({"prompt": "a", "logit_bias": {"x": 1}})"),
            "400 logit_bias: 'logit_bias' keys must be token ids (decimal integers), got 'x'");
  EXPECT_EQ(errorOf(R"({"prompt": "a", "logit_bias": {"5": 101}})"),
            "400 logit_bias.5: 'logit_bias.5' must be from -100 to 100, got 101");
  EXPECT_EQ(errorOf(R"({"prompt": "a", "logit_bias": [1]})"),
            "400 logit_bias: 'logit_bias' must be an object of token ids to numbers");
  EXPECT_EQ(errorOf(R"({"prompt": "a", "presence_penalty": 2.5})"),
            "400 presence_penalty: 'presence_penalty' must be from -2 to 2, got 2.5");
  EXPECT_EQ(errorOf(R"({"prompt": "a", "frequency_penalty": "high"})"),
            "400 frequency_penalty: 'frequency_penalty' must be a number, not a string");
  EXPECT_EQ(errorOf(R"({"prompt": "a", "best_of": 2, "n": 3})"),
            "400 best_of: 'best_of' (2) must be at least 'n' (3)");
  EXPECT_EQ(errorOf(R"({"prompt": "a", "best_of": 3, "stream": true})"),
            "400 best_of: 'best_of' above 'n' cannot be streamed (the best are known at the end)");
  EXPECT_EQ(errorOf(R"({"prompt": "a", "best_of": 0})"),
            "400 best_of: 'best_of' must be at least 1, got 0");
}

TEST(ProtocolTest, EchoScoresThePromptInThePlainPrefillsRegimes) {
  GenerationRequest r = parseGenerationRequest(
      R"({"prompt": "a", "echo": true, "max_tokens": 0, "logprobs": 1, "regime": "standard"})",
      false, soft());
  EXPECT_TRUE(r.echo);
  EXPECT_EQ(r.maxTokens, 0);
  EXPECT_EQ(errorOf(R"({"prompt": "a", "echo": true, "regime": "fused:2"})"),
            "400 echo: 'echo' scores the prompt by its plain prefill: the standard and soft "
            "regimes, not fused:2");
  EXPECT_EQ(errorOf(R"({"prompt": "a", "echo": 1})"), "400 echo: 'echo' must be true or false");
}

TEST(ProtocolTest, LogprobsAreOpenAiShaped) {
  GenerationRequest r = parseGenerationRequest(R"({"prompt": "a", "logprobs": 1})", false, soft());
  r.model = "tiny";
  TokenLogprob a{"He", -0.5, 0, {{"He", -0.5}}}, b{"\xE2\x82", -1.25, 2, {{"\xE2\x82", -1.25}}};
  Json reply = parseJson(replyJson(r, "cmpl-1", 5, {{"He\xE2\x82", "length", {a, b}}}, 1, 2), "reply");
  const Json &lp = reply.at("choices").at(0).at("logprobs");
  EXPECT_EQ(dumpJson(lp.at("tokens")), R"(["He","bytes:\\xe2\\x82"])");
  EXPECT_EQ(dumpJson(lp.at("token_logprobs")), "[-0.5,-1.25]");
  EXPECT_EQ(dumpJson(lp.at("text_offset")), "[0,2]");
  EXPECT_EQ(dumpJson(lp.at("top_logprobs").at(0)), R"({"He":-0.5})");

  GenerationRequest chat = parseGenerationRequest(
      R"({"messages": [{"role": "user", "content": "x"}], "logprobs": true, "top_logprobs": 1})",
      true, soft());
  Json c = parseJson(replyJson(chat, "c-1", 5, {{"He", "stop", {a}}}, 1, 1), "reply");
  const Json &entry = c.at("choices").at(0).at("logprobs").at("content").at(0);
  EXPECT_EQ(entry.at("token"), "He");
  EXPECT_EQ(dumpJson(entry.at("bytes")), "[72,101]");
  EXPECT_EQ(entry.at("top_logprobs").at(0).at("logprob"), -0.5);
  // A chunk carries its own tokens' log-probabilities.
  Json chunk = parseJson(chunkJson(chat, "c-1", 5, 0, "He", "", false, {a}), "chunk");
  EXPECT_EQ(chunk.at("choices").at(0).at("logprobs").at("content").size(), 1u);
  // Without logprobs asked, chat replies carry no logprobs key, completions a null.
  GenerationRequest plain = parseGenerationRequest(
      R"({"messages": [{"role": "user", "content": "x"}]})", true, soft());
  EXPECT_FALSE(parseJson(replyJson(plain, "c", 5, {{"x", "stop", {}}}, 1, 1), "r")
                   .at("choices").at(0).contains("logprobs"));
}

TEST(ProtocolTest, BadRequestsNameTheField) {
  EXPECT_EQ(errorOf("{\"prompt\": 3}"), "400 prompt: 'prompt' must be a string, not a number");
  EXPECT_EQ(errorOf("{}"), "400 prompt: 'prompt' is required");
  EXPECT_EQ(errorOf("[1]"), "400 : the request body must be a JSON object");
  EXPECT_NE(errorOf("{\"prompt\": \"a\",").find("400 : the request body is not JSON"),
            std::string::npos);
  EXPECT_EQ(errorOf(R"({"prompt": "a", "max_tokens": 0})"),
            "400 max_tokens: 'max_tokens' must be at least 1, got 0 (0 only with 'echo')");
  EXPECT_EQ(errorOf(R"({"prompt": "a", "temperature": 3})"),
            "400 temperature: 'temperature' must be from 0 to 2, got 3");
  EXPECT_EQ(errorOf(R"({"prompt": "a", "stop": ["", "b"]})"),
            "400 stop: a 'stop' string must not be empty");
  EXPECT_EQ(errorOf(R"({"prompt": "a", "n": 0})"), "400 n: 'n' must be at least 1, got 0");
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
  std::string reply = replyJson(r, "cmpl-1", 5, {{"bc", "length", {}}}, 2, 2);
  EXPECT_EQ(reply,
            R"({"id":"cmpl-1","object":"text_completion","created":5,"model":"tiny",)"
            R"("choices":[{"index":0,"text":"bc","logprobs":null,"finish_reason":"length"}],)"
            R"("usage":{"prompt_tokens":2,"completion_tokens":2,"total_tokens":4}})");
  r.chat = true;
  EXPECT_EQ(chunkJson(r, "c", 5, 0, "", "", true, {}),
            R"({"id":"c","object":"chat.completion.chunk","created":5,"model":"tiny",)"
            R"("choices":[{"index":0,"delta":{"role":"assistant"},"finish_reason":null}]})");
  ApiError e{400, "bad", "n"};
  EXPECT_EQ(e.body(),
            R"({"error":{"message":"bad","type":"invalid_request_error","param":"n","code":null}})");
}

// Every API error's message quotes the request (a model's name, a role), so
// the error itself keeps it to one line, not each place that throws one.
TEST(ProtocolTest, AnApiErrorsMessageIsOneLineWhateverItQuotes) {
  ApiError e{404, "model 'a\nb\x01' is not served here", "model"};
  EXPECT_EQ(e.message, "model 'a\\nb\\x01' is not served here");
  EXPECT_EQ(e.status, 404);
  EXPECT_EQ(e.type, "invalid_request_error");
}
