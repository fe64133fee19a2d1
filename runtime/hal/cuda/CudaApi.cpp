//===- CudaApi.cpp - the CUDA driver and cuBLASLt, loaded at run time -----===//

#include "runtime/hal/cuda/CudaApi.h"

#include "runtime/base/Error.h"
#include "runtime/base/LoadOnce.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <vector>

namespace fbt::cuda {

namespace {
void *symbol(void *library, const char *name, const std::string &file) {
  void *p = dlsym(library, name);
  if (!p)
    throw RuntimeError(file + " lacks " + name + " (is it too old?)");
  return p;
}

std::string lastDlError() {
  const char *e = dlerror();
  return e ? e : "unknown error";
}

Driver loadDriver() {
  // The driver's soname: the unversioned libcuda.so is a development link.
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    throw RuntimeError("no CUDA driver was found (libcuda.so.1): " + lastDlError());
  Driver d;
  const std::string file = "the CUDA driver (libcuda.so.1)";
#define FBT_RESOLVE(name)                                                      \
  d.name = reinterpret_cast<decltype(d.name)>(symbol(lib, #name, file));
  FBT_CUDA_DRIVER_FUNCTIONS(FBT_RESOLVE)
#undef FBT_RESOLVE
  d.cuEventElapsedTime = reinterpret_cast<decltype(d.cuEventElapsedTime)>(
      symbol(lib, "cuEventElapsedTime", file));
  // Resolved before cuInit so that its failure can be named.
  CUresult r = d.cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char *name = nullptr, *text = nullptr;
    d.cuGetErrorName(r, &name);
    d.cuGetErrorString(r, &text);
    throw RuntimeError(std::string("the CUDA driver did not start (cuInit: ") +
                       (name ? name : "?") + ": " + (text ? text : "?") + ")");
  }
  return d;
}

BlasLt loadBlasLt() {
  // cuBLASLt keeps its API across 12 and 13; take the newest one installed.
  std::vector<std::string> names;
  if (const char *path = std::getenv("FBT_CUBLASLT"))
    names.push_back(path);
  for (const char *n : {"libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so"})
    names.push_back(n);
#ifdef FBT_CUDA_LIBRARY_DIR
  // The toolkit fbt was built against, for machines where it is not on the
  // loader's path.
  names.push_back(std::string(FBT_CUDA_LIBRARY_DIR) + "/libcublasLt.so");
#endif
  std::string tried;
  for (const std::string &name : names) {
    void *lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      tried += (tried.empty() ? "" : "; ") + lastDlError();
      continue;
    }
    BlasLt b;
    b.library = name;
#define FBT_RESOLVE(fn)                                                        \
  b.fn = reinterpret_cast<decltype(b.fn)>(symbol(lib, #fn, name));
    FBT_CUBLASLT_FUNCTIONS(FBT_RESOLVE)
#undef FBT_RESOLVE
    return b;
  }
  throw RuntimeError("cuBLASLt, which runs a GPU bundle's GEMMs, was not found "
                     "(install the CUDA toolkit's cuBLAS, or set FBT_CUBLASLT to "
                     "libcublasLt.so's path): " + tried);
}

} // namespace

const Driver &driver() { return loadOnce(loadDriver); }
const BlasLt &blasLt() { return loadOnce(loadBlasLt); }

std::string errorText(CUresult result) {
  const char *name = nullptr, *text = nullptr;
  const Driver &d = driver();
  d.cuGetErrorName(result, &name);
  d.cuGetErrorString(result, &text);
  std::string s = name ? name : "CUDA error " + std::to_string((int)result);
  if (text)
    s += std::string(" (") + text + ")";
  return s;
}

void check(CUresult result, const char *call) {
  if (result == CUDA_SUCCESS)
    return;
  std::string message = std::string(call) + ": " + errorText(result);
  switch (result) {
  // A kernel that faults is reported by whatever call comes next.
  case CUDA_ERROR_ILLEGAL_ADDRESS:
  case CUDA_ERROR_LAUNCH_FAILED:
  case CUDA_ERROR_MISALIGNED_ADDRESS:
  case CUDA_ERROR_ILLEGAL_INSTRUCTION:
  case CUDA_ERROR_INVALID_PC:
  case CUDA_ERROR_HARDWARE_STACK_ERROR:
  case CUDA_ERROR_LAUNCH_TIMEOUT:
    message += "; an earlier kernel failed: FBT_TRACE=1 runs them one at a "
               "time and names the one that fails";
    break;
  default:
    break;
  }
  throw RuntimeError(message);
}

void check(cublasStatus_t status, const char *call) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return;
  const BlasLt &b = blasLt();
  throw RuntimeError(std::string(call) + ": " + b.cublasLtGetStatusName(status) +
                     " (" + b.cublasLtGetStatusString(status) + ")");
}

} // namespace fbt::cuda
