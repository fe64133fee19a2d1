//===- ApiKeysTest.cpp - who may call the server ---------------------------===//
//
// ApiKeys accepts "Bearer KEY" for any of its keys and nothing else; with
// no key it accepts everything; a key file skips comments and blank lines;
// bad keys are refused naming where they came from.
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/ApiKeys.h"

#include "runtime/base/Error.h"
#include "runtime/base/FileIO.h"
#include "test/runtime/TempDir.h"

#include <gtest/gtest.h>

using namespace fbt;

TEST(ApiKeysTest, BearerKeysAreAcceptedAndNothingElse) {
  ApiKeys keys = ApiKeys::of({"sk-one", "sk-two"}, "");
  EXPECT_TRUE(keys.required());
  EXPECT_TRUE(keys.accepts("Bearer sk-one"));
  EXPECT_TRUE(keys.accepts("Bearer sk-two "));
  EXPECT_FALSE(keys.accepts("Bearer sk-on"));
  EXPECT_FALSE(keys.accepts("Bearer sk-one1"));
  EXPECT_FALSE(keys.accepts("sk-one"));
  EXPECT_FALSE(keys.accepts("Basic sk-one"));
  EXPECT_FALSE(keys.accepts(""));
  EXPECT_FALSE(keys.accepts("Bearer "));
  ApiKeys open;
  EXPECT_FALSE(open.required());
  EXPECT_TRUE(open.accepts(""));
}

TEST(ApiKeysTest, AKeyFileSkipsCommentsAndBlankLines) {
  test::TempDir dir;
  std::string path = dir.file("keys.txt");
  writeFileAtomic(path, {"# ops\nsk-a\n\n   sk-b\t\n"});
  ApiKeys keys = ApiKeys::of({}, path);
  EXPECT_EQ(keys.size(), 2u);
  EXPECT_TRUE(keys.accepts("Bearer sk-b"));
  writeFileAtomic(path, {"# nothing\n\n"});
  EXPECT_THROW(ApiKeys::of({}, path), RuntimeError);
  writeFileAtomic(path, {"sk a\n"});
  try {
    ApiKeys::of({}, path);
    ADD_FAILURE() << "a key with a space was taken";
  } catch (const RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find("keys.txt:1: an API key may not hold whitespace"),
              std::string::npos);
  }
  EXPECT_THROW(ApiKeys::of({""}, ""), RuntimeError);
}

TEST(ApiKeysTest, ConstantTimeEqualsIsEquality) {
  EXPECT_TRUE(constantTimeEquals("abc", "abc"));
  EXPECT_FALSE(constantTimeEquals("abc", "abd"));
  EXPECT_FALSE(constantTimeEquals("abc", "ab"));
  EXPECT_TRUE(constantTimeEquals("", ""));
}
