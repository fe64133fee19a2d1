//===- CudaEmulatedTest.cpp - the emulated CUDA driver refuses what a GPU would -===//
//
// The emulated driver and cuBLASLt (test/emucuda) behave like a device, so
// that the host code tested on them meets a real GPU prepared: accesses
// outside an allocation, after its free or through a host pointer are
// errors; a capture refuses synchronous calls and is invalidated by them; a
// graph replays what was captured; cuBLASLt's heuristic offers several
// algorithms and a workspace smaller than an algorithm asks fails. Skips
// unless the driver loaded is the emulated one (test/emucuda/cuda-tests.test
// runs it there).
//
//===----------------------------------------------------------------------===//

#include "runtime/base/Error.h"
#include "runtime/format/Bundle.h"
#include "runtime/hal/cuda/CudaApi.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <vector>

namespace fbt {
namespace {
using cuda::blasLt;
using cuda::driver;

class EmulatedCudaTest : public ::testing::Test {
protected:
  void SetUp() override {
    try {
      const cuda::Driver &d = driver();
      char name[256] = {0};
      CUdevice dev = 0;
      ASSERT_EQ(d.cuDeviceGet(&dev, 0), CUDA_SUCCESS);
      d.cuDeviceGetName(name, sizeof name - 1, dev);
      if (!std::strstr(name, "(emulated)"))
        GTEST_SKIP() << "the driver is not the emulated one (" << name << ")";
      ASSERT_EQ(d.cuDevicePrimaryCtxRetain(&ctx_, dev), CUDA_SUCCESS);
      ASSERT_EQ(d.cuCtxSetCurrent(ctx_), CUDA_SUCCESS);
    } catch (const RuntimeError &e) {
      GTEST_SKIP() << "no CUDA driver: " << e.what();
    }
  }
  void TearDown() override {
    if (ctx_)
      driver().cuDevicePrimaryCtxRelease_v2(0);
  }
  CUcontext ctx_ = nullptr;
};

TEST_F(EmulatedCudaTest, AccessesOutsideLiveAllocationsAreRefused) {
  const cuda::Driver &d = driver();
  CUdeviceptr p = 0;
  ASSERT_EQ(d.cuMemAlloc_v2(&p, 1024), CUDA_SUCCESS);
  std::vector<char> host(2048, 7);
  EXPECT_EQ(d.cuMemcpyHtoD_v2(p, host.data(), 1024), CUDA_SUCCESS);
  EXPECT_EQ(d.cuMemcpyHtoD_v2(p + 512, host.data(), 1024), CUDA_ERROR_ILLEGAL_ADDRESS);
  EXPECT_EQ(d.cuMemcpyDtoH_v2(host.data(), p + 1024, 1), CUDA_ERROR_ILLEGAL_ADDRESS);
  // A host pointer is not a device pointer.
  EXPECT_EQ(d.cuMemcpyDtoH_v2(host.data(), reinterpret_cast<CUdeviceptr>(host.data()), 8),
            CUDA_ERROR_INVALID_VALUE);
  ASSERT_EQ(d.cuMemFree_v2(p), CUDA_SUCCESS);
  EXPECT_EQ(d.cuMemcpyHtoD_v2(p, host.data(), 8), CUDA_ERROR_ILLEGAL_ADDRESS); // freed
  EXPECT_EQ(d.cuMemFree_v2(p), CUDA_ERROR_INVALID_VALUE);                      // twice
  size_t free = 0, total = 0;
  ASSERT_EQ(d.cuMemGetInfo_v2(&free, &total), CUDA_SUCCESS);
  EXPECT_EQ(d.cuMemAlloc_v2(&p, total + 1), CUDA_ERROR_OUT_OF_MEMORY);
}

TEST_F(EmulatedCudaTest, ACaptureRecordsReplaysAndRefusesSynchronousCalls) {
  const cuda::Driver &d = driver();
  CUstream s = nullptr;
  ASSERT_EQ(d.cuStreamCreate(&s, CU_STREAM_DEFAULT), CUDA_SUCCESS);
  CUdeviceptr p = 0;
  ASSERT_EQ(d.cuMemAlloc_v2(&p, 16), CUDA_SUCCESS);
  uint32_t host[4] = {0, 0, 0, 0};
  ASSERT_EQ(d.cuMemcpyHtoD_v2(p, host, 16), CUDA_SUCCESS);

  // A synchronous copy during the capture is refused and breaks it.
  ASSERT_EQ(d.cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
  EXPECT_EQ(d.cuMemsetD32Async(p, 5, 4, s), CUDA_SUCCESS);
  EXPECT_EQ(d.cuMemcpyDtoH_v2(host, p, 16), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  EXPECT_EQ(d.cuStreamSynchronize(s), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  CUgraph graph = nullptr;
  EXPECT_EQ(d.cuStreamEndCapture(s, &graph), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
  EXPECT_EQ(graph, nullptr);

  // Captured work waits for the graph's launch, and runs at every launch.
  ASSERT_EQ(d.cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL), CUDA_SUCCESS);
  ASSERT_EQ(d.cuMemsetD32Async(p, 5, 4, s), CUDA_SUCCESS);
  ASSERT_EQ(d.cuStreamEndCapture(s, &graph), CUDA_SUCCESS);
  ASSERT_EQ(d.cuMemcpyDtoH_v2(host, p, 16), CUDA_SUCCESS);
  EXPECT_EQ(host[0], 0u);
  CUgraphExec exec = nullptr;
  ASSERT_EQ(d.cuGraphInstantiateWithFlags(&exec, graph, 0), CUDA_SUCCESS);
  ASSERT_EQ(d.cuGraphLaunch(exec, s), CUDA_SUCCESS);
  ASSERT_EQ(d.cuStreamSynchronize(s), CUDA_SUCCESS);
  ASSERT_EQ(d.cuMemcpyDtoH_v2(host, p, 16), CUDA_SUCCESS);
  EXPECT_EQ(host[3], 5u);
  host[0] = 0;
  ASSERT_EQ(d.cuMemcpyHtoD_v2(p, host, 4), CUDA_SUCCESS);
  ASSERT_EQ(d.cuGraphLaunch(exec, s), CUDA_SUCCESS);
  ASSERT_EQ(d.cuMemcpyDtoH_v2(host, p, 16), CUDA_SUCCESS);
  EXPECT_EQ(host[0], 5u);
  d.cuGraphExecDestroy(exec);
  d.cuGraphDestroy(graph);
  d.cuMemFree_v2(p);
  d.cuStreamDestroy_v2(s);
}

TEST_F(EmulatedCudaTest, CublasLtOffersAlgorithmsThatNeedWhatTheyAsk) {
  const cuda::BlasLt &lt = blasLt();
  cublasLtHandle_t h = nullptr;
  ASSERT_EQ(lt.cublasLtCreate(&h), CUBLAS_STATUS_SUCCESS);
  cublasLtMatmulDesc_t desc = nullptr;
  ASSERT_EQ(lt.cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
            CUBLAS_STATUS_SUCCESS);
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  ASSERT_EQ(lt.cublasLtMatrixLayoutCreate(&a, CUDA_R_32F, 2, 3, 2), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(lt.cublasLtMatrixLayoutCreate(&b, CUDA_R_32F, 3, 2, 3), CUBLAS_STATUS_SUCCESS);
  ASSERT_EQ(lt.cublasLtMatrixLayoutCreate(&c, CUDA_R_32F, 2, 2, 2), CUBLAS_STATUS_SUCCESS);
  auto heuristic = [&](uint64_t workspace, std::vector<cublasLtMatmulHeuristicResult_t> &out) {
    cublasLtMatmulPreference_t pref = nullptr;
    lt.cublasLtMatmulPreferenceCreate(&pref);
    lt.cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                            &workspace, sizeof workspace);
    out.resize(8);
    int n = 0;
    lt.cublasLtMatmulAlgoGetHeuristic(h, desc, a, b, c, c, pref, 8, out.data(), &n);
    lt.cublasLtMatmulPreferenceDestroy(pref);
    out.resize(n);
  };
  std::vector<cublasLtMatmulHeuristicResult_t> none, all;
  heuristic(0, none);
  heuristic(64 << 20, all);
  EXPECT_EQ(none.size(), 1u);
  EXPECT_GT(all.size(), 1u);

  const cuda::Driver &d = driver();
  CUdeviceptr pa, pb, pc, ws;
  ASSERT_EQ(d.cuMemAlloc_v2(&pa, 24), CUDA_SUCCESS);
  ASSERT_EQ(d.cuMemAlloc_v2(&pb, 24), CUDA_SUCCESS);
  ASSERT_EQ(d.cuMemAlloc_v2(&pc, 16), CUDA_SUCCESS);
  ASSERT_EQ(d.cuMemAlloc_v2(&ws, 256), CUDA_SUCCESS);
  float ha[6] = {1, 2, 3, 4, 5, 6}, hb[6] = {1, 0, 0, 0, 1, 0}, hc[4] = {};
  d.cuMemcpyHtoD_v2(pa, ha, 24);
  d.cuMemcpyHtoD_v2(pb, hb, 24);
  const float one = 1, zero = 0;
  auto run = [&](const cublasLtMatmulHeuristicResult_t &r, size_t workspace) {
    return lt.cublasLtMatmul(h, desc, &one, (void *)pa, a, (void *)pb, b, &zero, (void *)pc, c,
                             (void *)pc, c, &r.algo, (void *)ws, workspace, nullptr);
  };
  ASSERT_EQ(run(none[0], 0), CUBLAS_STATUS_SUCCESS);
  d.cuMemcpyDtoH_v2(hc, pc, 16);
  // Column-major: A is [[1,3,5],[2,4,6]], B picks columns 0 and 1.
  EXPECT_EQ(hc[0], 1);
  EXPECT_EQ(hc[1], 2);
  EXPECT_EQ(hc[2], 3);
  EXPECT_EQ(hc[3], 4);
  ASSERT_GT(all.back().workspaceSize, 256u);
  EXPECT_NE(run(all.back(), 256), CUBLAS_STATUS_SUCCESS); // too small a workspace
  for (CUdeviceptr p : {pa, pb, pc, ws})
    d.cuMemFree_v2(p);
  lt.cublasLtMatrixLayoutDestroy(a);
  lt.cublasLtMatrixLayoutDestroy(b);
  lt.cublasLtMatrixLayoutDestroy(c);
  lt.cublasLtMatmulDescDestroy(desc);
  lt.cublasLtDestroy(h);
}

TEST_F(EmulatedCudaTest, LaunchesBeyondTheDeviceLimitsFail) {
  const char *twin = std::getenv("FBT_EMU_CUDA_TWIN");
  if (!twin)
    GTEST_SKIP() << "needs FBT_EMU_CUDA_TWIN (test/emucuda/cuda-tests.test)";
  Bundle b = Bundle::load(twin);
  const KernelLaunch &l = b.launches(b.kernels().at(0)).at(0);
  std::string ptx = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry " +
                    l.entry + "(\n)\n{\n ret;\n}\n";
  const cuda::Driver &d = driver();
  CUmodule m = nullptr;
  ASSERT_EQ(d.cuModuleLoadDataEx(&m, ptx.c_str(), 0, nullptr, nullptr), CUDA_SUCCESS);
  CUfunction f = nullptr;
  EXPECT_EQ(d.cuModuleGetFunction(&f, m, "not_a_kernel"), CUDA_ERROR_NOT_FOUND);
  ASSERT_EQ(d.cuModuleGetFunction(&f, m, l.entry.c_str()), CUDA_SUCCESS);
  EXPECT_EQ(d.cuLaunchKernel(f, 1, 1, 1, 2048, 1, 1, 0, nullptr, nullptr, nullptr),
            CUDA_ERROR_INVALID_VALUE);
  EXPECT_EQ(d.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 64 << 10, nullptr, nullptr, nullptr),
            CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
  EXPECT_EQ(d.cuModuleLoadDataEx(&m, "not an image", 0, nullptr, nullptr),
            CUDA_ERROR_INVALID_IMAGE);
}

} // namespace
} // namespace fbt
