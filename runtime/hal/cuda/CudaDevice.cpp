//===- CudaDevice.cpp - the CUDA backend: an NVIDIA GPU -------------------===//

#include "runtime/hal/cuda/CudaDevice.h"

#include "runtime/base/Error.h"
#include "runtime/hal/Channel.h"
#include "runtime/hal/cuda/CudaExecutor.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace fbt::cuda {

namespace {
// cuBLASLt's scratch space: enough for its fastest Hopper kernels.
constexpr size_t kWorkspaceBytes = 32u << 20;

/// "140.4 GiB", or "32.0 MiB" below a GiB (an out-of-memory message about
/// a small buffer should not read "0.0 GiB").
std::string gib(size_t bytes) {
  char s[32];
  if (bytes >= (size_t(1) << 30))
    std::snprintf(s, sizeof(s), "%.1f GiB", bytes / double(1u << 30));
  else
    std::snprintf(s, sizeof(s), "%.1f MiB", bytes / double(1u << 20));
  return s;
}

/// The GPU of this process among the `count` visible: its local rank's
/// where a launcher started it (one GPU per rank), else GPU 0.
int gpuOrdinal(int count) {
  LaunchInfo launch = launchInfo();
  if (launch.localRank < count)
    return launch.localRank;
  // A launcher that binds each rank to a GPU of its own shows it as the
  // only one.
  const char *visible = std::getenv("CUDA_VISIBLE_DEVICES");
  if (count == 1 && visible && *visible)
    return 0;
  throw RuntimeError("rank " + std::to_string(launch.rank) + " is local rank " +
                     std::to_string(launch.localRank) + " of its machine, but the CUDA " +
                     "driver sees " + std::to_string(count) + " GPU" + (count == 1 ? "" : "s") +
                     ": a data-parallel run takes one GPU per rank, so start at most " +
                     std::to_string(count) + " rank" + (count == 1 ? "" : "s") +
                     " per machine");
}

std::string versionText(int v) {
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

struct GpuInfo {
  std::string name;
  int capability = 0;
  size_t totalBytes = 0;
};

GpuInfo gpuInfo(CUdevice dev) {
  const Driver &d = driver();
  GpuInfo g;
  char name[256] = {0};
  check(d.cuDeviceGetName(name, sizeof(name) - 1, dev), "cuDeviceGetName");
  g.name = name;
  int major = 0, minor = 0;
  check(d.cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev),
        "cuDeviceGetAttribute");
  check(d.cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev),
        "cuDeviceGetAttribute");
  g.capability = major * 10 + minor;
  check(d.cuDeviceTotalMem_v2(&g.totalBytes, dev), "cuDeviceTotalMem_v2");
  return g;
}
} // namespace

CudaDevice::CudaDevice(const Bundle &bundle) {
  const Driver &d = driver();
  int count = 0;
  check(d.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (count == 0)
    throw RuntimeError("the CUDA driver sees no GPU (is CUDA_VISIBLE_DEVICES empty?)");
  check(d.cuDeviceGet(&device_, gpuOrdinal(count)), "cuDeviceGet");
  GpuInfo info = gpuInfo(device_);
  name_ = info.name;
  capability_ = info.capability;
  totalBytes_ = info.totalBytes;
  check(d.cuDriverGetVersion(&driverVersion_), "cuDriverGetVersion");

  // The primary context is the one cuBLASLt's own runtime uses too.
  check(d.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
  try {
    check(d.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
    check(d.cuStreamCreate(&stream_, CU_STREAM_DEFAULT), "cuStreamCreate");
    kernels_ = std::make_unique<CudaKernels>(bundle, capability_, name_);
    blasLt(); // named as missing before any memory is taken
    workspace_ = allocate(kWorkspaceBytes, "the cuBLASLt workspace");
    gemm_ = std::make_unique<CudaGemm>(stream_, workspace_, kWorkspaceBytes);
  } catch (...) {
    close();
    throw;
  }
}

CudaDevice::~CudaDevice() { close(); }

void CudaDevice::close() noexcept {
  const Driver &d = driver();
  if (stream_)
    d.cuStreamSynchronize(stream_);
  gemm_.reset();
  kernels_.reset();
  if (workspace_)
    release(workspace_);
  workspace_ = nullptr;
  if (stream_)
    d.cuStreamDestroy_v2(stream_);
  stream_ = nullptr;
  if (context_)
    d.cuDevicePrimaryCtxRelease_v2(device_);
  context_ = nullptr;
}

std::string CudaDevice::describe() const {
  return name_ + " (sm_" + std::to_string(capability_) + ", " + gib(totalBytes_) +
         ", driver " + versionText(driverVersion_) + "), kernels from " +
         kernels_->image() + ", GEMMs on cuBLASLt (" + gemm_->computeName() + ")";
}

void *CudaDevice::allocate(size_t bytes, const std::string &what) {
  const Driver &d = driver();
  // cuMemAlloc refuses 0 bytes; a plan's empty buffer still needs an address.
  size_t n = std::max<size_t>(bytes, 256);
  CUdeviceptr p = 0;
  CUresult r = d.cuMemAlloc_v2(&p, n);
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    size_t free = 0, total = 0;
    d.cuMemGetInfo_v2(&free, &total);
    throw RuntimeError("out of GPU memory for " + what + ": " + std::to_string(bytes) +
                       " bytes (" + gib(bytes) + ") requested, " + gib(free) +
                       " free of " + gib(total) + " on " + name_);
  }
  check(r, "cuMemAlloc_v2");
  check(d.cuMemsetD8Async(p, 0, n, stream_), "cuMemsetD8Async");
  return reinterpret_cast<void *>(p);
}

void CudaDevice::release(void *ptr) noexcept {
  if (ptr)
    driver().cuMemFree_v2(reinterpret_cast<CUdeviceptr>(ptr));
}

// The legacy default stream's copies: the host-to-device one returns once
// the (pageable) host bytes are staged, which the asynchronous variant does
// not promise; both wait for the work on stream_ (a blocking stream) and
// the work queued after them waits for them.
void CudaDevice::upload(void *device, const void *host, size_t bytes) {
  if (bytes)
    check(driver().cuMemcpyHtoD_v2(reinterpret_cast<CUdeviceptr>(device), host, bytes),
          "cuMemcpyHtoD_v2");
}

void CudaDevice::download(void *host, const void *device, size_t bytes) {
  if (bytes)
    check(driver().cuMemcpyDtoH_v2(host, reinterpret_cast<CUdeviceptr>(device), bytes),
          "cuMemcpyDtoH_v2");
}

void CudaDevice::copy(void *to, const void *from, size_t bytes) {
  if (bytes)
    check(driver().cuMemcpyDtoDAsync_v2(reinterpret_cast<CUdeviceptr>(to),
                                        reinterpret_cast<CUdeviceptr>(from), bytes,
                                        stream_),
          "cuMemcpyDtoDAsync_v2");
}

void CudaDevice::zero(void *device, size_t bytes) {
  if (bytes)
    check(driver().cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(device), 0, bytes,
                                   stream_),
          "cuMemsetD8Async");
}

std::unique_ptr<StepRunner> CudaDevice::makeRunner(const StepPlan &plan) {
  return std::make_unique<CudaStepRunner>(plan, CudaQueue{*this, stream_, *kernels_, *gemm_});
}

Json CudaDevice::tuneKey() const {
  return Json::object({{"kind", "cuda"},
                       {"name", name_},
                       {"sm", capability_},
                       {"driver", driverVersion_},
                       {"cublaslt", (int64_t)blasLt().cublasLtGetVersion()}});
}

void CudaDevice::selectGemms(const GemmChoice &gemms) { gemm_->select(gemms); }

std::unique_ptr<Device> openCudaDevice(const Bundle &bundle) {
  try {
    driver();
  } catch (const RuntimeError &e) {
    throw RuntimeError(bundle.path() + ": this bundle targets NVIDIA " +
                       bundle.target().chip + " but " + e.what());
  }
  try {
    return std::make_unique<CudaDevice>(bundle);
  } catch (const RuntimeError &e) {
    std::string what = e.what();
    if (what.rfind(bundle.path(), 0) == 0)
      throw; // already names the bundle (its kernels, its chip)
    throw RuntimeError(bundle.path() + ": " + what);
  }
}

bool probeCuda(std::vector<std::string> *lines) {
  try {
    const Driver &d = driver();
    int count = 0, version = 0;
    check(d.cuDeviceGetCount(&count), "cuDeviceGetCount");
    check(d.cuDriverGetVersion(&version), "cuDriverGetVersion");
    if (count == 0) {
      lines->push_back("the CUDA driver sees no GPU");
      return false;
    }
    for (int i = 0; i < count; ++i) {
      CUdevice dev = 0;
      check(d.cuDeviceGet(&dev, i), "cuDeviceGet");
      GpuInfo g = gpuInfo(dev);
      lines->push_back(g.name + " (sm_" + std::to_string(g.capability) + ", " +
                       gib(g.totalBytes) + "), driver " + versionText(version));
    }
    return true;
  } catch (const RuntimeError &e) {
    lines->push_back(e.what());
    return false;
  }
}

namespace {
const bool registered = registerBackend(
    {"cuda", "cuda: generated kernels (PTX/cubin), GEMMs on cuBLASLt",
     [](const BundleTarget &target) { return target.gpu(); }, openCudaDevice,
     probeCuda});
} // namespace

} // namespace fbt::cuda
