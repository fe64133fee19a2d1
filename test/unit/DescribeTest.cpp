//===- DescribeTest.cpp - Planning figures --------------------------------===//
//
// The expected figures are written out as literal arithmetic from the
// formulas in Describe.h, with the preset's numbers substituted by hand, so
// a slip in the implementation's formula or in the preset shows up here.
//
//===----------------------------------------------------------------------===//

#include "frontend/LoadSpec.h"
#include "frontend/Describe.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/JSON.h"

#include "gtest/gtest.h"

#include <algorithm>

#include <string>

#ifndef FBT_SOURCE_DIR
#error "FBT_SOURCE_DIR (the source root) is set by test/unit/CMakeLists.txt"
#endif

using namespace fbt;

namespace {

ModelSpec preset(llvm::StringRef name) {
  llvm::Expected<ModelSpec> spec = loadSpec(
      (llvm::Twine(FBT_SOURCE_DIR) + "/specs/" + name + ".json").str());
  if (!spec) {
    ADD_FAILURE() << llvm::toString(spec.takeError());
    return ModelSpec();
  }
  return *spec;
}

/// The passes of K that are trained with grad_passes 2 (pass 1 and the last
/// two), and those run forward only.
uint64_t trainedOf(uint64_t k) { return k == 1 ? 1 : 1 + std::min<uint64_t>(k - 1, 2); }
uint64_t forwardOf(uint64_t k) { return k - trainedOf(k); }

// tiny: V=256 D=64 L=2 H=4 F=172, training B=8 T=64, inference Bi=1 S=256,
// glu fusion, K in {1, .., 8}, grad_passes 2.
TEST(DescribeTest, Tiny) {
  Description d = describe(preset("tiny"));
  EXPECT_EQ(d.sharedParams,
            256ull * 64 + 2 * (2 * 64 + 4 * 64 * 64 + 3 * 64 * 172) + 64);
  EXPECT_EQ(d.sharedParams, 115520u);
  EXPECT_EQ(d.feedbackParams, 2ull * 64 * 64);
  EXPECT_EQ(d.totalParams, 115520ull + 8192);
  EXPECT_EQ(d.matmulParams, 2ull * (4 * 64 * 64 + 3 * 64 * 172) + 256 * 64);

  EXPECT_EQ(d.tokensPerStep, 8ull * 64);
  EXPECT_EQ(d.weightBytes, 4ull * 123712);
  EXPECT_EQ(d.gradientBytes, 4ull * 123712);
  EXPECT_EQ(d.optimizerBytes, 8ull * 123712);

  // N_mm = 115200; per trained pass 6*N_mm + 12*L*T*D, feedback 6 * 2D^2
  // per trained pass after the first; a forward-only pass a third of both.
  ASSERT_EQ(d.passes.size(), 8u);
  for (uint64_t k = 1; k <= 8; ++k) {
    const PassFigures &p = d.passes[k - 1];
    uint64_t t = trainedOf(k), f = forwardOf(k);
    EXPECT_EQ(p.passes, int64_t(k));
    EXPECT_EQ(p.trainFlopsPerToken,
              t * (6ull * 115200 + 12 * 2 * 64 * 64) + (t - 1) * 6 * 8192 +
                  f * (2ull * 115200 + 4 * 2 * 64 * 64 + 2 * 8192));
    // Per token: L*(9D + 3F + H*T) + 2V + D = 2*(576 + 516 + 256) + 512 + 64
    // = 3272; per fused pass 3D = 192; only trained passes keep theirs.
    EXPECT_EQ(
        p.activationBytes,
        4 * (t * 8 * 64 * (2ull * (9 * 64 + 3 * 172 + 4 * 64) + 2 * 256 + 64) +
             (t - 1) * 8 * 64 * 3 * 64));
    EXPECT_EQ(p.stepBytes, 16ull * 123712 + p.activationBytes);
  }
  EXPECT_EQ(d.passes[0].trainFlopsPerToken, 789504u);
  EXPECT_EQ(d.passes[0].activationBytes, 4ull * 512 * 3272);

  EXPECT_EQ(d.kvBytesPerTokenFp32, 2ull * 2 * 64 * 4);
  EXPECT_EQ(d.kvBytesPerTokenBf16, 2ull * 2 * 64 * 2);
  EXPECT_EQ(d.kvBytesFp32, 2ull * 2 * 64 * 4 * 256 * 1);
  EXPECT_EQ(d.kvBytesBf16, 2ull * 2 * 64 * 2 * 256 * 1);
  EXPECT_EQ(d.decodeContext, 128u);
  EXPECT_EQ(d.decodeFlopsPerToken, 2ull * 115200 + 4 * 2 * 64 * 128);
  EXPECT_EQ(d.decodeFlopsPerContextToken, 4ull * 2 * 64);
  EXPECT_EQ(d.softExtraFlopsPerToken, 2ull * 8192 + 4 * 64);
  EXPECT_DOUBLE_EQ(d.softExtraPercent, 100.0 * (2 * 8192 + 4 * 64) /
                                           (2 * 115200 + 4 * 2 * 64 * 128));
}

// 124m: V=50304 D=768 L=12 H=12 F=2048, training B=16 T=1024, inference
// Bi=1 S=1024, glu fusion, K in {1, .., 8}, grad_passes 2.
TEST(DescribeTest, GptScale) {
  Description d = describe(preset("124m"));
  const uint64_t shared =
      50304ull * 768 + 12 * (2 * 768 + 4ull * 768 * 768 + 3ull * 768 * 2048) +
      768;
  EXPECT_EQ(d.sharedParams, shared);
  EXPECT_EQ(d.sharedParams, 123587328u);
  EXPECT_EQ(d.feedbackParams, 2ull * 768 * 768);
  EXPECT_EQ(d.totalParams, shared + 2ull * 768 * 768);
  const uint64_t matmul =
      12 * (4ull * 768 * 768 + 3ull * 768 * 2048) + 50304ull * 768;
  EXPECT_EQ(d.matmulParams, matmul);
  EXPECT_EQ(d.weightBytes, 4 * (shared + 2ull * 768 * 768));

  ASSERT_EQ(d.passes.size(), 8u);
  for (uint64_t k = 1; k <= 8; ++k) {
    const PassFigures &p = d.passes[k - 1];
    uint64_t t = trainedOf(k), f = forwardOf(k);
    EXPECT_EQ(p.trainFlopsPerToken,
              t * (6 * matmul + 12ull * 12 * 1024 * 768) +
                  (t - 1) * 6 * (2ull * 768 * 768) +
                  f * (2 * matmul + 4ull * 12 * 1024 * 768 + 2 * (2ull * 768 * 768)));
    EXPECT_EQ(
        p.activationBytes,
        4 * (t * 16 * 1024 *
                 (12ull * (9 * 768 + 3 * 2048 + 12 * 1024) + 2 * 50304 + 768) +
             (t - 1) * 16 * 1024 * 3 * 768));
  }
  // The K=1 figure against PaLM's rule of thumb: 6N + 12*L*T*D.
  EXPECT_EQ(d.passes[0].trainFlopsPerToken, 854654976u);

  EXPECT_EQ(d.kvBytesPerTokenFp32, 2ull * 12 * 768 * 4);
  EXPECT_EQ(d.kvBytesFp32, 2ull * 12 * 768 * 4 * 1024);
  EXPECT_EQ(d.kvBytesBf16, 2ull * 12 * 768 * 2 * 1024);
  EXPECT_EQ(d.decodeContext, 512u);
  EXPECT_EQ(d.decodeFlopsPerToken, 2 * matmul + 4ull * 12 * 768 * 512);
  EXPECT_EQ(d.softExtraFlopsPerToken, 2 * (2ull * 768 * 768) + 4 * 768);
}

TEST(DescribeTest, LargestPresetFits) {
  ModelSpec s = preset("1b");
  llvm::Expected<Description> d = tryDescribe(s);
  ASSERT_TRUE(bool(d)) << llvm::toString(d.takeError());
  EXPECT_EQ(d->sharedParams,
            50304ull * 2048 +
                16 * (2 * 2048 + 4ull * 2048 * 2048 + 3ull * 2048 * 5632) +
                2048);
}

TEST(DescribeTest, FusionVariants) {
  ModelSpec s = preset("tiny");
  s.feedback.fusion = Fusion::Add;
  Description add = describe(s);
  EXPECT_EQ(add.feedbackParams, 64ull * 64);
  EXPECT_EQ(add.passes[1].trainFlopsPerToken,
            2 * (6ull * 115200 + 12 * 2 * 64 * 64) + 6 * 64 * 64);

  s.feedback.fusion = Fusion::Concat;
  EXPECT_EQ(describe(s).feedbackParams, 2ull * 64 * 64);

  s.feedback.fusion = Fusion::None;
  Description none = describe(s);
  EXPECT_EQ(none.feedbackParams, 0u);
  EXPECT_EQ(none.totalParams, none.sharedParams);
  ASSERT_EQ(none.passes.size(), 1u);
  EXPECT_EQ(none.passes[0].passes, 1);
  EXPECT_EQ(none.softExtraFlopsPerToken, 4ull * 64);
}

TEST(DescribeTest, HumanUnits) {
  EXPECT_EQ(formatCount(0), "0");
  EXPECT_EQ(formatCount(999), "999");
  EXPECT_EQ(formatCount(1000), "1.0K");
  EXPECT_EQ(formatCount(4200000), "4.2M");
  EXPECT_EQ(formatCount(999960), "1.0M"); // not "1000.0K"
  EXPECT_EQ(formatCount(123587328), "123.6M");
  EXPECT_EQ(formatCount(UINT64_MAX), "18.4E");
  EXPECT_EQ(formatBytes(512), "512 B");
  EXPECT_EQ(formatBytes(1024), "1.0 KiB");
  EXPECT_EQ(formatBytes(1395864371), "1.3 GiB");
  EXPECT_EQ(formatBytes(UINT64_MAX), "16.0 EiB");
}

TEST(DescribeTest, TableIsAligned) {
  ModelSpec s = preset("tiny");
  std::string out;
  llvm::raw_string_ostream os(out);
  printDescription(s, describe(s), os);
  EXPECT_NE(out.find("115520"), std::string::npos);
  EXPECT_NE(out.find("115.5K"), std::string::npos);
  EXPECT_NE(out.find("K in {1, 2, 3, 4, 5, 6, 7, 8}"), std::string::npos);
  // Data rows (indented) all end at the same column.
  llvm::SmallVector<llvm::StringRef> lines;
  llvm::StringRef(out).split(lines, '\n', -1, false);
  size_t width = 0;
  for (llvm::StringRef line : lines) {
    if (!line.starts_with("  "))
      continue;
    if (!width)
      width = line.size();
    EXPECT_EQ(line.size(), width) << line.str();
  }
  EXPECT_GT(width, 0u);
}

TEST(DescribeTest, JsonIsOneObject) {
  ModelSpec s = preset("tiny");
  Description d = describe(s);
  std::string out;
  llvm::raw_string_ostream os(out);
  printDescriptionJson(s, d, os);
  ASSERT_FALSE(out.empty());
  EXPECT_EQ(out.back(), '\n');
  EXPECT_EQ(llvm::StringRef(out).count('\n'), 1u);
  llvm::Expected<llvm::json::Value> v = llvm::json::parse(out);
  ASSERT_TRUE(bool(v)) << llvm::toString(v.takeError());
  const llvm::json::Object *o = v->getAsObject();
  EXPECT_EQ(o->getObject("params")->getInteger("total"), 123712);
  const llvm::json::Array *passes =
      o->getObject("training")->getArray("passes");
  ASSERT_EQ(passes->size(), 8u);
  EXPECT_EQ((*passes)[2].getAsObject()->getInteger("k"), 3);
  EXPECT_EQ((*passes)[0].getAsObject()->getInteger("flops_per_token"), 789504);
  EXPECT_EQ(o->getObject("inference")->getInteger("kv_bytes_fp32"), 262144);
}

} // namespace
