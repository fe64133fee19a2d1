//===- KernelLibrary.cpp - the compiled kernels, loaded ---------------------===//

#include "runtime/hal/cpu/KernelLibrary.h"

#include "runtime/base/Error.h"
#include "runtime/hal/cpu/CpuTeam.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace fbt {

KernelLibrary::KernelLibrary(const std::string &image,
                             const std::vector<std::string> &names,
                             const std::string &source) {
  // An anonymous in-memory file: nothing is left on disk, nothing to clean.
  int fd = fd_ = memfd_create("fbt-kernels", MFD_CLOEXEC);
  if (fd < 0)
    throw RuntimeError(systemErrorMessage(source + ": cannot create a file for the kernels"));
  size_t done = 0;
  while (done < image.size()) {
    ssize_t n = ::write(fd, image.data() + done, image.size() - done);
    if (n <= 0) {
      ::close(fd);
      fd_ = -1;
      throw RuntimeError(systemErrorMessage(source + ": cannot stage the kernels"));
    }
    done += n;
  }
  std::string fdPath = "/proc/self/fd/" + std::to_string(fd);
  handle_ = dlopen(fdPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    ::close(fd);
    fd_ = -1;
    std::string why = dlerror();
    if (why.find("__kmpc_") != std::string::npos)
      throw RuntimeError(source + ": its kernels call the OpenMP runtime, as an older fbtc "
                                  "compiled them; recompile the bundle with this fbtc");
    throw RuntimeError(source + ": cannot load the kernel library: " + why);
  }
  attachKernelThreads(handle_); // the parallel loops run on the team
  for (const std::string &name : names) {
    void *sym = dlsym(handle_, name.c_str());
    if (!sym) {
      dlclose(handle_);
      ::close(fd_);
      throw RuntimeError(source + ": kernel '" + name +
                         "' is missing from the kernel library");
    }
    kernels_[name] = reinterpret_cast<Kernel>(sym);
  }
}

KernelLibrary::~KernelLibrary() {
  if (handle_)
    dlclose(handle_);
  if (fd_ >= 0)
    ::close(fd_);
}

KernelLibrary::Kernel KernelLibrary::lookup(const std::string &name) const {
  auto it = kernels_.find(name);
  if (it == kernels_.end())
    throw RuntimeError("unknown kernel '" + name + "'");
  return it->second;
}

} // namespace fbt
