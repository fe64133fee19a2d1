//===- TokenIds.h - token ids checked against the vocabulary ------*- C++ -*-===//
//
// One check and one message for a token id outside the vocabulary, wherever
// ids enter: StepBinding::set (every step input that carries ids) and the
// commands that read ids from a file before any step (fbt score), which can
// name the id's place in the file.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_BASE_TOKENIDS_H
#define FBT_RUNTIME_BASE_TOKENIDS_H

#include "runtime/base/Error.h"
#include "runtime/base/IgnoredTarget.h"

#include <cstdint>
#include <string>

namespace fbt {

/// Throws for the first id of the [rows, width] ids (row-major, `n` of them)
/// outside [0, vocab) (kIgnoredTarget allowed for targets), naming `where`,
/// the id, its row and position and the vocabulary:
///   "<where>: token id 256 at row 0, position 4 is outside the vocabulary
///    of 256 ids (0..255)".
inline void requireTokenIds(const int32_t *ids, int64_t n, int64_t width, int64_t vocab,
                            bool targets, const std::string &where) {
  for (int64_t i = 0; i < n; ++i) {
    int32_t id = ids[i];
    if ((id >= 0 && id < vocab) || (targets && id == kIgnoredTarget))
      continue;
    throw RuntimeError(where + ": token id " + std::to_string(id) + " at row " +
                       std::to_string(i / width) + ", position " + std::to_string(i % width) +
                       " is outside the vocabulary of " + std::to_string(vocab) + " ids (0.." +
                       std::to_string(vocab - 1) + ")");
  }
}

} // namespace fbt

#endif // FBT_RUNTIME_BASE_TOKENIDS_H
