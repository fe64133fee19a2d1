//===- ErrorOf.h - the message a call fails with ----------------*- C++ -*-===//
//
// For tests of error messages: what RuntimeError `f` throws, or "" when it
// returns.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_TEST_RUNTIME_ERROROF_H
#define FBT_TEST_RUNTIME_ERROROF_H

#include "runtime/base/Error.h"

#include <functional>
#include <string>

namespace fbt::test {

inline std::string errorOf(const std::function<void()> &f) {
  try {
    f();
  } catch (const RuntimeError &e) {
    return e.what();
  }
  return "";
}

} // namespace fbt::test

#endif // FBT_TEST_RUNTIME_ERROROF_H
