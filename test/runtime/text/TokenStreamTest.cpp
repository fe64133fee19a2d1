//===- TokenStreamTest.cpp - tokenizer, .bin files, batches, corpus --===//

#include "runtime/base/Error.h"
#include "runtime/base/Random.h"
#include "runtime/text/DefaultCorpus.h"
#include "runtime/text/TokenFiles.h"
#include "runtime/text/TokenStream.h"

#include "test/runtime/ErrorOf.h"
#include "test/runtime/TempDir.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>

using namespace fbt;

namespace {

void spit(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

template <typename T> std::string raw(const std::vector<T> &v) {
  return std::string(reinterpret_cast<const char *>(v.data()),
                     v.size() * sizeof(T));
}

using test::errorOf;

TEST(TokenStreamTest, ByteTokenizerPrefixesEachDocumentWithBos) {
  EXPECT_EQ(tokenizeText("hi"), (std::vector<int32_t>{0, 'h', 'i'}));
  // UTF-8 is split into its bytes.
  EXPECT_EQ(tokenizeText("\xc3\xa9"), (std::vector<int32_t>{0, 0xc3, 0xa9}));
  EXPECT_EQ(tokenizeText("a\n\nbc\n\n\n\nd", "\n\n"),
            (std::vector<int32_t>{0, 'a', 0, 'b', 'c', 0, 'd'}));
  // Without a separator the whole text is one document.
  EXPECT_EQ(tokenizeText("a\n\nb"),
            (std::vector<int32_t>{0, 'a', '\n', '\n', 'b'}));
  EXPECT_TRUE(tokenizeText("").empty());
  EXPECT_EQ(detokenize(tokenizeText("x\n\ny", "\n\n")), "xy");
  EXPECT_EQ(detokenize(tokenizeText("caf\xc3\xa9")), "caf\xc3\xa9");
  EXPECT_THROW(detokenize({300}), RuntimeError);
}

TEST(TokenStreamTest, NulInTextIsAnError) {
  EXPECT_EQ(errorOf([] { tokenizeText(std::string("ab\0c", 4), {}, "t.txt"); }),
            "t.txt: NUL byte at byte offset 2 (id 0 is the document "
            "separator, so text must not contain NUL)");
}

TEST(TokenStreamTest, JsonLinesFilesHoldADocumentALine) {
  test::TempDir dir;
  spit(dir.file("a.jsonl"), "{\"text\": \"one\\n\\ntwo\"}\n\n{\"text\": \"x\", \"id\": 3}\n");
  TokenStream s = loadTokenFile(dir.file("a.jsonl"), 256);
  // A blank line inside a document does not split it; a blank line of the
  // file is no document.
  EXPECT_EQ(s.toVector(),
            (std::vector<int32_t>{0, 'o', 'n', 'e', '\n', '\n', 't', 'w', 'o', 0, 'x'}));
  spit(dir.file("bad.jsonl"), "{\"text\": \"a\"}\n{\"body\": \"b\"}\n");
  EXPECT_EQ(errorOf([&] { loadTokenFile(dir.file("bad.jsonl"), 256); }),
            dir.file("bad.jsonl") + ":2: no field \"text\", \"messages\" or \"prompt\"");
  spit(dir.file("nul.jsonl"), "{\"text\": \"a\\u0000b\"}\n");
  EXPECT_NE(errorOf([&] { loadTokenFile(dir.file("nul.jsonl"), 256); })
                .find("nul.jsonl:1: a NUL byte at offset 1"),
            std::string::npos);
}

TEST(TokenStreamTest, TextFiles) {
  test::TempDir dir;
  spit(dir.file("a.txt"), "one\n\ntwo");
  TokenStream s =
      loadTokenFile(dir.file("a.txt"), 256, TokenFileFormat::Auto, "\n\n");
  EXPECT_EQ(s.toVector(),
            (std::vector<int32_t>{0, 'o', 'n', 'e', 0, 't', 'w', 'o'}));
  EXPECT_EQ(s.source(), dir.file("a.txt"));
  EXPECT_EQ(errorOf([&] { loadTokenFile(dir.file("a.txt"), 100); }),
            dir.file("a.txt") + ": byte-level text needs a vocab size of at "
                                "least 256, the model has 100");
  spit(dir.file("empty.txt"), "");
  EXPECT_THROW(loadTextFile(dir.file("empty.txt")), RuntimeError);
  EXPECT_THROW(loadTextFile(dir.file("missing.txt")), RuntimeError);
}

TEST(TokenStreamTest, BinFilesUint16AndUint32) {
  test::TempDir dir;
  std::vector<uint16_t> u16{5, 0, 65535, 7};
  spit(dir.file("train.bin"), raw(u16));
  TokenStream s = loadTokenFile(dir.file("train.bin"), 65536);
  EXPECT_EQ(s.toVector(), (std::vector<int32_t>{5, 0, 65535, 7}));
  EXPECT_EQ(s[2], 65535);

  std::vector<uint32_t> u32{1, 100000, 2};
  spit(dir.file("train.u32.bin"), raw(u32));
  EXPECT_EQ(loadTokenFile(dir.file("train.u32.bin"), 100001).toVector(),
            (std::vector<int32_t>{1, 100000, 2}));
  // An explicit format overrides the name.
  spit(dir.file("data.tok"), raw(u32));
  EXPECT_EQ(
      loadTokenFile(dir.file("data.tok"), 100001, TokenFileFormat::U32).size(),
      3);
  EXPECT_EQ(
      loadTokenFile(dir.file("data.tok"), 100001, TokenFileFormat::U16).size(),
      6);
}

TEST(TokenStreamTest, BinFileValidationNamesFileAndOffset) {
  test::TempDir dir;
  std::string path = dir.file("val.bin");
  spit(path, raw(std::vector<uint16_t>{1, 2, 50257, 3}));
  EXPECT_EQ(errorOf([&] { loadTokenFile(path, 50257); }),
            path + ": token 50257 at offset 2 (byte 4) is not below the vocab "
                   "size 50257");
  EXPECT_EQ(loadTokenFile(path, 50304).size(), 4);

  spit(path, std::string("\x01\x00\x02", 3));
  EXPECT_EQ(errorOf([&] { loadTokenFile(path, 50304); }),
            path + ": 3 bytes is not a whole number of uint16 tokens (2 bytes "
                   "each; wrong dtype or truncated?)");
  spit(path, "");
  EXPECT_EQ(errorOf([&] { loadTokenFile(path, 50304); }),
            path + ": no tokens (empty file)");
  EXPECT_NE(errorOf([&] {
              loadTokenFile(dir.file("none.bin"), 10);
            }).find("cannot open"),
            std::string::npos);
}

TEST(TokenStreamTest, BinFilesWithLlmcHeaders) {
  test::TempDir dir;
  // uint16 ids under the GPT-2 header; the header's width wins over a name.
  std::vector<int32_t> ids{50256, 15496, 11, 995};
  writeBinFile(dir.file("gpt2.u32.bin"), ids, 50257);
  EXPECT_EQ(loadTokenFile(dir.file("gpt2.u32.bin"), 50257).toVector(), ids);
  // uint32 ids above 65536 tokens.
  std::vector<int32_t> wide{128000, 7, 128255};
  writeBinFile(dir.file("llama.bin"), wide, 128256);
  EXPECT_EQ(loadTokenFile(dir.file("llama.bin"), 128256).toVector(), wide);
  // A header whose count disagrees with the file is named as such.
  std::string path = dir.file("cut.bin");
  std::string whole;
  {
    std::ifstream in(dir.file("gpt2.u32.bin"), std::ios::binary);
    whole.assign(std::istreambuf_iterator<char>(in), {});
  }
  spit(path, whole.substr(0, whole.size() - 2));
  EXPECT_EQ(errorOf([&] { loadTokenFile(path, 50257); }),
            path + ": the header says 4 uint16 tokens, but 6 bytes follow it "
                   "(truncated?)");
}

TEST(TokenStreamTest, StreamsSliceWithoutCopying) {
  TokenStream s(std::vector<int32_t>{10, 11, 12, 13, 14});
  TokenStream mid = s.slice(1, 3);
  EXPECT_EQ(mid.toVector(), (std::vector<int32_t>{11, 12, 13}));
  EXPECT_EQ(mid.slice(2, 1).toVector(), (std::vector<int32_t>{13}));
  EXPECT_THROW(s.slice(3, 3), RuntimeError);
  EXPECT_THROW(s.slice(-1, 1), RuntimeError);
  int32_t out[2];
  EXPECT_THROW(mid.copy(2, 2, out), RuntimeError);
  EXPECT_EQ(mid.slice(3, 0).size(), 0);
}

TEST(TokenStreamTest, BatchesAreWindowsWithShiftedTargets) {
  std::vector<int32_t> ids(500);
  for (int i = 0; i < 500; ++i)
    ids[size_t(i)] = i;
  TokenStream s(ids);
  Batch b = sampleBatch(s, 4, 16, 1234, 7);
  ASSERT_EQ(b.inputs.size(), 64u);
  ASSERT_EQ(b.targets.size(), 64u);
  for (int r = 0; r < 4; ++r) {
    int32_t start = b.inputs[size_t(r * 16)];
    // The offset is exactly the documented draw.
    EXPECT_EQ(uint64_t(start),
              rng::uniformInt(1234, rng::streams::kBatch, 7 * 4 + r, 500 - 16));
    for (int t = 0; t < 16; ++t) {
      EXPECT_EQ(b.inputs[size_t(r * 16 + t)], start + t);
      EXPECT_EQ(b.targets[size_t(r * 16 + t)], start + t + 1);
    }
  }
}

TEST(TokenStreamTest, BatchOfAStepIsAPureFunctionOfSeedAndStep) {
  TokenStream s = loadDefaultCorpus();
  Batch a = sampleBatch(s, 8, 64, 42, 100);
  // Other steps in between change nothing (no hidden generator state).
  for (int step = 0; step < 5; ++step)
    sampleBatch(s, 8, 64, 42, step);
  Batch again = sampleBatch(s, 8, 64, 42, 100);
  EXPECT_EQ(a.inputs, again.inputs);
  EXPECT_EQ(a.targets, again.targets);
  EXPECT_NE(sampleBatch(s, 8, 64, 42, 101).inputs, a.inputs);
  EXPECT_NE(sampleBatch(s, 8, 64, 43, 100).inputs, a.inputs);
}

TEST(TokenStreamTest, BatchOffsetsCoverTheStream) {
  // Every offset 0 .. n-T-1 is reachable, including the last one.
  std::vector<int32_t> ids(20);
  for (int i = 0; i < 20; ++i)
    ids[size_t(i)] = i;
  TokenStream s(ids);
  std::map<int32_t, int> seen;
  for (int step = 0; step < 2000; ++step)
    ++seen[sampleBatch(s, 1, 4, 9, step).inputs[0]];
  EXPECT_EQ(seen.size(), 16u);
  EXPECT_EQ(seen.begin()->first, 0);
  EXPECT_EQ(seen.rbegin()->first, 15);
  // Shortest stream that works: T + 1 tokens.
  EXPECT_EQ(sampleBatch(s.slice(0, 5), 2, 4, 1, 0).inputs,
            (std::vector<int32_t>{0, 1, 2, 3, 0, 1, 2, 3}));
  EXPECT_THROW(sampleBatch(s.slice(0, 4), 1, 4, 1, 0), RuntimeError);
  EXPECT_THROW(sampleBatch(s, 0, 4, 1, 0), RuntimeError);
}

TEST(TokenStreamTest, ValBatchesAreFixedWindowsSpreadOverTheStream) {
  std::vector<int32_t> ids(100);
  for (int i = 0; i < 100; ++i)
    ids[size_t(i)] = i;
  TokenStream s(ids);
  ValBatches val(s, 2, 10); // (100-1)/10 = 9 windows -> 4 batches of 2
  ASSERT_EQ(val.size(), 4);
  EXPECT_EQ(val.windows(), 8);
  EXPECT_EQ(val.windowsInStream(), 9);
  Batch b = val[1];
  // Windows floor(i * 9 / 8): 0, 1, 2, 3, 4, 5, 6, 7 -> 2 and 3 in batch 1.
  EXPECT_EQ(b.inputs[0], 20);
  EXPECT_EQ(b.inputs[10], 30);
  EXPECT_EQ(b.targets[19], 40);
  EXPECT_EQ(val[1].inputs, b.inputs);
  EXPECT_THROW(val[4], RuntimeError);
  // Four windows of nine: 0, 2, 4, 6 (floor(i * 9 / 4)), reaching the end.
  ValBatches few(s, 2, 10, 4);
  EXPECT_EQ(few.size(), 2);
  EXPECT_EQ(few[0].inputs[10], 20);
  EXPECT_EQ(few[1].inputs[0], 40);
  EXPECT_EQ(few[1].inputs[10], 60);
  // A count that is not whole batches is rounded up, to what the stream holds.
  EXPECT_EQ(ValBatches(s, 2, 10, 5).size(), 3);
  EXPECT_EQ(ValBatches(s, 2, 10, 1).size(), 1);
  EXPECT_EQ(ValBatches(s, 2, 10, 50).size(), 4);
  EXPECT_EQ(ValBatches(s.slice(0, 21), 2, 10).size(), 1); // needs B*T+1
  EXPECT_NE(errorOf([&] {
              ValBatches(s.slice(0, 20), 2, 10);
            }).find("too few for one batch of 2 x 10 (needs 21)"),
            std::string::npos);
}

TEST(TokenStreamTest, DefaultCorpusIsDeterministicTextWithStructure) {
  size_t n = defaultCorpusSize();
  EXPECT_GT(n, 1100u * 1024);
  EXPECT_LT(n, 1200u * 1024);
  EXPECT_EQ(std::strlen(defaultCorpus()), n);  // no NUL inside
  EXPECT_EQ(defaultCorpus(), defaultCorpus()); // built once
  for (size_t i = 0; i < n; ++i) {
    unsigned char c = static_cast<unsigned char>(defaultCorpus()[i]);
    ASSERT_TRUE(c == '\n' || (c >= 0x20 && c < 0x7f)) << "byte " << i;
  }
  std::string text(defaultCorpus(), n);
  EXPECT_NE(text.find("Once upon a time"), std::string::npos);
  EXPECT_NE(text.find("7*8=56"), std::string::npos);

  TokenStream s = loadDefaultCorpus();
  int64_t docs = 0;
  for (int64_t i = 0; i < s.size(); ++i)
    docs += s[i] == kByteBosToken;
  EXPECT_GT(docs, 500);
  EXPECT_EQ(s[0], kByteBosToken);

  // Learnable: the next byte given the current one carries far less than the
  // 8 bits a uniform guess pays (a byte-level model's loss has room to fall
  // from ln 256 = 5.55 nats to below 2.5 from bigrams alone).
  std::vector<double> pair(256 * 256, 0), first(256, 0);
  for (size_t i = 0; i + 1 < n; ++i) {
    auto a = static_cast<unsigned char>(text[i]);
    auto b = static_cast<unsigned char>(text[i + 1]);
    pair[a * 256 + b] += 1;
    first[a] += 1;
  }
  double nats = 0;
  for (int a = 0; a < 256; ++a)
    for (int b = 0; b < 256; ++b)
      if (double c = pair[size_t(a * 256 + b)])
        nats -= c / double(n - 1) * std::log(c / first[size_t(a)]);
  EXPECT_LT(nats, 2.5);
}

} // namespace
