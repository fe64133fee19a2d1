//===- KernelLibrary.cpp - the compiled kernels, loaded ---------------------===//

#include "runtime/KernelLibrary.h"

#include "runtime/Error.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace fbt {

KernelLibrary::KernelLibrary(const std::string &image,
                             const std::vector<std::string> &names,
                             const std::string &source) {
  // An anonymous in-memory file: nothing is left on disk, nothing to clean.
  int fd = memfd_create("fbt-kernels", MFD_CLOEXEC);
  if (fd < 0)
    throw RuntimeError(systemErrorMessage(source + ": cannot create a file for the kernels"));
  size_t done = 0;
  while (done < image.size()) {
    ssize_t n = ::write(fd, image.data() + done, image.size() - done);
    if (n <= 0) {
      ::close(fd);
      throw RuntimeError(systemErrorMessage(source + ": cannot stage the kernels"));
    }
    done += n;
  }
  std::string fdPath = "/proc/self/fd/" + std::to_string(fd);
  handle_ = dlopen(fdPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  ::close(fd);
  if (!handle_)
    throw RuntimeError(source + ": cannot load the kernel library: " + dlerror());
  for (const std::string &name : names) {
    void *sym = dlsym(handle_, name.c_str());
    if (!sym)
      throw RuntimeError(source + ": kernel '" + name +
                         "' is missing from the kernel library");
    kernels_[name] = reinterpret_cast<Kernel>(sym);
  }
}

KernelLibrary::~KernelLibrary() {
  if (handle_)
    dlclose(handle_);
}

KernelLibrary::Kernel KernelLibrary::lookup(const std::string &name) const {
  auto it = kernels_.find(name);
  if (it == kernels_.end())
    throw RuntimeError("unknown kernel '" + name + "'");
  return it->second;
}

void KernelLibrary::call(Kernel k, void *const *a, size_t n) {
  using P = void *;
  switch (n) {
#define FBT_ARITY(N, ...)                                                      \
  case N:                                                                      \
    reinterpret_cast<void (*)(__VA_ARGS__)>(k)
    FBT_ARITY(1, P)(a[0]); return;
    FBT_ARITY(2, P, P)(a[0], a[1]); return;
    FBT_ARITY(3, P, P, P)(a[0], a[1], a[2]); return;
    FBT_ARITY(4, P, P, P, P)(a[0], a[1], a[2], a[3]); return;
    FBT_ARITY(5, P, P, P, P, P)(a[0], a[1], a[2], a[3], a[4]); return;
    FBT_ARITY(6, P, P, P, P, P, P)(a[0], a[1], a[2], a[3], a[4], a[5]); return;
    FBT_ARITY(7, P, P, P, P, P, P, P)(a[0], a[1], a[2], a[3], a[4], a[5], a[6]); return;
    FBT_ARITY(8, P, P, P, P, P, P, P, P)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]); return;
    FBT_ARITY(9, P, P, P, P, P, P, P, P, P)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8]); return;
    FBT_ARITY(10, P, P, P, P, P, P, P, P, P, P)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9]); return;
    FBT_ARITY(11, P, P, P, P, P, P, P, P, P, P, P)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10]); return;
    FBT_ARITY(12, P, P, P, P, P, P, P, P, P, P, P, P)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11]); return;
#undef FBT_ARITY
  default:
    throw RuntimeError("a kernel with " + std::to_string(n) +
                       " buffers is beyond this runtime's calling table");
  }
}

} // namespace fbt
