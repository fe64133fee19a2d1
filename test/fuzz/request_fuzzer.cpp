//===- request_fuzzer.cpp - libFuzzer target for fbt serve's requests -----===//
//
// Any request body, for either endpoint, must give a request within the
// limits parseGenerationRequest states or one ApiError (status 400, one
// line, the JSON of an OpenAI error); the reply and chunk builders must
// take whatever text it carries, a response format's schema must compile
// or give one line, and utf8Text must return valid UTF-8.
// Checks that fail abort, so the fuzzer finds them as crashes.
//
//===----------------------------------------------------------------------===//

#include "runtime/base/Error.h"
#include "runtime/base/Json.h"
#include "runtime/serve/Protocol.h"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

using namespace fbt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string body(reinterpret_cast<const char *>(data), size);
  for (bool chat : {false, true}) {
    try {
      GenerationRequest r = parseGenerationRequest(body, chat, Regime::parse("soft"));
      if (r.maxTokens < (r.echo ? 0 : 1) || r.n < 1 || r.stop.size() > 4 ||
          r.sampling.temperature < 0 || r.sampling.temperature > 2 ||
          !(r.sampling.topP > 0 && r.sampling.topP <= 1) ||
          (r.regime.kind == Regime::Kind::Fused && r.regime.passes > kMaxFusedPasses) ||
          r.topLogprobs < 0 || r.topLogprobs > 20 || (r.bestOf != 0 && r.bestOf < r.n) ||
          std::abs(r.controls.presencePenalty) > 2 || std::abs(r.controls.frequencyPenalty) > 2)
        std::abort();
      // Replies carry the generated text (the prompt here), valid or not,
      // and its bytes as a token's log-probability.
      std::string text = utf8Text(r.prompt, true);
      std::vector<TokenLogprob> lps = {{r.prompt, -1.5, 0, {{r.prompt, -1.5}}}};
      parseJson(replyJson(r, "id", 0, {{text, "stop", lps}}, 1, 1));
      parseJson(chunkJson(r, "id", 0, 0, text, "", true, lps));
      (void)stopAt(text, r);
      // A response format's schema compiles, or says in one line why not;
      // its grammar reads any text without crashing.
      if (r.format.constrained()) {
        try {
          Grammar g = r.format.grammar();
          (void)GrammarState::start(g).advance(g, r.prompt);
        } catch (const RuntimeError &e) {
          if (std::string(e.what()).empty() || std::string(e.what()).find('\n') != std::string::npos)
            std::abort();
        }
      }
    } catch (const ApiError &e) {
      if (e.status != 400 || e.message.empty() ||
          e.message.find('\n') != std::string::npos)
        std::abort();
      parseJson(e.body()); // the error reply is JSON
    }
  }
  // Whatever bytes a model emits, the text sent is UTF-8 (the JSON reader
  // refuses anything else). dumpJson would replace bad bytes with U+FFFD,
  // so the text must also read back unchanged.
  for (bool final : {true, false}) {
    std::string text = utf8Text(body, final);
    if (asString(parseJson(dumpJson(Json(text)))) != text)
      std::abort();
  }
  return 0;
}
