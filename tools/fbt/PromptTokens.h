//===- PromptTokens.h - the prompts file of fbt score and fbt states -*- C++ -*-===//
//
// The checks' input: input_ids I32 [N, T] (rows of token ids) and
// prompt_lengths I32 [N] (how much of each row is its prompt, 1..T).
//
//===----------------------------------------------------------------------===//

#ifndef FBT_TOOLS_FBT_PROMPTTOKENS_H
#define FBT_TOOLS_FBT_PROMPTTOKENS_H

#include <cstdint>
#include <string>
#include <vector>

namespace fbt {

struct PromptTokens {
  std::vector<std::vector<int32_t>> rows; ///< N rows of T ids
  std::vector<int64_t> lengths;           ///< each row's prompt length, 1..T
  int64_t width = 0;                      ///< T
};

/// Reads and checks `path`: its shapes, its prompt lengths and every id
/// (the prompt's and after it) against a vocabulary of `vocab`, before any
/// step reads one; a RuntimeError names what is wrong and where.
PromptTokens readPromptTokens(const std::string &path, int64_t vocab);

} // namespace fbt

#endif // FBT_TOOLS_FBT_PROMPTTOKENS_H
