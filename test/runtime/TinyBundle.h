//===- TinyBundle.h - the CTest fixture's compiled bundle -------*- C++ -*-===//
//
// Tests of the rooms that run compiled steps (session, train, decode, serve)
// need a bundle. CTest's fixture compiles the tiny spec once
// (test/runtime/CMakeLists.txt) and passes it as FBT_TEST_BUNDLE; the lit
// tests of test/serve and test/emucuda pass their own. Run by hand without
// one, these tests skip and say so.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_TEST_RUNTIME_TINYBUNDLE_H
#define FBT_TEST_RUNTIME_TINYBUNDLE_H

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

/// Declares `name`, the bundle's path, or skips the test.
#define FBT_TEST_BUNDLE_OR_SKIP(name)                                                    \
  const char *name##Env = std::getenv("FBT_TEST_BUNDLE");                               \
  if (!name##Env)                                                                        \
    GTEST_SKIP() << "needs FBT_TEST_BUNDLE (CTest's fixture.tiny_batch1 compiles one)"; \
  const std::string name = name##Env

#endif // FBT_TEST_RUNTIME_TINYBUNDLE_H
