//===- Gpt2VocabularyTest.cpp - byte-level BPE vocabularies' files ---------===//
//
// What tokenizerJson writes, readVocabulary reads back the same; the byte
// vocabulary is told apart; a tokenizer.json that does not tokenize as
// GPT-2 does is refused, naming what it has instead.
//
//===----------------------------------------------------------------------===//

#include "runtime/text/Gpt2Vocabulary.h"

#include "runtime/base/Error.h"
#include "runtime/base/FileIO.h"
#include "runtime/base/Json.h"
#include "runtime/text/Tokenizer.h"
#include "test/runtime/TempDir.h"

#include <gtest/gtest.h>

#include <string>

using namespace fbt;

namespace {

gpt2::Vocabulary smallBpe() {
  gpt2::Vocabulary v = gpt2::byteVocabulary();
  v.tokens.push_back({"ab", 256});
  v.tokens.push_back({"<|endoftext|>", 257});
  v.merges = {{"a", "b"}};
  v.added = {257};
  return v;
}

std::string write(const test::TempDir &dir, const std::string &text) {
  std::string path = dir.file("tokenizer.json");
  writeFileAtomic(path, {text});
  return path;
}

/// The refusal of smallBpe's tokenizer.json with `key` set to `value`.
std::string refusalWith(const char *key, const Json &value) {
  test::TempDir dir;
  Json root = parseJson(gpt2::tokenizerJson(smallBpe()));
  if (std::string(key) == "byte_fallback")
    root["model"]["byte_fallback"] = value;
  else
    root[key] = value;
  try {
    gpt2::readVocabulary(write(dir, dumpJson(root)));
  } catch (const RuntimeError &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST(Gpt2VocabularyTest, ATokenizerJsonReadsBackAsWritten) {
  test::TempDir dir;
  gpt2::Vocabulary v = smallBpe();
  std::string path = write(dir, gpt2::tokenizerJson(v));
  gpt2::Vocabulary back = gpt2::readVocabulary(path);
  EXPECT_EQ(gpt2::tokensById(back), gpt2::tokensById(v));
  EXPECT_EQ(back.merges, v.merges);
  EXPECT_EQ(back.added, v.added);
  EXPECT_FALSE(gpt2::isByteVocabulary(back));
  // And encodes with its merge and its separator.
  std::unique_ptr<Tokenizer> t = loadTokenizer("gpt2:" + path);
  EXPECT_EQ(t->encode("abc"), (std::vector<int32_t>{256, 'c'}));
  EXPECT_EQ(t->documentSeparator(), 257);
}

TEST(Gpt2VocabularyTest, TheByteVocabularyIsToldApart) {
  test::TempDir dir;
  EXPECT_TRUE(gpt2::isByteVocabulary(gpt2::byteVocabulary()));
  std::string path = write(dir, gpt2::tokenizerJson(gpt2::byteVocabulary()));
  EXPECT_TRUE(gpt2::isByteVocabulary(gpt2::readVocabulary(path)));
  gpt2::Vocabulary swapped = gpt2::byteVocabulary();
  std::swap(swapped.tokens[0].second, swapped.tokens[1].second);
  EXPECT_FALSE(gpt2::isByteVocabulary(swapped));
}

TEST(Gpt2VocabularyTest, TokenizersThatDoNotTokenizeAsGpt2AreRefusedByName) {
  Json split = parseJson(R"({"type": "Sequence", "pretokenizers": [
      {"type": "Split", "pattern": {"Regex": "x"}, "behavior": "Isolated", "invert": false},
      {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]})");
  EXPECT_NE(refusalWith("pre_tokenizer", split).find("pre_tokenizer 'Split'"), std::string::npos);
  Json metaspace = parseJson(R"({"type": "Metaspace", "replacement": "_"})");
  EXPECT_NE(refusalWith("pre_tokenizer", metaspace).find("pre_tokenizer 'Metaspace'"),
            std::string::npos);
  EXPECT_NE(refusalWith("pre_tokenizer", nullptr).find("no pre_tokenizer"), std::string::npos);
  Json noRegex = parseJson(R"({"type": "ByteLevel", "use_regex": false})");
  EXPECT_NE(refusalWith("pre_tokenizer", noRegex).find("without its regex"), std::string::npos);
  Json prefix = parseJson(R"({"type": "ByteLevel", "add_prefix_space": true})");
  EXPECT_NE(refusalWith("pre_tokenizer", prefix).find("add_prefix_space"), std::string::npos);
  Json nfc = parseJson(R"({"type": "NFC"})");
  EXPECT_NE(refusalWith("normalizer", nfc).find("a normalizer (NFC)"), std::string::npos);
  EXPECT_NE(refusalWith("byte_fallback", true).find("byte_fallback"), std::string::npos);
  // GPT-2's own shape, ByteLevel alone in a Sequence, is accepted.
  Json sequence = parseJson(R"({"type": "Sequence", "pretokenizers": [
      {"type": "ByteLevel", "add_prefix_space": false, "use_regex": true}]})");
  EXPECT_EQ(refusalWith("pre_tokenizer", sequence), "");
}
