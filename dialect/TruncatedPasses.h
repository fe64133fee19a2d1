//===- TruncatedPasses.h - which passes of K are trained --------*- C++ -*-===//
//
// Truncated backpropagation through the passes (fbt.multipass grad_passes):
// with G in (0, K-1), pass 1 and passes K-G+1..K are trained, passes
// 2..K-G run forward only. One definition for the IR expansion and for the
// cost figures of `fbtc --describe` (which links no MLIR).
//
//===----------------------------------------------------------------------===//

#ifndef FBT_DIALECT_TRUNCATEDPASSES_H
#define FBT_DIALECT_TRUNCATEDPASSES_H

#include <cstdint>

namespace fbt {

/// The first pass (1-based) after pass 1 whose loss is trained.
constexpr int64_t firstTrainedPass(int64_t k, int64_t gradPasses) {
  return gradPasses <= 0 || gradPasses >= k - 1 ? 2 : k - gradPasses + 1;
}

} // namespace fbt

#endif // FBT_DIALECT_TRUNCATEDPASSES_H
