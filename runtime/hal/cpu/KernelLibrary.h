//===- KernelLibrary.h - the compiled kernels, loaded -------------*- C++ -*-===//
//
// A bundle's kernels are a shared library produced by fbtc's CPU target. It
// is loaded from memory (an anonymous file) and each kernel is looked up
// once. Every kernel is `void k(void *buf0, void *buf1, ...)`: one pointer
// per buffer, operands then results.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_HAL_CPU_KERNELLIBRARY_H
#define FBT_RUNTIME_HAL_CPU_KERNELLIBRARY_H

#include "runtime/hal/KernelCall.h"

#include <map>
#include <string>
#include <vector>

namespace fbt {

class KernelLibrary {
public:
  using Kernel = KernelFn;

  /// Loads `image` (the .so bytes); every name in `names` must resolve.
  KernelLibrary(const std::string &image, const std::vector<std::string> &names,
                const std::string &source);
  ~KernelLibrary();
  KernelLibrary(const KernelLibrary &) = delete;
  KernelLibrary &operator=(const KernelLibrary &) = delete;

  Kernel lookup(const std::string &name) const;

private:
  void *handle_ = nullptr;
  /// The in-memory file the library was loaded from, open while it is
  /// loaded: the loader knows a library by its path, /proc/self/fd/N, so a
  /// closed N reused by a second bundle's kernels would be taken for the
  /// first bundle's, already loaded.
  int fd_ = -1;
  std::map<std::string, Kernel> kernels_;
};

} // namespace fbt

#endif // FBT_RUNTIME_HAL_CPU_KERNELLIBRARY_H
