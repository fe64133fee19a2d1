//===- tokens_fuzzer.cpp - libFuzzer target for training data files ------===//
//
// Any file, read as llm.c's .bin (uint16 and uint32, with or without the
// header) or as byte-level text, must give a token stream whose every id is
// inside the vocabulary, or one fbt::RuntimeError with a message; anything
// else is a bug. Streams are read back in full, and sliced.
//
//===----------------------------------------------------------------------===//

#include "FuzzFile.h"

#include "runtime/base/Error.h"
#include "runtime/text/TokenFiles.h"
#include "runtime/text/TokenStream.h"

using namespace fbt;

namespace {
void check(const TokenStream &s, int64_t vocab) {
  std::vector<int32_t> ids = s.toVector();
  if ((int64_t)ids.size() != s.size())
    std::abort();
  for (int32_t id : ids)
    if (id < 0 || id >= vocab)
      std::abort();
  if (s.size() > 2)
    (void)s.slice(1, s.size() - 2).toVector();
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // The first byte picks the vocabulary, so ids near every bound are tried.
  const int64_t vocabs[] = {256, 50257, 50304, 65536, 65537, 100277};
  int64_t vocab = size ? vocabs[data[0] % std::size(vocabs)] : 256;
  struct Kind {
    const char *suffix;
    TokenFileFormat format;
  };
  for (Kind k : {Kind{".bin", TokenFileFormat::U16}, Kind{".u32.bin", TokenFileFormat::U32},
                 Kind{".bin", TokenFileFormat::Auto}, Kind{".txt", TokenFileFormat::Text}}) {
    std::string path = fuzz::asFile(data, size, k.suffix);
    try {
      check(loadTokenFile(path, vocab, k.format, k.format == TokenFileFormat::Text ? "\n\n" : ""),
            vocab);
    } catch (const RuntimeError &e) {
      if (!*e.what())
        std::abort();
    }
  }
  return 0;
}
