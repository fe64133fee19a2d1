//===- CpuDevice.cpp - the CPU backend: host memory, BLAS -----------------===//

#include "runtime/CpuDevice.h"

#include "runtime/CpuExecutor.h"
#include "runtime/CpuThreads.h"
#include "runtime/Error.h"
#include "runtime/KernelLibrary.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace fbt {

namespace {
class CpuDevice : public Device {
public:
  explicit CpuDevice(const Bundle &bundle)
      : bundle_(bundle), cpu_(bundle.target().chip),
        kernels_(bundle.kernelLibrary(), symbols(bundle), bundle.path()) {}

  std::string describe() const override {
    if (bundle_.target().emulated())
      return "CPU, emulating the GPU's kernels thread by thread (simt), BLAS GEMMs";
    return "CPU (" + (cpu_.empty() ? std::string("host") : cpu_) +
           "), generated kernels and BLAS GEMMs";
  }

  void *allocate(size_t bytes, const std::string &what) override {
    size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
    void *p = std::aligned_alloc(64, rounded);
    if (!p)
      throw RuntimeError("out of memory allocating " + what + " (" +
                         std::to_string(bytes) + " bytes)");
    std::memset(p, 0, rounded);
    return p;
  }
  void release(void *ptr) noexcept override { std::free(ptr); }
  void upload(void *device, const void *host, size_t bytes) override {
    std::memcpy(device, host, bytes);
  }
  void download(void *host, const void *device, size_t bytes) override {
    std::memcpy(host, device, bytes);
  }
  void copy(void *to, const void *from, size_t bytes) override {
    std::memcpy(to, from, bytes);
  }
  void zero(void *device, size_t bytes) override { std::memset(device, 0, bytes); }

  std::unique_ptr<StepRunner> makeRunner(const StepPlan &plan) override {
    return std::make_unique<CpuStepRunner>(
        plan, kernels_, bundle_.target().emulated() ? &bundle_ : nullptr,
        kernelChoice(), gemms_);
  }

  void selectGemms(const std::vector<TunedGemm> &gemms) override {
    gemms_.clear();
    for (const TunedGemm &g : gemms)
      gemms_[g.shape] = (int)g.algorithm;
  }

  Json tuneKey() const override {
    Json key = cpuDeviceKey(cpuThreads());
    if (bundle_.target().emulated())
      key["kind"] = "simt"; // emulated GPU kernels time nothing like a CPU's
    return key;
  }

private:
  /// The library's symbols: the kernels, or an emulated GPU's launches.
  static std::vector<std::string> symbols(const Bundle &bundle) {
    if (!bundle.target().emulated())
      return bundle.kernels();
    std::vector<std::string> entries;
    for (const std::string &k : bundle.kernels())
      for (const KernelLaunch &l : bundle.launches(k))
        entries.push_back(l.entry);
    return entries;
  }

  const Bundle &bundle_;
  std::string cpu_;
  KernelLibrary kernels_;
  std::map<std::string, int> gemms_; // shape -> GemmSplit (tune cache)
};
} // namespace

std::unique_ptr<Device> openCpuDevice(const Bundle &bundle) {
  return std::make_unique<CpuDevice>(bundle);
}

} // namespace fbt
