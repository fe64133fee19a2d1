//===- CudaKernels.cpp - a GPU bundle's kernels, loaded on the device -----===//

#include "runtime/hal/cuda/CudaKernels.h"

#include "runtime/base/Error.h"

#include <cctype>

namespace fbt::cuda {

int chipCapability(const std::string &chip, bool *archSpecific) {
  if (chip.rfind("sm_", 0) != 0)
    return -1;
  size_t end = 3;
  while (end < chip.size() && std::isdigit((unsigned char)chip[end]))
    ++end;
  std::string suffix = chip.substr(end);
  if (end == 3 || end - 3 > 4 || !(suffix.empty() || suffix == "a" || suffix == "f"))
    return -1;
  if (archSpecific)
    *archSpecific = suffix == "a";
  return std::stoi(chip.substr(3, end - 3));
}

namespace {
std::string smName(int capability) { return "sm_" + std::to_string(capability); }

/// Loads `image` (a cubin, or NUL-terminated PTX); on failure returns the
/// error, with the JIT's log for PTX.
std::string tryLoad(const std::string &image, CUmodule *module) {
  const Driver &d = driver();
  char log[8192] = {0};
  CUjit_option options[2] = {CU_JIT_ERROR_LOG_BUFFER,
                             CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[2] = {log, reinterpret_cast<void *>(sizeof(log) - 1)};
  CUresult r = d.cuModuleLoadDataEx(module, image.data(), 2, options, values);
  if (r == CUDA_SUCCESS)
    return "";
  std::string why = errorText(r);
  if (log[0])
    why += ": " + std::string(log);
  return why;
}
} // namespace

CudaKernels::CudaKernels(const Bundle &bundle, int capability,
                         const std::string &gpuName) {
  const std::string &chip = bundle.target().chip;
  bool archSpecific = false;
  int wanted = chipCapability(chip, &archSpecific);
  if (wanted < 0)
    throw RuntimeError(bundle.path() + ": the bundle's chip '" + chip +
                       "' is not an NVIDIA sm_XY name");
  std::string gpu = "the GPU " + gpuName + " is " + smName(capability);
  if (wanted > capability || (archSpecific && wanted != capability))
    throw RuntimeError(bundle.path() + ": bundle targets " + chip + " but " + gpu +
                       "; recompile with fbtc --target=" + smName(capability));

  std::string cubinError;
  const std::string *cubin = bundle.blob("kernels.cubin");
  if (cubin && wanted == capability) {
    cubinError = tryLoad(*cubin, &module_);
    if (cubinError.empty())
      image_ = "cubin";
  }
  if (!module_) {
    // The PTX blob is not NUL-terminated; the driver reads to the NUL.
    std::string ptx = *bundle.blob("kernels.ptx") + '\0';
    std::string ptxError = tryLoad(ptx, &module_);
    if (!ptxError.empty())
      throw RuntimeError(
          bundle.path() + ": the GPU kernels do not load on " + gpuName + " (" +
          smName(capability) + "): " +
          (cubinError.empty() ? "" : "cubin: " + cubinError + "; ") +
          "PTX: " + ptxError +
          (ptxError.find("UNSUPPORTED_PTX_VERSION") != std::string::npos
               ? " (the driver is older than the PTX; update it or compile "
                 "with an older fbtc)"
               : ""));
    image_ = "PTX, JIT-compiled for " + smName(capability);
  }

  const Driver &d = driver();
  for (const std::string &kernel : bundle.kernels()) {
    std::vector<Launch> &list = launches_[kernel];
    for (const KernelLaunch &shape : bundle.launches(kernel)) {
      Launch l;
      l.shape = shape;
      CUresult r = d.cuModuleGetFunction(&l.function, module_, shape.entry.c_str());
      if (r != CUDA_SUCCESS)
        throw RuntimeError(bundle.path() + ": kernel '" + kernel + "': entry '" +
                           shape.entry + "' is not in the module (" +
                           errorText(r) + ")");
      list.push_back(l);
    }
  }
}

CudaKernels::~CudaKernels() {
  if (module_)
    driver().cuModuleUnload(module_);
}

const std::vector<Launch> &CudaKernels::launches(const std::string &kernel) const {
  auto it = launches_.find(kernel);
  if (it == launches_.end())
    throw RuntimeError("unknown GPU kernel '" + kernel + "'");
  return it->second;
}

} // namespace fbt::cuda
