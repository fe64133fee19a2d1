//===- NcclApi.cpp - NCCL, loaded at run time -----------------------------===//

#include "runtime/hal/nccl/NcclApi.h"

#include "runtime/base/Error.h"
#include "runtime/base/LoadOnce.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace fbt::nccl {

namespace {

std::string lastDlError() {
  const char *e = dlerror();
  return e ? e : "unknown error";
}

/// "ncclRemoteError (remote process exited or there was a network error)":
/// the name, and the words of the NCCL that returned it.
std::string describe(const Api &a, ncclResult_t result) {
  static const char *const names[] = {
      "ncclSuccess",       "ncclUnhandledCudaError", "ncclSystemError",
      "ncclInternalError", "ncclInvalidArgument",    "ncclInvalidUsage",
      "ncclRemoteError",   "ncclInProgress"};
  std::string s = unsigned(result) < sizeof names / sizeof *names
                      ? names[result]
                      : "NCCL error " + std::to_string(int(result));
  const char *text = a.ncclGetErrorString ? a.ncclGetErrorString(result) : nullptr;
  return text && *text ? s + " (" + text + ")" : s;
}

Api load() {
  // NCCL's soname; FBT_NCCL, where set, is the one file tried.
  const char *chosen = std::getenv("FBT_NCCL");
  bool named = chosen && *chosen;
  std::string file = named ? chosen : "libnccl.so.2";
  std::string where = named ? "FBT_NCCL=" + file : file;
  void *lib = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    throw RuntimeError("no NCCL was found (" + where + "): " + lastDlError() +
                       (named ? "; point FBT_NCCL at libnccl.so.2, or unset it to load the "
                                "one on the loader's path"
                              : "; install NCCL (it ships with the CUDA toolkit) or set "
                                "FBT_NCCL to libnccl.so.2's path"));
  Api a;
  a.library = file;
#define FBT_RESOLVE(name)                                                      \
  if (!(a.name = reinterpret_cast<decltype(a.name)>(dlsym(lib, #name))))       \
    throw RuntimeError("NCCL (" + where + ") lacks " #name                     \
                       ": fbt needs NCCL 2.11 or newer");
  FBT_NCCL_FUNCTIONS(FBT_RESOLVE)
#undef FBT_RESOLVE
  int code = 0;
  ncclResult_t r = a.ncclGetVersion(&code);
  if (r != ncclSuccess)
    throw RuntimeError("NCCL (" + where + "): ncclGetVersion: " + describe(a, r));
  a.version = versionText(code);
  return a;
}

} // namespace

const Api &api() { return loadOnce(load); }

std::string versionText(int code) {
  int major = code / 10000, minor = code / 100 % 100;
  if (code < 10000) // NCCL_VERSION before 2.9: X * 1000 + Y * 100 + Z
    major = code / 1000, minor = code / 100 % 10;
  return std::to_string(major) + "." + std::to_string(minor) + "." +
         std::to_string(code % 100);
}

std::string errorText(ncclResult_t result) { return describe(api(), result); }

} // namespace fbt::nccl
