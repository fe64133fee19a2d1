//===- Device.h - where a bundle's steps run ----------------------*- C++ -*-===//
//
// A Device is a backend: its memory and a StepRunner factory. The bundle's
// target picks it (openDevice): "cpu" bundles run on the host (generated
// kernels from a shared library, GEMMs on BLAS), "nvptx" bundles on an
// NVIDIA GPU (generated kernels from PTX or a cubin, GEMMs on cuBLASLt).
// Session and Decoder keep the model's state (parameters, moments, KV
// caches) in device memory and move only batches in and results out, so the
// same code drives both.
//
// Pointers into device memory are void * on every backend; only the device
// that made them may dereference them. On the CPU they are host pointers.
//
// Backends live in their own folders (hal/cpu, hal/cuda) and register
// themselves (registerBackend, from a static initializer): this file knows
// none of them, and a build has the backends it links.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_HAL_DEVICE_H
#define FBT_RUNTIME_HAL_DEVICE_H

#include "runtime/base/Json.h"
#include "runtime/format/Bundle.h"
#include "runtime/hal/StepRunner.h"

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace fbt {

/// Which build runs each kernel's calls: kernel -> the variant symbol
/// (kernels not listed run themselves).
using KernelChoice = std::map<std::string, std::string>;
/// Which algorithm runs each GEMM shape ("m,n,k,ta,tb,lhs,rhs,result" ->
/// on a GPU an index into cuBLASLt's heuristic list, 0 being its first
/// choice; on the CPU a GemmSplit). Shapes not listed run the default.
using GemmChoice = std::map<std::string, int>;

class Device {
public:
  virtual ~Device() = default;

  /// "cpu (x86-64-v3)", "NVIDIA H200 (sm_90, 140 GiB, driver 13.0), cubin".
  virtual std::string describe() const = 0;
  /// Whether device pointers are host pointers (the CPU's).
  virtual bool hostMemory() const { return false; }

  /// `bytes` of zeroed device memory (at least 64-byte aligned); `what`
  /// names the buffer in the out-of-memory error.
  virtual void *allocate(size_t bytes, const std::string &what) = 0;
  virtual void release(void *ptr) noexcept = 0;

  /// Host to device: the host bytes may be reused as soon as it returns.
  virtual void upload(void *device, const void *host, size_t bytes) = 0;
  /// Device to host: waits for the work queued before it.
  virtual void download(void *host, const void *device, size_t bytes) = 0;
  /// Device to device, in order with the steps.
  virtual void copy(void *to, const void *from, size_t bytes) = 0;
  virtual void zero(void *device, size_t bytes) = 0;

  /// A runner for `plan`, which must outlive it.
  virtual std::unique_ptr<StepRunner> makeRunner(const StepPlan &plan) = 0;

  /// What identifies this device to the tune cache: kind, name and what
  /// makes timings differ (CPU: ISA, threads; GPU: SM, driver, cuBLASLt).
  virtual Json tuneKey() const = 0;
  /// Which variant runs each kernel, and which algorithm each GEMM shape
  /// (cuBLASLt's candidate on a GPU, the split across threads on the CPU),
  /// in the runners made from now on.
  void selectKernels(KernelChoice choice) { choice_ = std::move(choice); }
  virtual void selectGemms(const GemmChoice &gemms) { (void)gemms; }
  const KernelChoice &kernelChoice() const { return choice_; }
  /// The symbol that runs `kernel`'s calls.
  const std::string &chosen(const std::string &kernel) const {
    auto it = choice_.find(kernel);
    return it == choice_.end() ? kernel : it->second;
  }

private:
  KernelChoice choice_;
};

/// A backend this build has: which bundles it runs and how it opens a
/// device for one.
struct Backend {
  std::string name;    ///< "cpu", "cuda"
  std::string summary; ///< what runs a bundle, for `fbt inspect`
  bool (*runs)(const BundleTarget &target) = nullptr;
  std::unique_ptr<Device> (*open)(const Bundle &bundle) = nullptr;
  /// GPUs: the devices this machine has, as probeGpus() says; null on a
  /// backend that is always there.
  bool (*probe)(std::vector<std::string> *lines) = nullptr;
};
/// Adds `backend` to those openDevice() asks; returns true, so that a
/// backend registers itself with `static const bool r = registerBackend(..)`.
bool registerBackend(Backend backend);

/// The device that runs `bundle`: RuntimeError saying why when this machine
/// or this build of fbt cannot (no CUDA driver, no GPU, a GPU older than the
/// bundle's chip, built without BLAS, ...).
std::unique_ptr<Device> openDevice(const Bundle &bundle);

/// What runs a bundle of `target`, for `fbt inspect`: "CPU: generated
/// kernels + BLAS" and whether this fbt can run it here.
std::string backendSummary(const BundleTarget &target);

/// The GPUs this fbt can run bundles on, one line each ("NVIDIA H200
/// (sm_90, 139.8 GiB), driver 13.0"); false, with one line saying why, when
/// there is none (no driver, no GPU, built without CUDA).
bool probeGpus(std::vector<std::string> *lines);

/// Owned device memory, released on destruction. Move-only.
class DeviceBuffer {
public:
  DeviceBuffer() = default;
  DeviceBuffer(Device &device, size_t bytes, const std::string &what)
      : device_(&device), ptr_(device.allocate(bytes, what)), size_(bytes) {}
  ~DeviceBuffer() { reset(); }
  DeviceBuffer(DeviceBuffer &&o) noexcept { *this = std::move(o); }
  DeviceBuffer &operator=(DeviceBuffer &&o) noexcept {
    if (this != &o) {
      reset();
      device_ = o.device_;
      ptr_ = o.ptr_;
      size_ = o.size_;
      o.device_ = nullptr;
      o.ptr_ = nullptr;
      o.size_ = 0;
    }
    return *this;
  }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  void *data() const { return ptr_; }
  size_t size() const { return size_; }

private:
  void reset() {
    if (ptr_)
      device_->release(ptr_);
    ptr_ = nullptr;
  }
  Device *device_ = nullptr;
  void *ptr_ = nullptr;
  size_t size_ = 0;
};

} // namespace fbt

#endif // FBT_RUNTIME_HAL_DEVICE_H
