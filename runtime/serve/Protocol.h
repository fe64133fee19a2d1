//===- Protocol.h - the OpenAI-compatible API's requests and replies -*- C++ -*-===//
//
// What `fbt serve` speaks, without the HTTP: parsing and checking a request
// body of POST /v1/completions or /v1/chat/completions into a
// GenerationRequest (a bad one is an ApiError: the HTTP status and an
// OpenAI-style message naming the field) and the JSON
// of replies and of server-sent-event chunks.
//
// Fields: model, prompt (completions: a string, or an array of one),
// messages (chat: [{role: system|user|assistant, content: string}]),
// max_tokens (default 16; max_completion_tokens for chat too; at most the
// server's --max-tokens and the context's room), temperature
// (0..2, default 1), top_p (0..1], stop (a string or up to 4; under
// response_format the grammar ends the reply, not a stop), seed, n
// (1 to the server's --max-n, 8 by default), stream, stream_options ({include_usage}: a last chunk with the
// usage and no choices), logprobs (completions: 0..5 alternatives; chat:
// true, with top_logprobs 0..20), logit_bias ({"token id": -100..100}),
// presence_penalty and frequency_penalty (-2..2; decode/LogitControls.h),
// best_of (completions: n to --max-n candidates, the n with the highest mean
// log-probability returned; not streamed), echo (completions: the prompt
// before the text, with its log-probabilities where asked, scored by plain
// prefill: standard and soft regimes; max_tokens may then be 0), and fbt's
// own: regime
// ("standard" | "soft" | "fused:N"; default the server's), response_format
// (text, json_object, json_schema: ResponseFormat.h) and user (an
// end-user id, accepted). Fields OpenAI defines that this server does not
// implement (suffix; echo and best_of on chat) are refused
// with a 400 naming them, unless their value asks for nothing (null,
// false, 1, ""): an answer must never only look like
// what was asked. Any other field is an error too, so a typo is not
// ignored.
//
// Chat requests are rendered with the chat template (text/ChatTemplate.h);
// an answer stops where the template's next turn would start.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_SERVE_PROTOCOL_H
#define FBT_RUNTIME_SERVE_PROTOCOL_H

#include "runtime/base/Error.h"
#include "runtime/base/Json.h"
#include "runtime/decode/LogitControls.h"
#include "runtime/decode/Regime.h"
#include "runtime/decode/Sampler.h"
#include "runtime/serve/ApiError.h"
#include "runtime/serve/ResponseFormat.h"

#include <string>
#include <vector>

namespace fbt {

/// The most passes a request's fused:N regime may ask for.
constexpr int64_t kMaxFusedPasses = 8;

struct GenerationRequest {
  bool chat = false;
  std::string model;
  std::string prompt; ///< the text the model continues (chat: templated)
  int64_t maxTokens = 16;
  SamplingOptions sampling;
  std::vector<std::string> stop;
  int64_t n = 1;
  bool stream = false;
  bool streamUsage = false; ///< stream_options.include_usage
  Regime regime;
  LogitControls controls;   ///< logit_bias, presence_penalty, frequency_penalty
  bool logprobs = false;    ///< the chosen tokens' log-probabilities
  int64_t topLogprobs = 0;  ///< and as many likeliest tokens' at each
  int64_t bestOf = 0;       ///< completions: candidates, the n best returned (0: n)
  bool echo = false;        ///< completions: the prompt before the generated text
  ResponseFormat format;    ///< response_format: JSON output, constrained

  /// The sequences generated for the request.
  int64_t candidates() const { return bestOf > n ? bestOf : n; }
};

/// Parses and checks a request body; throws ApiError. `defaultRegime` is the
/// server's (--mode).
GenerationRequest parseGenerationRequest(const std::string &body, bool chat,
                                         const Regime &defaultRegime);

/// Where generated `text` should end: the first stop string (the request's,
/// and for chat the next turn's "\n<|"), or npos.
size_t stopAt(const std::string &text, const GenerationRequest &r);
/// How many bytes at the end of `text` could be the start of a stop string
/// still being generated: held back from the client until the next token
/// says whether they are text, so that no part of a stop string is sent.
size_t stopHoldback(const std::string &text, const GenerationRequest &r);

/// `bytes` as UTF-8 text for a reply: an invalid sequence becomes U+FFFD;
/// an incomplete one at the end is held back (it may complete with the
/// next token) unless `final`, when it becomes U+FFFD too.
std::string utf8Text(const std::string &bytes, bool final);

/// A generated token's log-probability as a reply writes it: its bytes (a
/// byte-level token may be part of a character), where they start in the
/// choice's text, and the likeliest tokens' bytes and log-probabilities.
struct TokenLogprob {
  std::string bytes;
  double logprob = 0;
  int64_t offset = 0;
  std::vector<std::pair<std::string, double>> top;
};

struct Choice {
  std::string text;
  std::string finishReason;           ///< "stop" or "length"
  std::vector<TokenLogprob> logprobs; ///< every token generated (with logprobs)
};

/// The whole reply (stream: false).
std::string replyJson(const GenerationRequest &r, const std::string &id,
                      int64_t created, const std::vector<Choice> &choices,
                      int64_t promptTokens, int64_t completionTokens);
/// One server-sent event's JSON: choice `index` adds `delta` (and, with a
/// finish reason, ends), with the log-probabilities of the tokens generated
/// since the last chunk (where asked). For chat the first chunk of a choice
/// also names the assistant's role.
std::string chunkJson(const GenerationRequest &r, const std::string &id,
                      int64_t created, int64_t index, const std::string &delta,
                      const std::string &finishReason, bool first,
                      const std::vector<TokenLogprob> &logprobs);
/// The last chunk of a stream that asked for its usage: no choices.
std::string usageChunkJson(const GenerationRequest &r, const std::string &id,
                           int64_t created, int64_t promptTokens,
                           int64_t completionTokens);

} // namespace fbt

#endif // FBT_RUNTIME_SERVE_PROTOCOL_H
