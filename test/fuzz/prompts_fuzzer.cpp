//===- prompts_fuzzer.cpp - libFuzzer target for fbt score's inputs -------===//
//
// fbt score's and fbt states' prompts file (tools/fbt/PromptTokens.h): any
// file image must give rows whose every id is inside the vocabulary and
// whose prompt lengths are in [1, T], or one fbt::RuntimeError with a
// message of one line; anything else (a crash, an id outside, a read out
// of bounds under the sanitizers) is a bug.
//
//===----------------------------------------------------------------------===//

#include "FuzzFile.h"

#include "runtime/base/Error.h"
#include "tools/fbt/PromptTokens.h"

#include <string>

using namespace fbt;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  constexpr int64_t kVocab = 256;
  std::string path = fuzz::asFile(data, size, ".safetensors");
  PromptTokens p;
  try {
    p = readPromptTokens(path, kVocab);
  } catch (const RuntimeError &e) {
    std::string what = e.what();
    if (what.empty() || what.find('\n') != std::string::npos)
      std::abort();
    return 0;
  }
  if (p.rows.size() != p.lengths.size())
    std::abort();
  for (size_t r = 0; r < p.rows.size(); ++r) {
    if ((int64_t)p.rows[r].size() != p.width || p.lengths[r] < 1 || p.lengths[r] > p.width)
      std::abort();
    for (int32_t id : p.rows[r])
      if (id < 0 || id >= kVocab)
        std::abort();
  }
  return 0;
}
