// consumer BUNDLE CKPT PROMPT: prints PROMPT and what soft decoding generates
// after it, greedy, 16 tokens at most: what
// `fbt generate BUNDLE --ckpt CKPT --prompt PROMPT --max-new-tokens 16` prints.
#include "runtime/base/Error.h"
#include "runtime/base/Json.h"
#include "runtime/decode/Decoder.h"
#include "runtime/session/Session.h"

#include <cstdio>

int main(int argc, char **argv) {
  if (argc != 4) {
    std::fputs("usage: consumer BUNDLE CKPT PROMPT\n", stderr);
    return 2;
  }
  try {
    fbt::Session session(argv[1]);
    session.loadCheckpoint(argv[2]);
    const fbt::Tokenizer &tok = session.tokenizer();
    fbt::Decoder decoder(session);
    int32_t separator = tok.documentSeparator();
    std::vector<int32_t> prompt = {separator}, ids;
    for (int32_t id : tok.encode(argv[3]))
      prompt.push_back(id);
    decoder.generate({prompt}, fbt::Regime::parse("soft"), fbt::SamplingOptions{}, 16,
                     [&](int64_t, int32_t id) {
                       ids.push_back(id);
                       return id != separator;
                     });
    if (!ids.empty() && ids.back() == separator)
      ids.pop_back();
    std::printf("%s%s\n", argv[3], tok.decode(ids).c_str());
    std::fprintf(stderr, "consumer: %s, vocab %lld\n",
                 session.model().name.c_str(), (long long)session.model().vocabSize);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "consumer: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
