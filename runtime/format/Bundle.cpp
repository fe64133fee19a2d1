//===- Bundle.cpp - loading and validating a compiled bundle --------------===//

#include "runtime/format/Bundle.h"

#include "runtime/base/Error.h"
#include "runtime/base/FileIO.h"

namespace fbt {

const StepPlan &Bundle::step(const std::string &name) const {
  auto it = contents_.steps.find(name);
  if (it == contents_.steps.end())
    throw RuntimeError(path_ + ": the bundle has no step '" + name + "'");
  return it->second;
}

const std::string *Bundle::blob(const std::string &name) const {
  auto it = blobs_.find(name);
  return it == blobs_.end() ? nullptr : &it->second;
}

int64_t Bundle::parameterCount() const {
  int64_t n = 0;
  for (const ParamSpec &p : contents_.params) {
    int64_t size = 1;
    for (int64_t d : p.shape)
      size *= d;
    n += size;
  }
  return n;
}

const std::string &Bundle::kernelLibrary() const {
  const std::string *so = blob("kernels.so");
  if (!so)
    throw RuntimeError(path_ + ": a '" + kindName(target().kind) +
                       "' bundle has no CPU kernel library");
  return *so;
}

const std::vector<KernelLaunch> &Bundle::launches(const std::string &kernel) const {
  auto it = contents_.launches.find(kernel);
  if (it == contents_.launches.end())
    throw RuntimeError(path_ + ": kernel '" + kernel + "' has no GPU launches");
  return it->second;
}

/// The architecture this runtime was built for, named as LLVM's triples
/// name it.
static std::string hostArch() {
#if defined(__x86_64__) || defined(_M_X64)
  return "x86_64";
#elif defined(__aarch64__) || defined(_M_ARM64)
  return "aarch64";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return "powerpc64le";
#elif defined(__riscv) && __riscv_xlen == 64
  return "riscv64";
#else
  return "unknown";
#endif
}

Bundle Bundle::load(const std::string &path) {
  DecodedBundle decoded = decodeBundle(readFile(path), path);
  Bundle b;
  b.path_ = path;
  b.manifestJson_ = std::move(decoded.manifest);
  b.blobs_ = std::move(decoded.blobs);
  try {
    // The target first: a bundle for another target or machine says so,
    // whatever else it holds.
    BundleTarget target;
    try {
      target = bundleTargetFromJson(jsonAt(b.manifestJson_, "target"));
    } catch (const RuntimeError &e) {
      throw RuntimeError(path + ": " + e.what());
    }
    // CPU and emulated kernels are a shared object for the architecture
    // they were compiled on.
    if (!target.arch.empty() && target.arch != hostArch())
      throw RuntimeError(path + ": its kernels were compiled for " + target.arch +
                         ", but this machine is " + hostArch() +
                         "; recompile it here with fbtc");
    b.contents_ = bundleManifestFromJson(b.manifestJson_);
    const char *required = target.gpu() ? "kernels.ptx" : "kernels.so";
    if (!b.blob(required))
      throw RuntimeError(std::string("a '") + kindName(target.kind) + "' bundle needs " +
                         (target.gpu() ? "the PTX" : "the kernel library") + " (" +
                         required + "), and this one has none");
  } catch (const RuntimeError &e) {
    std::string what = e.what();
    if (what.rfind(path, 0) == 0)
      throw;
    throw RuntimeError(path + ": not a valid fbt bundle: " + what);
  } catch (const std::exception &e) {
    throw RuntimeError(path + ": not a valid fbt bundle: " + e.what());
  }
  return b;
}

} // namespace fbt
