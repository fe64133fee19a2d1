//===- ParallelEncodeTest.cpp - documents encoded on many threads ---------===//

#include "runtime/base/Error.h"
#include "runtime/text/ParallelEncode.h"
#include "runtime/text/Tokenizer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

using namespace fbt;

namespace {
/// Splits only after a newline and counts its calls, so a test sees both
/// that long documents are cut and that the cuts keep the ids.
class LineTokenizer : public Tokenizer {
public:
  std::string name() const override { return "lines"; }
  int64_t vocabSize() const override { return 257; }
  int32_t documentSeparator() const override { return 256; }
  std::vector<int32_t> encode(std::string_view text) const override {
    ++calls;
    if (text.find('!') != std::string_view::npos)
      throw RuntimeError("'!' cannot be encoded");
    // Each byte's id depends on the byte before it within the piece: a cut
    // anywhere but after a newline would change the ids.
    std::vector<int32_t> ids;
    char before = '\n';
    for (char c : text) {
      ids.push_back(before == '\n' ? 255 - (unsigned char)c : (unsigned char)c);
      before = c;
    }
    return ids;
  }
  size_t splitPoint(std::string_view text, size_t from) const override {
    size_t p = text.find('\n', from);
    return p == std::string_view::npos ? p : p + 1;
  }
  std::string decode(const std::vector<int32_t> &) const override { return {}; }
  mutable std::atomic<int> calls{0};
};

std::string lines(int n, char seed) {
  std::string s;
  for (int i = 0; i < n; ++i)
    s += std::string(1, char('a' + (seed + i) % 26)) + "bc de\n";
  return s;
}
} // namespace

TEST(ParallelEncodeTest, EachDocumentFollowsTheSeparator) {
  std::string a = "hi", b = "yo";
  std::vector<int32_t> ids = encodeDocuments(byteTokenizer(), {{a, "a"}, {b, "b"}});
  EXPECT_EQ(ids, (std::vector<int32_t>{0, 'h', 'i', 0, 'y', 'o'}));
}

TEST(ParallelEncodeTest, ManyThreadsAndCutsGiveTheIdsOfOneThreadWhole) {
  LineTokenizer tok;
  std::vector<std::string> texts = {lines(300, 0), "x", lines(50, 3), lines(700, 7)};
  std::vector<TextDocument> docs;
  for (size_t i = 0; i < texts.size(); ++i)
    docs.push_back({texts[i], "doc " + std::to_string(i)});

  std::vector<int32_t> whole;
  for (const std::string &t : texts) {
    whole.push_back(256);
    std::vector<int32_t> ids = tok.encode(t);
    whole.insert(whole.end(), ids.begin(), ids.end());
  }
  tok.calls = 0;
  EncodeOptions one;
  one.chunkBytes = 0; // never cut
  EXPECT_EQ(encodeDocuments(tok, docs, one), whole);
  EXPECT_EQ(tok.calls, 4);

  tok.calls = 0;
  EncodeOptions many;
  many.threads = 4;
  many.chunkBytes = 64;
  std::atomic<int64_t> last{0};
  many.progress = [&](int64_t done) { last = std::max<int64_t>(last, done); };
  EXPECT_EQ(encodeDocuments(tok, docs, many), whole);
  EXPECT_GT(tok.calls, 40) << "long documents were not cut";
  int64_t bytes = 0;
  for (const std::string &t : texts)
    bytes += t.size();
  EXPECT_LE(last, bytes);
  EXPECT_GT(last, 0);
}

TEST(ParallelEncodeTest, AnErrorNamesItsDocument) {
  LineTokenizer tok;
  std::string good = lines(200, 1), bad = lines(100, 2) + "oh!\n" + lines(100, 5);
  EncodeOptions options;
  options.threads = 3;
  options.chunkBytes = 32;
  try {
    encodeDocuments(tok, {{good, "a.txt"}, {bad, "b.jsonl: document 2"}, {good, "c.txt"}},
                    options);
    FAIL() << "no error";
  } catch (const RuntimeError &e) {
    EXPECT_EQ(std::string(e.what()), "b.jsonl: document 2: '!' cannot be encoded");
  }
}
