//===- ErrorTest.cpp - The runtime's error keeps to one line --------------===//

#include "runtime/base/Error.h"

#include <gtest/gtest.h>

using namespace fbt;

namespace {

// Messages quote what they were given; the CLI prints what() as one line and
// the fuzzers hold every reader to that, so the error type itself escapes.
TEST(ErrorTest, ControlCharactersAreEscapedSoAMessageIsOneLine) {
  EXPECT_STREQ(RuntimeError("a\nb\r\tc").what(), "a\\nb\\r\\tc");
  EXPECT_STREQ(RuntimeError(std::string("x\0y\x1b\x7fz", 6)).what(), "x\\x00y\\x1b\\x7fz");
}

TEST(ErrorTest, PrintableTextAndUtf8AreKeptAsWritten) {
  EXPECT_STREQ(RuntimeError("m.safetensors: tensor 'w' \\ caf\xc3\xa9").what(),
               "m.safetensors: tensor 'w' \\ caf\xc3\xa9");
}

} // namespace
