//===- QuantizedWeightsTest.cpp - inference weights: rounding, stored files ===//

#include "runtime/base/Bf16.h"
#include "runtime/base/Error.h"
#include "runtime/format/InferenceFile.h"
#include "runtime/format/QuantizedWeights.h"
#include "runtime/format/Safetensors.h"
#include "runtime/format/WeightNames.h"

#include "test/runtime/ErrorOf.h"
#include "test/runtime/TempDir.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>

using namespace fbt;

namespace {

/// rows x cols values in [-1, 1), row 1 all zero.
std::vector<float> sample(int64_t rows, int64_t cols) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> w(size_t(rows * cols));
  for (int64_t i = 0; i < rows * cols; ++i)
    w[size_t(i)] = i / cols == 1 ? 0.0f : u(rng);
  return w;
}

using test::errorOf;

TEST(QuantizedWeightsTest, Int8GroupsEndInAShorterOne) {
  const int64_t rows = 3, cols = 45; // a group of 32, then one of 13
  std::vector<float> w = sample(rows, cols);
  QuantizedMatrix q = quantizeMatrix(WeightForm::Int8, w.data(), rows, cols);
  ASSERT_EQ(q.values.size(), size_t(rows * cols));
  ASSERT_EQ(q.halves.size(), size_t(rows * 2));
  std::vector<float> back = dequantizeMatrix(q);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t g = 0; g < 2; ++g) {
      int64_t from = g * 32, to = std::min<int64_t>(cols, from + 32);
      float amax = 0;
      for (int64_t c = from; c < to; ++c)
        amax = std::max(amax, std::fabs(w[size_t(r * cols + c)]));
      // Each group's own scale: its largest value maps to +-127.
      float d = f16ToF32(q.halves[size_t(r * 2 + g)]);
      EXPECT_NEAR(d, amax / 127, amax / 127 * 1e-3) << "row " << r << " group " << g;
      for (int64_t c = from; c < to; ++c)
        EXPECT_NEAR(back[size_t(r * cols + c)], w[size_t(r * cols + c)], d * 0.51 + 1e-7);
    }
  // The zero row: scale 0, values 0, dequantized 0 (no NaN from 0 / 0).
  for (int64_t c = 0; c < cols; ++c)
    EXPECT_EQ(back[size_t(cols + c)], 0.0f);
}

TEST(QuantizedWeightsTest, InterleavedRowsLieAsTheLayoutSays) {
  // 37 rows: two blocks of 16, then 5 in the row layout; 72 columns: 18
  // chunks of 4, two whole groups and one of 8.
  const int64_t rows = 37, cols = 72, groups = 3, chunks = 18;
  std::vector<float> w = sample(rows, cols);
  QuantizedMatrix q = quantizeMatrix(WeightForm::Int8, w.data(), rows, cols);
  QuantizedMatrix p = interleaveRows(q);
  ASSERT_EQ(weights::interleavedRows(rows, cols), 32);
  ASSERT_EQ(p.values.size(), q.values.size());
  ASSERT_EQ(p.halves.size(), q.halves.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) {
      int8_t value = q.values[size_t(r * cols + c)];
      if (r >= 32) { // after the blocks: as it was
        EXPECT_EQ(p.values[size_t(r * cols + c)], value);
        continue;
      }
      size_t at = size_t(((r / 16 * chunks + c / 4) * 16 + r % 16) * 4 + c % 4);
      EXPECT_EQ(uint8_t(p.values[at]), uint8_t(int(value) + 128)) << r << ", " << c;
    }
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t g = 0; g < groups; ++g)
      EXPECT_EQ(p.halves[size_t(r < 32 ? (r / 16 * groups + g) * 16 + r % 16 : r * groups + g)],
                q.halves[size_t(r * groups + g)]);
  // Rows that are not whole 4-byte chunks keep the row layout.
  ASSERT_EQ(weights::interleavedRows(rows, 70), 0);
  QuantizedMatrix odd = quantizeMatrix(WeightForm::Int8, w.data(), rows, 70);
  EXPECT_EQ(interleaveRows(odd).values, odd.values);
  EXPECT_NE(errorOf([&] { interleaveRows(quantizeMatrix(WeightForm::BF16, w.data(), 2, 4)); })
                .find("only int8 weights interleave"),
            std::string::npos);
}

TEST(QuantizedWeightsTest, Bf16RoundsToNearestEven) {
  std::vector<float> w = sample(2, 5);
  QuantizedMatrix q = quantizeMatrix(WeightForm::BF16, w.data(), 2, 5);
  std::vector<float> back = dequantizeMatrix(q);
  for (size_t i = 0; i < w.size(); ++i)
    EXPECT_EQ(back[i], bf16ToFloat(floatToBf16(w[i])));
  EXPECT_EQ(q.bytes(false), w.size() * 2);
}

TEST(QuantizedWeightsTest, BadScalesAreNamed) {
  std::vector<float> w = sample(2, 40);
  QuantizedMatrix q = quantizeMatrix(WeightForm::Int8, w.data(), 2, 40);
  EXPECT_EQ(errorOf([&] { checkScales(q, "m"); }), "");
  for (float bad : {std::numeric_limits<float>::quiet_NaN(),
                    std::numeric_limits<float>::infinity(), -0.5f}) {
    QuantizedMatrix c = q;
    c.halves[3] = f32ToF16(bad); // row 1, group 1
    std::string e = errorOf([&] { checkScales(c, "m"); });
    EXPECT_NE(e.find("m: the scale of row 1, group 1 is"), std::string::npos) << e;
    EXPECT_NE(e.find("scales are finite and not negative"), std::string::npos) << e;
  }
}

/// A stored file of one int8 matrix "w" [3, 45] and an f32 vector "n".
struct StoredFile {
  test::TempDir dir;
  std::string path = dir.path() + "/q.safetensors";
  QuantizedMatrix q;
  std::vector<Tensor> tensors;

  StoredFile() {
    std::vector<float> w = sample(3, 45);
    q = quantizeMatrix(WeightForm::Int8, w.data(), 3, 45);
    tensors = inference_file::tensorsOf("w", q);
    tensors.push_back(Tensor::fromF32("n", {2}, {1, 2}));
  }
  void write() { inference_file::write(path, WeightForm::Int8, tensors, {{"fbt.model", "m"}}); }
  /// Reads the file back as loading would: form, fingerprint, the matrix.
  QuantizedMatrix load() {
    SafetensorsFile file = readSafetensors(path);
    std::optional<WeightForm> form = inference_file::formOf(file);
    if (!form)
      throw RuntimeError("no form");
    inference_file::checkFingerprint(file);
    return inference_file::readMatrix(file, *form, "w", 3, 45);
  }
};

TEST(InferenceFileTest, RoundTrips) {
  StoredFile f;
  f.write();
  QuantizedMatrix back = f.load();
  EXPECT_EQ(back.values, f.q.values);
  EXPECT_EQ(back.halves, f.q.halves);
  SafetensorsFile file = readSafetensors(f.path);
  EXPECT_EQ(file.metadata.at("fbt.inference_weights"), "int8");
  EXPECT_EQ(file.metadata.at("fbt.model"), "m");
  EXPECT_EQ(file.at("int8.w").dtype, DType::I8);
  EXPECT_EQ(file.at("int8_scales.w").shape, (std::vector<int64_t>{3, 2}));
}

TEST(InferenceFileTest, ChangedBytesAreRefused) {
  StoredFile f;
  f.write();
  // One value's byte changed in place (the file's last byte: an int8 value
  // or a scale, whichever the writer put last).
  {
    std::FILE *io = std::fopen(f.path.c_str(), "r+b");
    ASSERT_TRUE(io);
    std::fseek(io, -1, SEEK_END);
    int c = std::fgetc(io);
    std::fseek(io, -1, SEEK_END);
    std::fputc(c ^ 0x01, io);
    std::fclose(io);
  }
  std::string e = errorOf([&] { f.load(); });
  EXPECT_NE(e.find("q.safetensors: the tensors' bytes do not match the file's "
                   "fbt.weights_hash"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("the file changed after it was written"), std::string::npos) << e;
}

TEST(InferenceFileTest, BadScalesAreRefused) {
  for (float bad : {std::numeric_limits<float>::quiet_NaN(),
                    std::numeric_limits<float>::infinity(), -1.0f}) {
    StoredFile f;
    f.tensors[1].data<uint16_t>()[5] = f32ToF16(bad); // row 2, group 1
    f.write(); // a consistent fingerprint: the scale itself is wrong
    std::string e = errorOf([&] { f.load(); });
    EXPECT_NE(e.find("'int8_scales.w': the scale of row 2, group 1 is"), std::string::npos)
        << e;
  }
}

TEST(InferenceFileTest, ShapesAndFormsThatDoNotMatchAreRefused) {
  StoredFile f;
  f.tensors[1] = Tensor("int8_scales.w", DType::F16, {3, 1}); // one group per row
  f.write();
  std::string e = errorOf([&] { f.load(); });
  EXPECT_NE(e.find("tensor 'int8_scales.w' is F16 [3, 1], the bundle's 'w' takes F16 [3, 2]"),
            std::string::npos)
      << e;

  StoredFile g;
  g.write();
  SafetensorsFile file = readSafetensors(g.path);
  e = errorOf([&] { inference_file::readMatrix(file, WeightForm::Int8, "w", 3, 44); });
  EXPECT_NE(e.find("the bundle's 'w' takes I8 [3, 44]"), std::string::npos) << e;
  e = errorOf([&] { inference_file::readMatrix(file, WeightForm::BF16, "w", 3, 45); });
  EXPECT_NE(e.find("no tensor named 'bf16.w'"), std::string::npos) << e;

  file.metadata["fbt.inference_weights"] = "int4";
  e = errorOf([&] { inference_file::formOf(file); });
  EXPECT_NE(e.find("metadata fbt.inference_weights is 'int4' (expected bf16 or int8)"),
            std::string::npos)
      << e;
  file.metadata.erase("fbt.weights_hash");
  e = errorOf([&] { inference_file::checkFingerprint(file); });
  EXPECT_NE(e.find("inference weights without metadata fbt.weights_hash"), std::string::npos)
      << e;
}

} // namespace
