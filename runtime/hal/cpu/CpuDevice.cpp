//===- CpuDevice.cpp - the CPU backend: host memory, BLAS -----------------===//

#include "runtime/hal/cpu/CpuDevice.h"

#include "runtime/base/AlignedBuffer.h"
#include "runtime/base/Error.h"
#include "runtime/hal/cpu/CpuExecutor.h"
#include "runtime/hal/cpu/CpuFeatures.h"
#include "runtime/hal/cpu/CpuThreads.h"
#include "runtime/hal/cpu/KernelLibrary.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace fbt {

namespace {
/// "model name" and the best vector ISA from /proc/cpuinfo (x86), or the
/// CPU part and features (Arm).
std::pair<std::string, std::string> cpuIdentity() {
  std::ifstream in("/proc/cpuinfo");
  std::string line, name, flags;
  while (std::getline(in, line)) {
    auto value = [&] {
      size_t colon = line.find(':');
      std::string v = colon == std::string::npos ? "" : line.substr(colon + 1);
      size_t start = v.find_first_not_of(" \t");
      return start == std::string::npos ? std::string() : v.substr(start);
    };
    if (name.empty() && (line.rfind("model name", 0) == 0 || line.rfind("CPU part", 0) == 0))
      name = value();
    if (flags.empty() && (line.rfind("flags", 0) == 0 || line.rfind("Features", 0) == 0))
      flags = " " + value() + " ";
  }
  std::string isa = "generic";
  for (const char *f : {"avx512f", "avx2", "sse4_2", "sve", "asimd"})
    if (flags.find(std::string(" ") + f + " ") != std::string::npos) {
      isa = f;
      break;
    }
  return {name.empty() ? "unknown CPU" : name, isa};
}


Json cpuDeviceKey(int threads) {
  auto [name, isa] = cpuIdentity();
  return Json::object({{"kind", "cpu"}, {"name", name}, {"isa", isa}, {"threads", threads}});
}

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
  bool hostMemory() const override { return true; }

  void *allocate(size_t bytes, const std::string &what) override {
    return allocateAligned(bytes, what);
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

  void selectGemms(const GemmChoice &gemms) override { gemms_ = gemms; }

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
  GemmChoice gemms_; // shape -> GemmSplit
};
} // namespace

std::unique_ptr<Device> openCpuDevice(const Bundle &bundle) {
  checkCpuFeatures(bundle.target());
  return std::make_unique<CpuDevice>(bundle);
}

namespace {
// CPU bundles, and the emulated GPU's (simt), whose launches run here too.
const bool registered = registerBackend(
    {"cpu", "cpu: generated kernels (shared library), GEMMs on BLAS",
     [](const BundleTarget &target) { return !target.gpu(); }, openCpuDevice,
     nullptr});
} // namespace

} // namespace fbt
