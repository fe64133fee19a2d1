//===- BundleTest.cpp - Loading GPU-target bundles ------------------------===//
//
// The loader's checks of an "nvptx" bundle: its target, blobs and launches.
// (CPU bundles and corrupt files are covered end to end by the lit suite.)
//
//===----------------------------------------------------------------------===//

#include "test/runtime/TempDir.h"
#include "test/runtime/TestManifests.h"

#include "runtime/base/Error.h"
#include "runtime/format/Bundle.h"

#include <gtest/gtest.h>

#include <fstream>

namespace fbt {
namespace {

const std::string kPtx = ".version 8.0\n.target sm_90\n.address_size 64\n";

/// Loads a bundle that must fail, and returns its message.
std::string loadError(const test::TempDir &dir, const Json &manifest,
                      const std::vector<std::pair<std::string, std::string>> &blobs) {
  std::string path = dir.file("b.fbtb");
  writeBundleFile(path, manifest, blobs);
  try {
    Bundle::load(path);
  } catch (const RuntimeError &e) {
    return e.what();
  }
  ADD_FAILURE() << "the bundle loaded";
  return "";
}

TEST(BundleTest, LoadsAGpuBundle) {
  test::TempDir dir;
  Json m = test::gpuManifest({"k0_embedding", "k1_softmax"});
  // k1 runs in two launches, the second with shared memory.
  m["launches"]["k1_softmax"] =
      Json::array({test::launchJson("k1_softmax_rows", {128, 2, 1}, {32, 8, 1}),
                   test::launchJson("k1_softmax_sum", {1, 1, 1}, {1024, 1, 1}, 4096)});
  std::string path = dir.file("gpu.fbtb");
  writeBundleFile(path, m, {{"kernels.ptx", kPtx}, {"kernels.cubin", "\x7f" "ELF"}});
  Bundle b = Bundle::load(path);
  EXPECT_TRUE(b.target().gpu());
  EXPECT_EQ(b.target().kind, TargetKind::Nvptx);
  EXPECT_EQ(b.target().chip, "sm_90");
  EXPECT_EQ(b.target().features, "+ptx80");
  ASSERT_NE(b.blob("kernels.ptx"), nullptr);
  EXPECT_EQ(*b.blob("kernels.ptx"), kPtx);
  ASSERT_NE(b.blob("kernels.cubin"), nullptr);
  EXPECT_EQ(b.blob("kernels.so"), nullptr);

  const std::vector<KernelLaunch> &one = b.launches("k0_embedding");
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].entry, "k0_embedding");
  EXPECT_EQ(one[0].grid[0], 8u);
  EXPECT_EQ(one[0].block[0], 256u);
  const std::vector<KernelLaunch> &two = b.launches("k1_softmax");
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(two[0].entry, "k1_softmax_rows");
  EXPECT_EQ(two[0].grid[1], 2u);
  EXPECT_EQ(two[0].block[1], 8u);
  EXPECT_EQ(two[1].entry, "k1_softmax_sum");
  EXPECT_EQ(two[1].block[0], 1024u);
  EXPECT_EQ(two[1].sharedBytes, 4096u);
  EXPECT_THROW(b.launches("k9_missing"), RuntimeError);
  EXPECT_THROW(b.kernelLibrary(), RuntimeError);
}

TEST(BundleTest, ThePtxIsEnoughWithoutACubin) {
  test::TempDir dir;
  std::string path = dir.file("gpu.fbtb");
  writeBundleFile(path, test::gpuManifest({"k0_a"}), {{"kernels.ptx", kPtx}});
  EXPECT_EQ(Bundle::load(path).blob("kernels.cubin"), nullptr);
}

TEST(BundleTest, EveryKernelNeedsALaunch) {
  test::TempDir dir;
  Json m = test::gpuManifest({"k0_a", "k1_b"});
  m["launches"].get_ref<Json::object_t &>().pop_back();
  EXPECT_NE(loadError(dir, m, {{"kernels.ptx", kPtx}}).find("kernel 'k1_b' has no launches"),
            std::string::npos);
  m["launches"]["k1_b"] = Json::array();
  EXPECT_NE(loadError(dir, m, {{"kernels.ptx", kPtx}}).find("kernel 'k1_b' has no launches"),
            std::string::npos);
}

TEST(BundleTest, LaunchesAreChecked) {
  test::TempDir dir;
  struct Case {
    Json launch;
    std::string message;
  } cases[] = {
      {test::launchJson("k0_a", {1, 1, 1}, {2048, 1, 1}),
       "kernel 'k0_a': launch 0: block [2048, 1, 1] has 2048 threads; a CUDA block "
       "holds at most 1024"},
      {test::launchJson("k0_a", {1, 1, 1}, {64, 32, 1}), "has 2048 threads"},
      {test::launchJson("k0_a", {0, 1, 1}, {32, 1, 1}),
       "kernel 'k0_a': launch 0: grid size 0 is outside [1, 2147483647]"},
      {test::launchJson("k0_a", {1, 70000, 1}, {32, 1, 1}),
       "grid size 70000 is outside [1, 65535]"},
      {test::launchJson("k0_a", {1, 1, 1}, {0, 1, 1}), "block size 0 is outside"},
      {test::launchJson("", {1, 1, 1}, {32, 1, 1}),
       "kernel 'k0_a': launch 0: the entry symbol is empty"},
      {test::launchJson("k0_a", {1, 1, 1}, {32, 1, 1}, -4), "shared_bytes -4"},
      {Json::object({{"entry", "k0_a"}, {"grid", Json::array({1, 1})}, {"block", Json::array({1, 1, 1})}}),
       "grid must have 3 sizes"},
  };
  for (const Case &c : cases) {
    Json m = test::gpuManifest({"k0_a"});
    m["launches"]["k0_a"] = Json::array({c.launch});
    std::string error = loadError(dir, m, {{"kernels.ptx", kPtx}});
    EXPECT_NE(error.find("not a valid fbt bundle"), std::string::npos) << error;
    EXPECT_NE(error.find(c.message), std::string::npos) << error;
  }
}

/// A one-step manifest whose step is one 2x2x2 GEMM of element types `types`
/// (buffers sized for f32).
Json gemmManifest(Json types) {
  Json m = test::gpuManifest({});
  Json gemm = Json::object({{"gemm", Json::array({2, 2, 2})},
                            {"transpose", Json::array({false, false})},
                            {"args", Json::array({Json::array({"arena", 0, 0, 16}),
                                                  Json::array({"arena", 0, 64, 16}),
                                                  Json::array({"arena", 0, 128, 16})})}});
  if (!types.is_null())
    gemm["types"] = std::move(types);
  m["steps"]["s"] = Json::object({{"kind", "train"}, {"passes", 1}, {"arena_bytes", 256},
                                  {"inputs", Json::array()}, {"outputs", Json::array()},
                                  {"constants", Json::array()},
                                  {"ops", Json::array({std::move(gemm)})},
                                  {"copies", Json::array()}});
  return m;
}

TEST(BundleTest, GemmElementTypes) {
  test::TempDir dir;
  std::string path = dir.file("gemm.fbtb");
  writeBundleFile(path, gemmManifest(Json()), {{"kernels.ptx", kPtx}});
  const PlanOp &f32 = Bundle::load(path).step("s").ops[0];
  EXPECT_EQ(f32.lhsType, DType::F32);
  EXPECT_EQ(f32.resultType, DType::F32);
  // bf16 storage: bf16 operands accumulating into an f32 result.
  writeBundleFile(path, gemmManifest(Json::array({"bf16", "bf16", "f32"})),
                    {{"kernels.ptx", kPtx}});
  const PlanOp &mixed = Bundle::load(path).step("s").ops[0];
  EXPECT_EQ(mixed.lhsType, DType::BF16);
  EXPECT_EQ(mixed.rhsType, DType::BF16);
  EXPECT_EQ(mixed.resultType, DType::F32);
  EXPECT_NE(loadError(dir, gemmManifest(Json::array({"f16", "f16", "f16"})),
                      {{"kernels.ptx", kPtx}})
                .find("a GEMM of element type 'f16' (expected f32 or bf16)"),
            std::string::npos);
  EXPECT_NE(loadError(dir, gemmManifest(Json::array({"bf16", "f32", "f32"})),
                      {{"kernels.ptx", kPtx}})
                .find("a GEMM's operands must share a type, got bf16 and f32"),
            std::string::npos);
}

TEST(BundleTest, AGpuBundleNeedsItsPtx) {
  test::TempDir dir;
  std::string error = loadError(dir, test::gpuManifest({"k0_a"}), {});
  EXPECT_NE(error.find("a 'nvptx' bundle needs the PTX (kernels.ptx)"),
            std::string::npos)
      << error;
}

TEST(BundleTest, BlobsAreChecksummed) {
  test::TempDir dir;
  std::string path = dir.file("b.fbtb");
  writeBundleFile(path, test::gpuManifest({"k0_a"}), {{"kernels.ptx", kPtx}});
  std::string bytes;
  {
    std::ifstream in(path, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  size_t ptx = bytes.find(kPtx);
  ASSERT_NE(ptx, std::string::npos);
  bytes[ptx + 3] ^= 1;
  std::ofstream(path, std::ios::binary) << bytes;
  try {
    Bundle::load(path);
    FAIL() << "the bundle loaded";
  } catch (const RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find("the PTX's checksum does not match"),
              std::string::npos)
        << e.what();
  }
}

TEST(BundleTest, UnknownTargetsAreNamed) {
  test::TempDir dir;
  Json m = test::gpuManifest({"k0_a"});
  m["target"]["kind"] = "tpu";
  std::string error = loadError(dir, m, {{"kernels.ptx", kPtx}});
  EXPECT_NE(error.find("compiled for target 'tpu'"), std::string::npos) << error;
}

TEST(BundleTest, KernelsOfAnotherArchitectureAreRefused) {
  test::TempDir dir;
  Json m = test::gpuManifest({"k0_a"});
  m["target"] = Json::object();
  m["target"]["kind"] = "cpu";
  m["target"]["triple"] = "sparc64-unknown-linux-gnu";
  m["target"]["arch"] = "sparc64";
  std::string error = loadError(dir, m, {{"kernels.so", "not loaded"}});
  EXPECT_NE(error.find("compiled for sparc64, but this machine is"), std::string::npos)
      << error;
}

} // namespace
} // namespace fbt
