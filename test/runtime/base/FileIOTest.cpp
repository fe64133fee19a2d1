//===- FileIOTest.cpp - What a path names, and whole-file reads -----------===//

#include "runtime/base/Error.h"
#include "runtime/base/FileIO.h"

#include "../TempDir.h"

#include <gtest/gtest.h>

using namespace fbt;

namespace {

// The tokenizer, the GPT-2 vocabulary and the HF reader each ask which of a
// file or a folder they were given; a wrong answer sends a folder to a file
// reader or the other way round.
TEST(FileIOTest, APathNamesAFileAFolderOrNothing) {
  test::TempDir dir;
  std::string file = dir.file("vocab.json");
  writeFileAtomic(file, {"{}"});
  EXPECT_TRUE(isFile(file));
  EXPECT_FALSE(isDir(file));
  EXPECT_TRUE(isDir(dir.path()));
  EXPECT_FALSE(isFile(dir.path()));
  EXPECT_FALSE(isFile(dir.file("missing")));
  EXPECT_FALSE(isDir(dir.file("missing")));
  EXPECT_EQ(readFile(file), "{}");
}

TEST(FileIOTest, ReadingWhatIsNotThereNamesThePath) {
  test::TempDir dir;
  try {
    readFile(dir.file("missing.json"));
    FAIL() << "no error";
  } catch (const RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find("missing.json"), std::string::npos) << e.what();
  }
}

} // namespace
