//===- DataSplitsTest.cpp - train / validation / test parts ---------------===//

#include "runtime/base/Error.h"
#include "runtime/text/DataSplits.h"
#include "runtime/text/DefaultCorpus.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

using namespace fbt;

namespace {
/// `docs` documents of `length` tokens each: BOS 0, then the document's
/// number + 1 repeated, so each token names its document.
TokenStream documents(int docs, int length) {
  std::vector<int32_t> ids;
  for (int d = 0; d < docs; ++d) {
    ids.push_back(0);
    for (int i = 1; i < length; ++i)
      ids.push_back(d + 1);
  }
  return TokenStream(ids);
}

/// The documents (by their number) whose tokens appear in `part`.
std::set<int32_t> documentsIn(const TokenStream &part) {
  std::set<int32_t> seen;
  for (int64_t i = 0; i < part.size(); ++i)
    if (part[i] != 0)
      seen.insert(part[i]);
  return seen;
}
} // namespace

TEST(DataSplitsTest, PartsAreWholeDocumentsInOrder) {
  TokenStream s = documents(100, 10); // 1000 tokens
  DataSplits p = splitData(s, 0, 0.1, 0.1);
  EXPECT_TRUE(p.byDocument);
  EXPECT_EQ(p.train.size(), 800);
  EXPECT_EQ(p.validation.size(), 100);
  EXPECT_EQ(p.test.size(), 100);
  EXPECT_EQ(p.documentsIn(DataPart::Train), 80);
  EXPECT_EQ(p.documentsIn(DataPart::Validation), 10);
  EXPECT_EQ(p.documentsIn(DataPart::Test), 10);
  for (DataPart part : {DataPart::Validation, DataPart::Test})
    EXPECT_EQ(p.part(part)[0], 0) << partName(part) << " starts with BOS";
  EXPECT_EQ(p.test[1], 91);
  EXPECT_EQ(*documentsIn(p.validation).begin(), 81);
}

TEST(DataSplitsTest, NoDocumentIsInTwoParts) {
  // Documents of uneven lengths: the cuts move to the next document start.
  std::vector<int32_t> ids;
  for (int d = 0; d < 60; ++d) {
    ids.push_back(0);
    for (int i = 0; i < 3 + (d * 37) % 41; ++i)
      ids.push_back(d + 1);
  }
  TokenStream s(ids);
  DataSplits p = splitData(s, 0, 0.15, 0.2);
  ASSERT_TRUE(p.byDocument);
  std::set<int32_t> train = documentsIn(p.train), val = documentsIn(p.validation),
                    test = documentsIn(p.test);
  for (int32_t d : val)
    EXPECT_FALSE(train.count(d) || test.count(d)) << "document " << d;
  for (int32_t d : test)
    EXPECT_FALSE(train.count(d)) << "document " << d;
  EXPECT_EQ(train.size() + val.size() + test.size(), 60u);
  EXPECT_EQ(p.train.size() + p.validation.size() + p.test.size(), s.size());
  // Each part holds at most its fraction: the cut is at or after the exact token.
  EXPECT_LE(p.test.size(), int64_t(0.2 * double(s.size())));
  EXPECT_GT(p.test.size(), int64_t(0.2 * double(s.size())) - 45);
}

TEST(DataSplitsTest, OneDocumentIsCutByTokensAndSaysSo) {
  TokenStream s = documents(1, 1000);
  DataSplits p = splitData(s, 0, 0.1, 0.2);
  EXPECT_FALSE(p.byDocument);
  EXPECT_EQ(p.train.size(), 700);
  EXPECT_EQ(p.validation.size(), 100);
  EXPECT_EQ(p.test.size(), 200);
}

TEST(DataSplitsTest, ZeroFractionsAndBadOnes) {
  TokenStream s = documents(10, 10);
  DataSplits p = splitData(s, 0, 0.0, 0.0);
  EXPECT_EQ(p.train.size(), 100);
  EXPECT_TRUE(p.validation.empty());
  EXPECT_TRUE(p.test.empty());
  EXPECT_TRUE(p.byDocument);
  EXPECT_EQ(splitData(s, 0, 0.0, 0.3).test.size(), 30);
  EXPECT_THROW(splitData(s, 0, 1.0, 0.0), RuntimeError);
  EXPECT_THROW(splitData(s, 0, 0.1, -0.1), RuntimeError);
  EXPECT_THROW(splitData(s, 0, 0.5, 0.5), RuntimeError);
}

TEST(DataSplitsTest, PartNames) {
  for (DataPart p : {DataPart::Train, DataPart::Validation, DataPart::Test})
    EXPECT_EQ(parsePart(partName(p)), p);
  try {
    parsePart("val");
    FAIL() << "no error";
  } catch (const RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find("expected train, validation or test"),
              std::string::npos);
  }
}

TEST(DataSplitsTest, TheEmbeddedCorpusHasThreeDisjointParts) {
  DataSplits p = defaultCorpusSplits();
  EXPECT_TRUE(p.byDocument);
  // The training part is its first 230 KiB, as it always was.
  EXPECT_GT(p.train.size(), 225 * 1024); // tokens: a BOS for each "\n\n"
  EXPECT_LT(p.train.size(), 232 * 1024);
  EXPECT_GT(p.validation.size(), 400 * 1024);
  EXPECT_GT(p.test.size(), 400 * 1024);
  for (DataPart part : {DataPart::Train, DataPart::Validation, DataPart::Test}) {
    EXPECT_EQ(p.part(part)[0], kByteBosToken) << partName(part);
    EXPECT_GT(p.documentsIn(part), 500) << partName(part);
  }
  // Together they are the corpus, token for token.
  std::vector<int32_t> all = p.train.toVector(), v = p.validation.toVector(),
                       t = p.test.toVector();
  all.insert(all.end(), v.begin(), v.end());
  all.insert(all.end(), t.begin(), t.end());
  EXPECT_EQ(all, loadDefaultCorpus().toVector());
}
