//===- LoadOnce.h - a library loaded once, its failure remembered -*- C++ -*-===//
//
// The libraries loaded at run time (the CUDA driver, cuBLASLt, NCCL) are
// loaded on first use; a failure is kept and thrown again on every later
// call, so each caller gets the same one-line reason.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_BASE_LOADONCE_H
#define FBT_RUNTIME_BASE_LOADONCE_H

#include "runtime/base/Error.h"

#include <mutex>
#include <string>

namespace fbt {

/// `load()`'s result, from its first call on. One instance per `load`.
template <typename T> const T &loadOnce(T (*load)()) {
  static std::once_flag once;
  static T value;
  static std::string error;
  std::call_once(once, [&] {
    try {
      value = load();
    } catch (const RuntimeError &e) {
      error = e.what();
    }
  });
  if (!error.empty())
    throw RuntimeError(error);
  return value;
}

} // namespace fbt

#endif // FBT_RUNTIME_BASE_LOADONCE_H
