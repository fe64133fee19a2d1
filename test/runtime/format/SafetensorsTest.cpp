//===- SafetensorsTest.cpp - Checkpoint files: round trips, corruption ----===//

#include "runtime/base/Bf16.h"
#include "runtime/base/Error.h"
#include "runtime/base/FileIO.h"
#include "runtime/base/Json.h"
#include "runtime/format/Safetensors.h"

#include "test/runtime/TempDir.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>

#include <sys/stat.h>
#include <unistd.h>

using namespace fbt;

namespace {

std::vector<Tensor> sampleTensors() {
  std::vector<Tensor> ts;
  ts.push_back(Tensor::fromF32("model.embed_tokens.weight", {2, 3},
                               {1, -2, 3.5f, 0, 1e-3f, -7}));
  Tensor bf("feedback.W_U", DType::BF16, {2});
  bf.data<uint16_t>()[0] = floatToBf16(1.0f);
  bf.data<uint16_t>()[1] = floatToBf16(-0.5f);
  ts.push_back(std::move(bf));
  Tensor h("half", DType::F16, {1, 1});
  h.data<uint16_t>()[0] = f32ToF16(0.25f);
  ts.push_back(std::move(h));
  Tensor i32("step32", DType::I32, {}); // scalar
  i32.data<int32_t>()[0] = -123;
  ts.push_back(std::move(i32));
  Tensor i64("step", DType::I64, {3});
  i64.data<int64_t>()[0] = int64_t(1) << 40;
  i64.data<int64_t>()[2] = -1;
  ts.push_back(std::move(i64));
  Tensor u8("bytes", DType::U8, {5});
  for (int i = 0; i < 5; ++i)
    u8.data<uint8_t>()[i] = uint8_t(250 + i);
  ts.push_back(std::move(u8));
  ts.push_back(Tensor("empty", DType::F32, {0, 4})); // zero elements
  return ts;
}

std::string slurp(const std::string &path) { return readFile(path); }

void spit(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

/// A file image with a hand-written header and `dataBytes` bytes of data.
std::string image(const std::string &header, size_t dataBytes) {
  std::string out(8, '\0');
  uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  return out + header + std::string(dataBytes, '\x11');
}

/// The error parsing `bytes` gives ("" if none).
std::string parseError(const std::string &bytes) {
  try {
    parseSafetensors(bytes, "m.safetensors");
  } catch (const RuntimeError &e) {
    return e.what();
  }
  return "";
}

TEST(SafetensorsTest, DTypes) {
  EXPECT_EQ(dtypeSize(DType::F32), 4u);
  EXPECT_EQ(dtypeSize(DType::BF16), 2u);
  EXPECT_EQ(dtypeSize(DType::F16), 2u);
  EXPECT_EQ(dtypeSize(DType::I32), 4u);
  EXPECT_EQ(dtypeSize(DType::I64), 8u);
  EXPECT_EQ(dtypeSize(DType::U8), 1u);
  for (DType d :
       {DType::F32, DType::BF16, DType::F16, DType::I32, DType::I64, DType::U8})
    EXPECT_EQ(parseDType(dtypeName(d)), d);
  EXPECT_EQ(parseDType("F64"), std::nullopt);
  EXPECT_EQ(shapeElements({}), 1);
  EXPECT_EQ(shapeElements({3, 0, 2}), 0);
  EXPECT_THROW(shapeElements({-1}), RuntimeError);
  EXPECT_THROW(shapeElements({int64_t(1) << 32, int64_t(1) << 32}),
               RuntimeError);
}

TEST(SafetensorsTest, RoundTripsEveryDTypeAndMetadata) {
  test::TempDir dir;
  std::string path = dir.file("ckpt.safetensors");
  std::vector<Tensor> ts = sampleTensors();
  std::map<std::string, std::string> meta{{"format", "pt"}, {"step", "42"}};
  writeSafetensorsAtomic(path, ts, meta);

  SafetensorsFile f = readSafetensors(path);
  EXPECT_EQ(f.source, path);
  EXPECT_EQ(f.metadata, meta);
  ASSERT_EQ(f.tensors.size(), ts.size());
  for (const Tensor &t : ts) {
    const Tensor &back = f.at(t.name);
    EXPECT_EQ(back.dtype, t.dtype);
    EXPECT_EQ(back.shape, t.shape);
    EXPECT_EQ(back.bytes, t.bytes);
  }
  // File order: wider dtypes first, the given order among equals.
  std::vector<std::string> order;
  for (const Tensor &t : f.tensors)
    order.push_back(t.name);
  EXPECT_EQ(order, (std::vector<std::string>{
                       "step", "model.embed_tokens.weight", "step32", "empty",
                       "feedback.W_U", "half", "bytes"}));
  EXPECT_EQ(f.at("step32").data<int32_t>()[0], -123);
  EXPECT_EQ(f.at("feedback.W_U").toF32(), (std::vector<float>{1.0f, -0.5f}));
  EXPECT_EQ(f.at("half").toF32(), (std::vector<float>{0.25f}));
  EXPECT_EQ(f.at("model.embed_tokens.weight").toF32()[2], 3.5f);
  EXPECT_EQ(f.find("nope"), nullptr);
  try {
    f.at("nope");
    FAIL();
  } catch (const RuntimeError &e) {
    EXPECT_EQ(std::string(e.what()),
              path + ": no tensor named 'nope' (have: step, "
                     "model.embed_tokens.weight, step32, empty, feedback.W_U, "
                     "half, bytes)");
  }

  // The data starts 8-byte aligned; the header is plain JSON.
  std::string bytes = slurp(path);
  uint64_t n;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ((8 + n) % 8, 0u);
  EXPECT_EQ(bytes[8], '{');
  // Every tensor starts aligned to its element size.
  Json header = parseJson(bytes.substr(8, n));
  for (const auto &member : asObject(header)) {
    if (member.first == "__metadata__")
      continue;
    size_t size =
        dtypeSize(*parseDType(asString(jsonAt(member.second, "dtype"))));
    EXPECT_EQ(asInt(jsonAt(jsonAt(member.second, "data_offsets"), 0)) %
                  int64_t(size),
              0)
        << member.first;
  }
  EXPECT_EQ(parseSafetensors(bytes, "mem").tensors.size(), ts.size());
  // No temporary left behind.
  struct stat st;
  EXPECT_NE(::stat(atomicTempPath(path).c_str(), &st), 0);
}

TEST(SafetensorsTest, EmptyFileHasNoTensors) {
  test::TempDir dir;
  writeSafetensorsAtomic(dir.file("e.safetensors"), {});
  SafetensorsFile f = readSafetensors(dir.file("e.safetensors"));
  EXPECT_TRUE(f.tensors.empty());
  EXPECT_TRUE(f.metadata.empty());
}

TEST(SafetensorsTest, EveryTruncationIsAnErrorNamingTheFile) {
  test::TempDir dir;
  std::string good = dir.file("good.safetensors");
  writeSafetensorsAtomic(good, sampleTensors(), {{"format", "pt"}});
  std::string bytes = slurp(good);
  std::string cut = dir.file("cut.safetensors");
  spit(cut, bytes);
  // Every length from one byte short down to empty.
  for (size_t len = bytes.size(); len-- > 0;) {
    ASSERT_EQ(::truncate(cut.c_str(), off_t(len)), 0);
    try {
      readSafetensors(cut);
      ADD_FAILURE() << "truncated to " << len << " bytes was accepted";
    } catch (const RuntimeError &e) {
      EXPECT_EQ(std::string(e.what()).rfind(cut + ": ", 0), 0u) << e.what();
    }
  }
  spit(cut, bytes.substr(0, 5));
  EXPECT_THROW(
      {
        try {
          readSafetensors(cut);
        } catch (const RuntimeError &e) {
          EXPECT_EQ(std::string(e.what()),
                    cut + ": file too small (5 bytes); a safetensors file "
                          "starts with an 8-byte header length");
          throw;
        }
      },
      RuntimeError);
}

TEST(SafetensorsTest, FlippedHeaderBytesNeverCrash) {
  std::vector<Tensor> ts = sampleTensors();
  std::string bytes = serializeSafetensorsHeader(ts, {{"format", "pt"}});
  size_t headerEnd = bytes.size();
  for (const Tensor &t : ts)
    bytes.append(reinterpret_cast<const char *>(t.bytes.data()),
                 t.bytes.size());
  int rejected = 0;
  for (size_t i = 0; i < headerEnd; ++i) {
    for (unsigned char mask : {0x01, 0x20, 0x80, 0xFF}) {
      std::string bad = bytes;
      bad[i] = static_cast<char>(bad[i] ^ mask);
      try {
        SafetensorsFile f = parseSafetensors(bad, "m.safetensors");
        // Whatever still parses must still be self-consistent.
        for (const Tensor &t : f.tensors)
          EXPECT_EQ(t.bytes.size(),
                    size_t(t.numElements()) * dtypeSize(t.dtype));
      } catch (const RuntimeError &e) {
        ++rejected;
        EXPECT_EQ(std::string(e.what()).rfind("m.safetensors: ", 0), 0u);
      }
    }
  }
  EXPECT_GT(rejected, int(headerEnd)); // most flips are caught
}

TEST(SafetensorsTest, HeaderLengthErrors) {
  std::string img = image(R"({})", 0);
  img[0] = 100; // header length 100, file has 10 bytes
  EXPECT_EQ(parseError(img),
            "m.safetensors: header length 100 runs past the end of the file "
            "(10 bytes; truncated or not a safetensors file)");
  std::string huge(8, '\xff');
  huge += "{}";
  EXPECT_NE(parseError(huge).find("runs past the end of the file"),
            std::string::npos);
  EXPECT_EQ(parseError(image(" {}", 0)),
            "m.safetensors: header does not start with '{' (not a "
            "safetensors file?)");
  EXPECT_EQ(parseError(image("", 0)),
            "m.safetensors: header does not start with '{' (not a "
            "safetensors file?)");
  EXPECT_EQ(parseError(image("{\"a\": ", 0)),
            "m.safetensors: header is not valid JSON: line 1, column 7: "
            "syntax error while parsing value - unexpected end of input; "
            "expected '[', '{', or a literal");
  EXPECT_EQ(parseError(image("{} []", 0)),
            "m.safetensors: header is not valid JSON: line 1, column 4: "
            "syntax error while parsing value - unexpected '['; expected end "
            "of input");
}

TEST(SafetensorsTest, TensorEntryErrors) {
  auto err = [](const std::string &entry, size_t data = 8) {
    return parseError(image("{\"w\": " + entry + "}", data));
  };
  EXPECT_EQ(err(R"({"dtype": "F64", "shape": [1], "data_offsets": [0, 8]})"),
            "m.safetensors: tensor 'w': unsupported dtype 'F64' (supported: "
            "F32, BF16, F16, I32, I64, U8, I8)");
  EXPECT_EQ(
      err(R"({"dtype": "F32", "shape": [2], "data_offsets": [0, 8], "x": 1})"),
      "m.safetensors: tensor 'w': unknown key 'x' (expected dtype, "
      "shape, data_offsets)");
  EXPECT_EQ(err(R"({"dtype": "F32", "data_offsets": [0, 8]})"),
            "m.safetensors: tensor 'w': missing 'shape'");
  EXPECT_EQ(err(R"({"dtype": "F32", "shape": [-2], "data_offsets": [0, 8]})"),
            "m.safetensors: tensor 'w': shape: expected non-negative integers, "
            "got [-2]");
  EXPECT_EQ(err(R"({"dtype": "F32", "shape": [2], "data_offsets": [0]})"),
            "m.safetensors: tensor 'w': data_offsets: expected [begin, end], "
            "two non-negative integers, got [0]");
  EXPECT_EQ(err(R"({"dtype": "F32", "shape": [2], "data_offsets": [8, 0]})"),
            "m.safetensors: tensor 'w': data_offsets [8, 0]: begin is after "
            "end");
  EXPECT_EQ(err(R"({"dtype": "F32", "shape": [4], "data_offsets": [0, 16]})"),
            "m.safetensors: tensor 'w': data_offsets [0, 16] run past the end "
            "of the data (8 bytes)");
  EXPECT_EQ(err(R"({"dtype": "F32", "shape": [2, 3], "data_offsets": [0, 8]})"),
            "m.safetensors: tensor 'w': data_offsets [0, 8] hold 8 bytes but "
            "F32 [2, 3] needs 24");
  EXPECT_EQ(err(R"({"dtype": "I64", "shape": [4294967296, 4294967296], )"
                R"("data_offsets": [0, 8]})"),
            "m.safetensors: tensor 'w': data_offsets [0, 8] hold 8 bytes but "
            "I64 [4294967296, 4294967296] needs more than the whole file");
  EXPECT_EQ(err(R"("F32")"),
            "m.safetensors: tensor 'w': expected an object with dtype, shape "
            "and data_offsets, got a string");
  // The writer refuses an unnamed tensor, so the reader does too (found by
  // safetensors_fuzzer: a file that loaded but could not be saved again).
  EXPECT_EQ(parseError(image(R"({"": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", 8)),
            "m.safetensors: header: a tensor with an empty name");
  EXPECT_EQ(parseError(image(R"({"__metadata__": {"a": 1}})", 0)),
            "m.safetensors: header: __metadata__: 'a': expected a string, got "
            "a number");
  EXPECT_EQ(
      parseError(image(
          R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4]},)"
          R"( "w": {"dtype": "F32", "shape": [1], "data_offsets": [4, 8]}})",
          8)),
      "m.safetensors: header is not valid JSON: line 1, column 63: "
      "duplicate key \"w\"");
}

// A name is the file's text: quoted in an error it must not break the
// message's one line (found by prompts_fuzzer: "prompt_l\ngths" listed among
// the tensors a missing one was looked for in).
TEST(SafetensorsTest, ANameWithALineBreakStaysOnTheErrorsLine) {
  SafetensorsFile f = parseSafetensors(
      image(R"({"a\nb": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})", 8),
      "m.safetensors");
  try {
    f.at("w");
    FAIL() << "no error for a missing tensor";
  } catch (const RuntimeError &e) {
    EXPECT_STREQ(e.what(), "m.safetensors: no tensor named 'w' (have: a\\nb)");
  }
}

TEST(SafetensorsTest, SpansMustTileTheData) {
  auto two = [](const char *a, const char *b, size_t data) {
    return parseError(
        image(std::string("{\"a\": {\"dtype\": \"U8\", \"shape\": "
                          "[4], \"data_offsets\": ") +
                  a +
                  "}, \"b\": {\"dtype\": \"U8\", \"shape\": [4], "
                  "\"data_offsets\": " +
                  b + "}}",
              data));
  };
  EXPECT_EQ(two("[0, 4]", "[4, 8]", 8), "");
  EXPECT_EQ(two("[4, 8]", "[0, 4]", 8), ""); // any header order
  EXPECT_EQ(two("[0, 4]", "[2, 6]", 8),
            "m.safetensors: tensors 'a' [0, 4] and 'b' [2, 6] overlap");
  EXPECT_EQ(two("[0, 4]", "[0, 4]", 8),
            "m.safetensors: tensors 'a' [0, 4] and 'b' [0, 4] overlap");
  EXPECT_EQ(two("[0, 4]", "[6, 10]", 10),
            "m.safetensors: data bytes [4, 6) before tensor 'b' belong to no "
            "tensor");
  EXPECT_EQ(two("[2, 6]", "[6, 10]", 10),
            "m.safetensors: data bytes [0, 2) before tensor 'a' belong to no "
            "tensor");
  EXPECT_EQ(two("[0, 4]", "[4, 8]", 11),
            "m.safetensors: 3 trailing bytes after the last tensor's data (the "
            "tensors end at data offset 8, the data holds 11 bytes)");
}

TEST(SafetensorsTest, MissingFileAndDirectoryAreErrors) {
  test::TempDir dir;
  try {
    readSafetensors(dir.file("none.safetensors"));
    FAIL();
  } catch (const RuntimeError &e) {
    EXPECT_EQ(std::string(e.what()),
              dir.file("none.safetensors") +
                  ": cannot open: No such file or directory");
  }
  EXPECT_THROW(readSafetensors(dir.path()), RuntimeError);
}

TEST(SafetensorsTest, WriterRejectsInconsistentTensors) {
  test::TempDir dir;
  std::string path = dir.file("w.safetensors");
  Tensor a = Tensor::fromF32("a", {2}, {1, 2});
  EXPECT_THROW(writeSafetensorsAtomic(path, {a, a}), RuntimeError);
  Tensor bad = a;
  bad.bytes.pop_back();
  try {
    writeSafetensorsAtomic(path, {bad});
    FAIL();
  } catch (const RuntimeError &e) {
    EXPECT_EQ(std::string(e.what()),
              path + ": tensor 'a' holds 7 bytes, but F32 [2] needs 8");
  }
  Tensor meta = a;
  meta.name = "__metadata__";
  EXPECT_THROW(writeSafetensorsAtomic(path, {meta}), RuntimeError);
  EXPECT_THROW(Tensor::fromF32("x", {3}, {1, 2}), RuntimeError);
  struct stat st;
  EXPECT_NE(::stat(path.c_str(), &st), 0); // nothing was written
}

TEST(SafetensorsTest, TypedAccessChecksTheDType) {
  Tensor t = Tensor::fromF32("w", {2}, {1, 2});
  EXPECT_EQ(t.data<float>()[1], 2.0f);
  EXPECT_THROW(t.data<int32_t>(), RuntimeError);
  EXPECT_THROW(t.data<uint16_t>(), RuntimeError);
  Tensor i("i", DType::I32, {2});
  EXPECT_THROW(i.toF32(), RuntimeError);
}

TEST(SafetensorsTest, AtomicWriteKeepsTheOldFileWhenTheTempCannotBeWritten) {
  test::TempDir dir;
  std::string path = dir.file("ckpt.safetensors");
  writeSafetensorsAtomic(path, {Tensor::fromF32("v", {1}, {1})});
  std::string before = slurp(path);
  // A directory where the temporary file must go: creating it fails.
  ASSERT_EQ(::mkdir(atomicTempPath(path).c_str(), 0755), 0);
  EXPECT_THROW(writeSafetensorsAtomic(path, {Tensor::fromF32("v", {1}, {2})}),
               RuntimeError);
  EXPECT_EQ(slurp(path), before);
  EXPECT_EQ(readSafetensors(path).at("v").toF32()[0], 1.0f);
}

TEST(SafetensorsTest, AtomicWriteCleansUpWhenTheRenameFails) {
  test::TempDir dir;
  // The target is a directory, so renaming a file over it fails after the
  // temporary has been fully written.
  std::string path = dir.file("ckpt.safetensors");
  ASSERT_EQ(::mkdir(path.c_str(), 0755), 0);
  try {
    writeSafetensorsAtomic(path, {Tensor::fromF32("v", {1}, {1})});
    FAIL();
  } catch (const RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find("cannot rename"), std::string::npos)
        << e.what();
  }
  struct stat st;
  EXPECT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_TRUE(S_ISDIR(st.st_mode));
  EXPECT_NE(::stat(atomicTempPath(path).c_str(), &st), 0); // removed
}

TEST(SafetensorsTest, AtomicWriteReplacesTheOldFile) {
  test::TempDir dir;
  std::string path = dir.file("c.safetensors");
  writeSafetensorsAtomic(path, {Tensor::fromF32("v", {1}, {1})});
  writeSafetensorsAtomic(path, {Tensor::fromF32("v", {2}, {3, 4})});
  EXPECT_EQ(readSafetensors(path).at("v").toF32(), (std::vector<float>{3, 4}));
}

TEST(SafetensorsTest, HalfPrecisionConversions) {
  EXPECT_EQ(floatToBf16(1.0f), 0x3F80);
  EXPECT_EQ(floatToBf16(-2.0f), 0xC000);
  EXPECT_EQ(bf16ToFloat(0x3F80), 1.0f);
  // Round to nearest even: 1 + 2^-8 is halfway between 1 and 1 + 2^-7.
  EXPECT_EQ(floatToBf16(1.0f + 0x1p-8f), 0x3F80);
  EXPECT_EQ(floatToBf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3F81);
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(NAN))));
  // Every NaN stays a NaN of its sign, whatever its payload: rounding the
  // bits would make 0x7FFFFFFF -0 and 0x7F800001 an infinity.
  for (uint32_t bits : {0x7FFFFFFFu, 0x7F800001u, 0x7FC00000u, 0xFFFFFFFFu, 0xFF800001u}) {
    float nan;
    std::memcpy(&nan, &bits, 4);
    uint16_t h = floatToBf16(nan);
    EXPECT_TRUE(std::isnan(bf16ToFloat(h))) << std::hex << bits;
    EXPECT_EQ(h >> 15, bits >> 31) << std::hex << bits;
  }
  EXPECT_EQ(floatToBf16(INFINITY), 0x7F80);
  EXPECT_EQ(floatToBf16(-INFINITY), 0xFF80);

  EXPECT_EQ(f32ToF16(1.0f), 0x3C00);
  EXPECT_EQ(f32ToF16(-2.0f), 0xC000);
  EXPECT_EQ(f32ToF16(65504.0f), 0x7BFF);
  EXPECT_EQ(f32ToF16(65520.0f), 0x7C00); // rounds up to infinity
  EXPECT_EQ(f32ToF16(0x1p-24f), 0x0001); // smallest subnormal
  EXPECT_EQ(f32ToF16(0x1p-25f), 0x0000); // ties to even: zero
  EXPECT_EQ(f32ToF16(0x1p-14f), 0x0400); // smallest normal
  EXPECT_EQ(f16ToF32(0x0001), 0x1p-24f);
  EXPECT_EQ(f16ToF32(0x7BFF), 65504.0f);
  EXPECT_TRUE(std::isinf(f16ToF32(0x7C00)));
  EXPECT_TRUE(std::isnan(f16ToF32(f32ToF16(NAN))));
  // Every f16 value converts to f32 and back unchanged.
  for (uint32_t b = 0; b < 0x10000; ++b) {
    if ((b & 0x7C00) == 0x7C00 && (b & 0x3FF))
      continue; // NaN payloads
    EXPECT_EQ(f32ToF16(f16ToF32(uint16_t(b))), b) << b;
  }
}

} // namespace
