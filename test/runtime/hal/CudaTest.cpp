//===- CudaTest.cpp - The CUDA backend on a real GPU ----------------------===//
//
// Memory, copies, cuBLASLt GEMMs against a host loop (every transpose, odd
// sizes, operands off the 256-byte alignment cuBLASLt assumes), a step plan
// run plainly, as a replayed CUDA graph and profiled, and the choice between
// cubin and PTX. Without a driver or a GPU these tests skip and say why;
// the few that need neither run everywhere.
//
//===----------------------------------------------------------------------===//

#include "test/runtime/TempDir.h"
#include "test/runtime/TestManifests.h"

#include "runtime/base/Error.h"
#include "runtime/hal/Device.h"
#include "runtime/hal/cuda/CudaDevice.h"
#include "runtime/hal/cuda/CudaGemm.h"
#include "runtime/hal/cuda/CudaKernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>

namespace fbt {
namespace {

// An empty module every GPU fbt supports can JIT (sm_80 is Ampere).
const std::string kEmptyPtx = ".version 7.0\n.target sm_80\n.address_size 64\n";

/// Why no GPU is usable here, or "" when one is.
std::string noGpu() {
  std::vector<std::string> lines;
  return cuda::probeCuda(&lines) ? "" : lines.at(0);
}

class CudaTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string why = noGpu();
    if (!why.empty())
      GTEST_SKIP() << "no usable GPU: " << why;
    bundle_ = loadBundle("sm_80", {{"kernels.ptx", kEmptyPtx}});
    device_ = std::make_unique<cuda::CudaDevice>(*bundle_);
  }

  std::unique_ptr<Bundle> loadBundle(
      const std::string &chip,
      const std::vector<std::pair<std::string, std::string>> &blobs) {
    std::string path = dir_.file(chip + std::to_string(blobs.size()) + ".fbtb");
    writeBundleFile(path, test::gpuManifest({}, chip), blobs);
    return std::make_unique<Bundle>(Bundle::load(path));
  }

  test::TempDir dir_;
  std::unique_ptr<Bundle> bundle_;
  std::unique_ptr<cuda::CudaDevice> device_;
};

TEST(CudaChipTest, ParsesChipNames) {
  bool arch = true;
  EXPECT_EQ(cuda::chipCapability("sm_90", &arch), 90);
  EXPECT_FALSE(arch);
  EXPECT_EQ(cuda::chipCapability("sm_90a", &arch), 90);
  EXPECT_TRUE(arch);
  EXPECT_EQ(cuda::chipCapability("sm_80"), 80);
  EXPECT_EQ(cuda::chipCapability("sm_100"), 100);
  EXPECT_EQ(cuda::chipCapability("sm_"), -1);
  EXPECT_EQ(cuda::chipCapability("gfx90a"), -1);
  EXPECT_EQ(cuda::chipCapability("sm_90x"), -1);
}

TEST(CudaNoGpuTest, AGpuBundleSaysWhyItCannotRun) {
  std::string why = noGpu();
  if (why.empty())
    GTEST_SKIP() << "a GPU is usable here";
  test::TempDir dir;
  std::string path = dir.file("gpu.fbtb");
  writeBundleFile(path, test::gpuManifest({"k0_a"}), {{"kernels.ptx", kEmptyPtx}});
  Bundle b = Bundle::load(path);
  try {
    openDevice(b);
    FAIL() << "a device opened";
  } catch (const RuntimeError &e) {
    std::string m = e.what();
    EXPECT_NE(m.find(path + ": this bundle targets NVIDIA sm_90 but "), std::string::npos) << m;
    EXPECT_NE(m.find(why), std::string::npos) << m;
  }
}

TEST_F(CudaTest, CopiesRoundTrip) {
  const size_t n = 1001;
  std::vector<float> host(n), back(n, -1.0f);
  for (size_t i = 0; i < n; ++i)
    host[i] = 0.25f * (float)i - 7.0f;
  DeviceBuffer a(*device_, n * 4, "a"), b(*device_, n * 4 + 3, "b");
  device_->download(back.data(), a.data(), n * 4);
  for (float v : back)
    ASSERT_EQ(v, 0.0f) << "new memory is zeroed";
  device_->upload(a.data(), host.data(), n * 4);
  device_->copy(b.data(), a.data(), n * 4);
  device_->download(back.data(), b.data(), n * 4);
  EXPECT_EQ(back, host);
  device_->zero(static_cast<char *>(b.data()) + 4, 8);
  device_->download(back.data(), b.data(), n * 4);
  EXPECT_EQ(back[0], host[0]);
  EXPECT_EQ(back[1], 0.0f);
  EXPECT_EQ(back[2], 0.0f);
  EXPECT_EQ(back[3], host[3]);
  EXPECT_NE(device_->describe().find("sm_"), std::string::npos) << device_->describe();
}

TEST_F(CudaTest, OutOfMemoryNamesTheBufferAndTheFreeMemory) {
  try {
    DeviceBuffer huge(*device_, size_t(1) << 50, "the arena of step 'train_k1'");
    FAIL() << "a petabyte was allocated";
  } catch (const RuntimeError &e) {
    std::string m = e.what();
    EXPECT_NE(m.find("out of GPU memory for the arena of step 'train_k1': 1125899906842624 "
                     "bytes"),
              std::string::npos)
        << m;
    EXPECT_NE(m.find(" free of "), std::string::npos) << m;
  }
}

/// C = op(A) op(B) on the host, in double, row-major as the plans are.
std::vector<float> hostGemm(const PlanOp &op, const std::vector<float> &a,
                            const std::vector<float> &b) {
  std::vector<float> c(op.m * op.n);
  for (int64_t i = 0; i < op.m; ++i)
    for (int64_t j = 0; j < op.n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < op.k; ++p) {
        double x = op.transposeLhs ? a[p * op.m + i] : a[i * op.k + p];
        double y = op.transposeRhs ? b[j * op.k + p] : b[p * op.n + j];
        s += x * y;
      }
      c[i * op.n + j] = (float)s;
    }
  return c;
}

/// Runs every transpose and a few odd shapes through `gemm`; `tolerance`
/// is per unit of sqrt(k) (inputs are in [-1, 1]).
void checkGemms(cuda::CudaDevice &device, cuda::CudaGemm &gemm, double tolerance) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int64_t shapes[][3] = {{37, 53, 29}, {1, 257, 64}, {128, 1, 3}, {64, 96, 130}};
  for (auto [m, n, k] : shapes)
    for (int t = 0; t < 4; ++t) {
      PlanOp op;
      op.m = m, op.n = n, op.k = k;
      op.transposeLhs = t & 1;
      op.transposeRhs = t & 2;
      std::vector<float> a(m * k), b(k * n);
      for (float &x : a)
        x = dist(rng);
      for (float &x : b)
        x = dist(rng);
      // A sits 4 bytes into its buffer: cuBLASLt must be told.
      DeviceBuffer da(device, a.size() * 4 + 4, "A"), db(device, b.size() * 4, "B"),
          dc(device, m * n * 4 + 4, "C");
      char *aAt = static_cast<char *>(da.data()) + 4;
      char *cAt = static_cast<char *>(dc.data()) + (t == 3 ? 4 : 0);
      device.upload(aAt, a.data(), a.size() * 4);
      device.upload(db.data(), b.data(), b.size() * 4);
      gemm.run(op, aAt, db.data(), cAt);
      std::vector<float> c(m * n);
      device.download(c.data(), cAt, c.size() * 4);
      std::vector<float> want = hostGemm(op, a, b);
      double worst = 0;
      for (size_t i = 0; i < c.size(); ++i)
        worst = std::max(worst, (double)std::fabs(c[i] - want[i]));
      EXPECT_LE(worst, tolerance * std::sqrt((double)k))
          << "m=" << m << " n=" << n << " k=" << k << " transposes " << op.transposeLhs
          << op.transposeRhs;
    }
}

TEST_F(CudaTest, GemmsMatchTheHostInBf16) {
  ASSERT_EQ(device_->gemm().computeName(), std::getenv("FBT_GEMM_COMPUTE")
                                               ? std::getenv("FBT_GEMM_COMPUTE")
                                               : "bf16");
  checkGemms(*device_, device_->gemm(), 2e-2);
}

TEST_F(CudaTest, GemmsMatchTheHostInFp32) {
  setenv("FBT_GEMM_COMPUTE", "fp32", 1);
  DeviceBuffer workspace(*device_, 32u << 20, "workspace");
  std::unique_ptr<cuda::CudaGemm> exact;
  try {
    exact = std::make_unique<cuda::CudaGemm>(device_->stream(), workspace.data(),
                                             workspace.size());
  } catch (...) {
    unsetenv("FBT_GEMM_COMPUTE");
    throw;
  }
  unsetenv("FBT_GEMM_COMPUTE");
  EXPECT_EQ(exact->computeName(), "fp32");
  checkGemms(*device_, *exact, 1e-5);
}

TEST(CudaGemmTest, RejectsAnUnknownComputeType) {
  // Checked before cuBLASLt is touched: this runs without a GPU too.
  setenv("FBT_GEMM_COMPUTE", "fp8", 1);
  try {
    cuda::CudaGemm gemm(nullptr, nullptr, 0);
    ADD_FAILURE() << "FBT_GEMM_COMPUTE=fp8 was accepted";
  } catch (const RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find("FBT_GEMM_COMPUTE is 'fp8'"), std::string::npos)
        << e.what();
  }
  unsetenv("FBT_GEMM_COMPUTE");
}

/// y [m, n] = x [m, k] @ splat(0.5) [k, n], through an arena at an odd
/// offset, plus i64 and i32 constants copied to outputs.
StepPlan gemmPlan(const std::string &kind) {
  const int64_t m = 5, n = 7, k = 29;
  StepPlan p;
  p.name = "test_" + kind;
  p.kind = *parseKind<StepKind>(kind);
  p.arenaBytes = 4 + m * n * 4;
  p.inputs.push_back({"x", DType::F32, {m, k}, m * k * 4});
  p.outputs.push_back({"y", DType::F32, {m, n}, m * n * 4});
  p.outputs.push_back({"c64", DType::I64, {3}, 24});
  p.outputs.push_back({"c32", DType::I32, {5}, 20});
  p.constants.push_back({DType::F32, k * n, 0.5});
  p.constants.push_back({DType::I64, 3, -(double)(int64_t(1) << 40)});
  p.constants.push_back({DType::I32, 5, -3});
  PlanOp op;
  op.m = m, op.n = n, op.k = k;
  op.args = {{BufferRef::Kind::Input, 0, 0, m * k * 4},
             {BufferRef::Kind::Const, 0, 0, k * n * 4},
             {BufferRef::Kind::Arena, 0, 4, m * n * 4}};
  p.ops.push_back(op);
  p.copies.push_back({0, {BufferRef::Kind::Arena, 0, 4, m * n * 4}});
  p.copies.push_back({1, {BufferRef::Kind::Const, 1, 0, 24}});
  p.copies.push_back({2, {BufferRef::Kind::Const, 2, 0, 20}});
  return p;
}

TEST_F(CudaTest, RunsAPlanPlainlyAsAGraphAndProfiled) {
  for (const char *kind : {"train", "decode"}) {
    StepPlan plan = gemmPlan(kind);
    std::unique_ptr<StepRunner> runner = device_->makeRunner(plan);
    DeviceBuffer x(*device_, 5 * 29 * 4, "x"), y(*device_, 5 * 7 * 4, "y"),
        y2(*device_, 5 * 7 * 4, "y2"), c64(*device_, 24, "c64"), c32(*device_, 20, "c32");
    // Small integers: exact in bf16, so every compute type gives the same.
    // Decode steps: round 0 runs plainly, 1 captures a graph, 2 replays it
    // on new data, 3 writes another buffer (a new capture), 4 is profiled.
    for (int round = 0; round < 5; ++round) {
      std::vector<float> xs(5 * 29);
      for (size_t i = 0; i < xs.size(); ++i)
        xs[i] = (float)((int)(i * 7 + round) % 5 - 2);
      device_->upload(x.data(), xs.data(), xs.size() * 4);
      void *out = round == 3 ? y2.data() : y.data();
      if (round == 4)
        runner->setProfiling(true);
      runner->run({x.data()}, {out, c64.data(), c32.data()});
      std::vector<float> ys(5 * 7);
      device_->download(ys.data(), out, ys.size() * 4);
      for (int i = 0; i < 5; ++i)
        for (int j = 0; j < 7; ++j) {
          float want = 0;
          for (int p = 0; p < 29; ++p)
            want += 0.5f * xs[i * 29 + p];
          ASSERT_EQ(ys[i * 7 + j], want) << kind << " round " << round;
        }
      int64_t big[3];
      int32_t small[5];
      device_->download(big, c64.data(), 24);
      device_->download(small, c32.data(), 20);
      for (int64_t v : big)
        ASSERT_EQ(v, -(int64_t(1) << 40));
      for (int32_t v : small)
        ASSERT_EQ(v, -3);
    }
    EXPECT_GT(runner->gemmSeconds(), 0.0) << kind;
    EXPECT_EQ(runner->profile().count("gemm"), 1u);
  }
}

TEST_F(CudaTest, AGpuOlderThanTheChipIsNamed) {
  std::unique_ptr<Bundle> future = loadBundle("sm_990", {{"kernels.ptx", kEmptyPtx}});
  try {
    cuda::CudaDevice d(*future);
    FAIL() << "an sm_990 bundle opened";
  } catch (const RuntimeError &e) {
    std::string want = "bundle targets sm_990 but the GPU ";
    std::string cap = "sm_" + std::to_string(device_->capability());
    EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("; recompile with fbtc --target=" + cap),
              std::string::npos)
        << e.what();
  }
}

TEST_F(CudaTest, ABadCubinFallsBackToThePtx) {
  std::string chip = "sm_" + std::to_string(device_->capability());
  std::unique_ptr<Bundle> b =
      loadBundle(chip, {{"kernels.ptx", kEmptyPtx}, {"kernels.cubin", "not an ELF file"}});
  cuda::CudaDevice d(*b);
  EXPECT_NE(d.describe().find("PTX, JIT-compiled"), std::string::npos) << d.describe();
}

} // namespace
} // namespace fbt
