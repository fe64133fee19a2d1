//===- HostDevice.h - a Device on host memory, for tests ----------*- C++ -*-===//
//
// Host memory, as the CPU device's, without a bundle: what the channel tests
// reduce on. Counts its device-to-device copies.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_TEST_RUNTIME_HAL_HOSTDEVICE_H
#define FBT_TEST_RUNTIME_HAL_HOSTDEVICE_H

#include "runtime/hal/Device.h"

#include <cstdlib>
#include <cstring>

namespace fbt {

class HostDevice : public Device {
public:
  std::string describe() const override { return "host (test)"; }
  bool hostMemory() const override { return true; }
  void *allocate(size_t bytes, const std::string &) override {
    void *p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    std::memset(p, 0, bytes);
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
    ++copies;
    std::memcpy(to, from, bytes);
  }
  void zero(void *device, size_t bytes) override { std::memset(device, 0, bytes); }
  std::unique_ptr<StepRunner> makeRunner(const StepPlan &) override { return nullptr; }
  Json tuneKey() const override { return Json::object(); }

  int copies = 0;
};

} // namespace fbt

#endif // FBT_TEST_RUNTIME_HAL_HOSTDEVICE_H
