//===- Protocol.cpp - the OpenAI-compatible API's requests and replies -----===//

#include "runtime/serve/Protocol.h"

#include "runtime/base/Error.h"
#include "runtime/text/ChatTemplate.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>

namespace fbt {

namespace {
[[noreturn]] void bad(const std::string &param, const std::string &message) {
  throw ApiError{400, message, param};
}

const char *kindOf(const Json &v) { return jsonKindName(v); }

std::string shortest(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

double number(const Json &v, const std::string &name, double lo, double hi) {
  if (!v.is_number())
    bad(name, "'" + name + "' must be a number, not " + kindOf(v));
  double x = asDouble(v);
  if (!(x >= lo && x <= hi))
    bad(name, "'" + name + "' must be from " + shortest(lo) + " to " +
                  shortest(hi) + ", got " + dumpJson(v));
  return x;
}

/// The upper bound of n, best_of and max_tokens here: none. Their limits
/// are the server's (--max-n, --max-tokens, the context: Engine::checkLimits),
/// one source for each.
constexpr int64_t kServerBound = INT32_MAX;

int64_t integer(const Json &v, const std::string &name, int64_t lo, int64_t hi) {
  if (!isInteger(v))
    bad(name, "'" + name + "' must be an integer, not " + dumpJson(v));
  int64_t x = asInt(v);
  if (x < lo || x > hi)
    bad(name, "'" + name + "' must be " +
                  (hi == kServerBound ? "at least " + std::to_string(lo)
                                      : "from " + std::to_string(lo) + " to " + std::to_string(hi)) +
                  ", got " + std::to_string(x));
  return x;
}

const std::string &text(const Json &v, const std::string &name) {
  if (!v.is_string())
    bad(name, "'" + name + "' must be a string, not " + kindOf(v));
  return asString(v);
}
} // namespace

namespace {
/// Fields OpenAI defines that this server does not implement: accepted only
/// with the value that asks for nothing, as SDKs send by default.
bool isUnsupported(const std::string &key, bool chat) {
  static const std::set<std::string> fields = {"suffix"};
  return fields.count(key) != 0 || (chat && (key == "best_of" || key == "echo")) ||
         (!chat && key == "top_logprobs"); // completions' alternatives are logprobs N
}

bool asksNothing(const std::string &key, const Json &v) {
  if (v.is_null())
    return true;
  if (key == "echo")
    return v.is_boolean() && !v.get<bool>();
  if (key == "best_of")
    return isInteger(v) && asInt(v) == 1;
  if (key == "top_logprobs")
    return v.is_number() && v.get<double>() == 0;
  return key == "suffix" && v.is_string() && asString(v).empty();
}

std::string noOpValue(const std::string &key) {
  if (key == "echo")
    return "only null or false";
  if (key == "best_of")
    return "only null or 1";
  if (key == "top_logprobs")
    return "only null or 0 (on completions, logprobs N asks for N alternatives)";
  return "only null or \"\"";
}

/// logit_bias: null or {"token id": -100..100}; ids are checked against
/// the vocabulary where it is known (the engine).
std::map<int32_t, double> logitBias(const Json &v) {
  std::map<int32_t, double> bias;
  if (v.is_null())
    return bias;
  if (!v.is_object())
    bad("logit_bias", "'logit_bias' must be an object of token ids to numbers");
  for (const auto &[key, value] : asObject(v)) {
    bool digits = !key.empty() && key.size() <= 9 &&
                  key.find_first_not_of("0123456789") == std::string::npos;
    if (!digits)
      bad("logit_bias", "'logit_bias' keys must be token ids (decimal integers), got '" +
                            key + "'");
    bias[(int32_t)std::stol(key)] = number(value, "logit_bias." + key, -100, 100);
  }
  return bias;
}

/// logprobs: completions take 0..5 (alternatives per token), chat true or
/// false (its alternatives are top_logprobs).
void readLogprobs(const Json &v, bool chat, GenerationRequest &r) {
  if (v.is_null())
    return;
  if (chat) {
    if (!v.is_boolean())
      bad("logprobs", "'logprobs' must be true or false");
    r.logprobs = asBool(v);
    return;
  }
  if (v.is_boolean() && !asBool(v))
    return;
  r.topLogprobs = integer(v, "logprobs", 0, 5);
  r.logprobs = true;
}

/// The fields that choose and score tokens (sampling, bias, penalties,
/// log-probabilities, best_of, echo); false for any other key.
bool readTokenField(const std::string &key, const Json &v, bool chat, GenerationRequest &r) {
  if (key == "temperature") {
    if (!v.is_null())
      r.sampling.temperature = number(v, key, 0, 2);
  } else if (key == "top_p") {
    if (!v.is_null())
      r.sampling.topP = number(v, key, 1e-9, 1);
  } else if (key == "seed") {
    if (!v.is_null())
      r.sampling.seed = (uint64_t)integer(v, key, INT64_MIN, INT64_MAX);
  } else if (key == "logprobs") {
    readLogprobs(v, chat, r);
  } else if (key == "top_logprobs" && chat) {
    if (!v.is_null())
      r.topLogprobs = integer(v, key, 0, 20);
  } else if (key == "logit_bias") {
    r.controls.bias = logitBias(v);
  } else if (key == "presence_penalty") {
    if (!v.is_null())
      r.controls.presencePenalty = number(v, key, -2, 2);
  } else if (key == "frequency_penalty") {
    if (!v.is_null())
      r.controls.frequencyPenalty = number(v, key, -2, 2);
  } else if (key == "best_of" && !chat) {
    if (!v.is_null())
      r.bestOf = integer(v, key, 1, kServerBound);
  } else if (key == "echo" && !chat) {
    if (!v.is_boolean() && !v.is_null())
      bad(key, "'echo' must be true or false");
    r.echo = v.is_boolean() && asBool(v);
  } else {
    return false;
  }
  return true;
}

/// What the fields say together.
void checkTogether(const GenerationRequest &r) {
  if (r.streamUsage && !r.stream)
    bad("stream_options", "'stream_options' is only allowed with 'stream': true");
  if (r.topLogprobs > 0 && !r.logprobs)
    bad("top_logprobs", "'top_logprobs' needs 'logprobs': true");
  if (r.bestOf != 0 && r.bestOf < r.n)
    bad("best_of", "'best_of' (" + std::to_string(r.bestOf) + ") must be at least 'n' (" +
                       std::to_string(r.n) + ")");
  if (r.bestOf > r.n && r.stream)
    bad("best_of", "'best_of' above 'n' cannot be streamed (the best are known at the end)");
  if (r.maxTokens < 1 && !r.echo)
    bad("max_tokens", "'max_tokens' must be at least 1, got 0 (0 only with 'echo')");
  // Standard and soft prefill the prompt plain, which scores every position;
  // fused:N's passes give the last position's logits only.
  if (r.echo && r.regime.kind == Regime::Kind::Fused)
    bad("echo", "'echo' scores the prompt by its plain prefill: the standard and soft "
                "regimes, not " + r.regime.name());
}

/// prompt: a string, or an array of one.
std::string completionPrompt(const Json &v) {
  if (v.is_array() && v.size() == 1)
    return text(jsonAt(v, 0), "prompt[0]");
  if (v.is_array())
    bad("prompt", "'prompt' as an array must hold one string (send one request per prompt)");
  return text(v, "prompt");
}

/// stream_options: null or {"include_usage": bool}.
void readStreamOptions(const Json &v, GenerationRequest &r) {
  if (v.is_null())
    return;
  if (!v.is_object())
    bad("stream_options", "'stream_options' must be an object");
  for (const auto &[option, value] : asObject(v)) {
    if (option != "include_usage")
      bad("stream_options", "unknown stream option '" + option + "'");
    if (!value.is_boolean())
      bad("stream_options", "'stream_options.include_usage' must be true or false");
    r.streamUsage = asBool(value);
  }
}

/// stop: null, a string or up to 4 strings, none empty.
std::vector<std::string> stopStrings(const Json &v) {
  std::vector<std::string> stop;
  if (v.is_string()) {
    stop = {asString(v)};
  } else if (v.is_array() && v.size() <= 4) {
    for (size_t i = 0; i < v.size(); ++i)
      stop.push_back(text(jsonAt(v, i), "stop[" + std::to_string(i) + "]"));
  } else if (!v.is_null()) {
    bad("stop", "'stop' must be a string or an array of up to 4 strings");
  }
  for (const std::string &s : stop)
    if (s.empty())
      bad("stop", "a 'stop' string must not be empty");
  return stop;
}
} // namespace

// One branch per field, so the function reads as the API's field list; the
// fields with structure of their own are parsed by the helpers above.
GenerationRequest parseGenerationRequest(const std::string &body, bool chat,
                                         const Regime &defaultRegime) {
  Json root;
  try {
    root = parseJson(body, "request body");
  } catch (const RuntimeError &e) {
    bad("", std::string("the request body is not JSON: ") + e.what());
  }
  if (!root.is_object())
    bad("", "the request body must be a JSON object");
  GenerationRequest r;
  r.chat = chat;
  r.regime = defaultRegime;
  r.sampling.temperature = 1.0;
  bool havePrompt = false;
  for (const auto &[key, v] : asObject(root)) {
    if (readTokenField(key, v, chat, r))
      continue;
    if (key == "model") {
      r.model = text(v, key);
    } else if (key == "prompt" && !chat) {
      r.prompt = completionPrompt(v);
      havePrompt = true;
    } else if (key == "messages" && chat) {
      try {
        r.prompt = chatPrompt(parseChatMessages(v));
      } catch (const ChatFormatError &e) {
        bad(e.field, e.what());
      }
      havePrompt = true;
    } else if (key == "max_tokens" || (chat && key == "max_completion_tokens")) {
      if (!v.is_null())
        r.maxTokens = integer(v, key, chat ? 1 : 0, kServerBound);
    } else if (key == "n") {
      if (!v.is_null())
        r.n = integer(v, key, 1, kServerBound);
    } else if (key == "stream") {
      if (!v.is_boolean() && !v.is_null())
        bad(key, "'stream' must be true or false");
      r.stream = v.is_boolean() && asBool(v);
    } else if (key == "stream_options") {
      readStreamOptions(v, r);
    } else if (key == "stop") {
      r.stop = stopStrings(v);
    } else if (key == "regime") {
      try {
        r.regime = Regime::parse(text(v, key));
      } catch (const RuntimeError &e) {
        bad(key, std::string("'regime': ") + e.what());
      }
      // Each fused pass is a prefill of the whole prompt.
      if (r.regime.kind == Regime::Kind::Fused && r.regime.passes > kMaxFusedPasses)
        bad(key, "'regime': at most fused:" + std::to_string(kMaxFusedPasses));
    } else if (key == "response_format") {
      r.format = readResponseFormat(v);
    } else if (key == "user") {
      text(v, key); // an end-user id: metadata, it changes nothing
    } else if (isUnsupported(key, chat)) {
      // Refused unless it asks for nothing: a client that wants its
      // prompt echoed or JSON output must not get an answer that only
      // looks right.
      if (!asksNothing(key, v))
        bad(key, "'" + key + "' is not supported by this server (" + noOpValue(key) +
                     " is accepted), got " + dumpJson(v));
    } else {
      bad(key, "unknown field '" + key + "'");
    }
  }
  checkTogether(r);
  if (!havePrompt)
    bad(chat ? "messages" : "prompt",
        chat ? "'messages' is required" : "'prompt' is required");
  return r;
}

std::string utf8Text(const std::string &bytes, bool final) {
  static const char kReplacement[] = "\xEF\xBF\xBD";
  std::string out;
  size_t i = 0, n = bytes.size();
  while (i < n) {
    unsigned char c = bytes[i];
    int len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3
            : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (len == 0 || (len == 2 && c < 0xC2) || (len == 4 && c > 0xF4)) {
      out += kReplacement, ++i;
      continue;
    }
    size_t have = 1;
    while (have < (size_t)len && i + have < n &&
           ((unsigned char)bytes[i + have] & 0xC0) == 0x80)
      ++have;
    if (have < (size_t)len && i + have == n && !final)
      break; // incomplete at the end: wait for the next token
    if (have < (size_t)len) {
      out += kReplacement, i += have;
      continue;
    }
    uint32_t cp = len == 1 ? c : c & (0x7F >> len);
    for (int k = 1; k < len; ++k)
      cp = (cp << 6) | ((unsigned char)bytes[i + k] & 0x3F);
    bool overlong = (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000);
    if (overlong || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
      out += kReplacement;
    else
      out.append(bytes, i, len);
    i += len;
  }
  return out;
}

size_t stopAt(const std::string &generated, const GenerationRequest &r) {
  size_t at = std::string::npos;
  for (const std::string &s : r.stop)
    at = std::min(at, generated.find(s));
  if (r.chat)
    at = std::min(at, generated.find(kChatTurnStart));
  return at;
}

size_t stopHoldback(const std::string &text, const GenerationRequest &r) {
  size_t held = 0;
  auto hold = [&](const std::string &stop) {
    for (size_t k = std::min(stop.size() - 1, text.size()); k > held; --k)
      if (text.compare(text.size() - k, k, stop, 0, k) == 0) {
        held = k;
        return;
      }
  };
  for (const std::string &s : r.stop)
    if (!s.empty())
      hold(s);
  if (r.chat)
    hold(kChatTurnStart);
  return held;
}

namespace {
/// A token's bytes as text: themselves where they are UTF-8, else
/// "bytes:\\xNN..." (OpenAI's spelling for a part of a character).
std::string tokenText(const std::string &bytes) {
  if (utf8Text(bytes, true) == bytes)
    return bytes;
  std::string out = "bytes:";
  for (unsigned char c : bytes) {
    char esc[8];
    std::snprintf(esc, sizeof esc, "\\x%02x", c);
    out += esc;
  }
  return out;
}

Json byteList(const std::string &bytes) {
  Json out = Json::array();
  for (unsigned char c : bytes)
    out.push_back((int64_t)c);
  return out;
}

/// Completions' shape: parallel lists of tokens, their log-probabilities,
/// the alternatives ({token: logprob}) and where each token starts.
Json completionLogprobs(const std::vector<TokenLogprob> &tokens) {
  Json text = Json::array(), lp = Json::array(), top = Json::array(), at = Json::array();
  for (const TokenLogprob &t : tokens) {
    text.push_back(tokenText(t.bytes));
    lp.push_back(t.logprob);
    Json alt = Json::object();
    for (const auto &[bytes, logprob] : t.top)
      alt[tokenText(bytes)] = logprob;
    top.push_back(std::move(alt));
    at.push_back(t.offset);
  }
  return Json::object({{"tokens", std::move(text)},
                       {"token_logprobs", std::move(lp)},
                       {"top_logprobs", std::move(top)},
                       {"text_offset", std::move(at)}});
}

/// Chat's shape: {"content": [{token, logprob, bytes, top_logprobs}]}.
Json chatLogprobs(const std::vector<TokenLogprob> &tokens) {
  Json content = Json::array();
  for (const TokenLogprob &t : tokens) {
    Json top = Json::array();
    for (const auto &[bytes, logprob] : t.top)
      top.push_back(Json::object(
          {{"token", tokenText(bytes)}, {"logprob", logprob}, {"bytes", byteList(bytes)}}));
    content.push_back(Json::object({{"token", tokenText(t.bytes)},
                                    {"logprob", t.logprob},
                                    {"bytes", byteList(t.bytes)},
                                    {"top_logprobs", std::move(top)}}));
  }
  return Json::object({{"content", std::move(content)}, {"refusal", Json()}});
}

Json logprobsJson(const GenerationRequest &r, const std::vector<TokenLogprob> &tokens) {
  if (!r.logprobs)
    return Json();
  return r.chat ? chatLogprobs(tokens) : completionLogprobs(tokens);
}

Json usageJson(int64_t promptTokens, int64_t completionTokens) {
  return Json::object({{"prompt_tokens", promptTokens},
                       {"completion_tokens", completionTokens},
                       {"total_tokens", promptTokens + completionTokens}});
}
} // namespace

std::string replyJson(const GenerationRequest &r, const std::string &id,
                      int64_t created, const std::vector<Choice> &choices,
                      int64_t promptTokens, int64_t completionTokens) {
  Json out = Json::array();
  for (size_t i = 0; i < choices.size(); ++i) {
    Json c = Json::object({{"index", (int64_t)i}});
    if (r.chat)
      c["message"] = Json::object(
          {{"role", "assistant"}, {"content", choices[i].text}});
    else
      c["text"] = choices[i].text;
    if (!r.chat || r.logprobs)
      c["logprobs"] = logprobsJson(r, choices[i].logprobs);
    c["finish_reason"] = choices[i].finishReason;
    out.push_back(std::move(c));
  }
  return dumpJson(Json::object(
      {{"id", id},
       {"object", r.chat ? "chat.completion" : "text_completion"},
       {"created", created},
       {"model", r.model},
       {"choices", std::move(out)},
       {"usage", usageJson(promptTokens, completionTokens)}}));
}

std::string usageChunkJson(const GenerationRequest &r, const std::string &id,
                           int64_t created, int64_t promptTokens,
                           int64_t completionTokens) {
  return dumpJson(Json::object(
      {{"id", id},
       {"object", r.chat ? "chat.completion.chunk" : "text_completion"},
       {"created", created},
       {"model", r.model},
       {"choices", Json::array()},
       {"usage", usageJson(promptTokens, completionTokens)}}));
}

std::string chunkJson(const GenerationRequest &r, const std::string &id,
                      int64_t created, int64_t index, const std::string &delta,
                      const std::string &finishReason, bool first,
                      const std::vector<TokenLogprob> &logprobs) {
  Json c = Json::object({{"index", index}});
  if (r.chat) {
    Json d = Json::object();
    if (first)
      d["role"] = "assistant";
    if (!delta.empty() || !first)
      d["content"] = delta;
    c["delta"] = std::move(d);
  } else {
    c["text"] = delta;
  }
  if (!r.chat || r.logprobs)
    c["logprobs"] = logprobsJson(r, logprobs);
  c["finish_reason"] = finishReason.empty() ? Json() : Json(finishReason);
  Json chunks = Json::array();
  chunks.push_back(std::move(c));
  return dumpJson(Json::object(
      {{"id", id},
       {"object", r.chat ? "chat.completion.chunk" : "text_completion"},
       {"created", created},
       {"model", r.model},
       {"choices", std::move(chunks)}}));
}

} // namespace fbt
