//===- CudaKernels.h - a GPU bundle's kernels, loaded on the device -*- C++ -*-===//
//
// Picks the module image the device can run and resolves every launch's
// entry once:
//   - the cubin, when the bundle has one and it was built for exactly this
//     GPU's compute capability;
//   - else the PTX, JIT-compiled by the driver, when the GPU is at least the
//     bundle's chip (PTX runs forward, never backward);
//   - else an error naming both and the --target to recompile with.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_HAL_CUDA_CUDAKERNELS_H
#define FBT_RUNTIME_HAL_CUDA_CUDAKERNELS_H

#include "runtime/format/Bundle.h"
#include "runtime/hal/cuda/CudaApi.h"

#include <map>
#include <string>
#include <vector>

namespace fbt::cuda {

struct Launch {
  CUfunction function = nullptr;
  KernelLaunch shape;
};

class CudaKernels {
public:
  /// `capability` is the GPU's major * 10 + minor (90 for sm_90).
  CudaKernels(const Bundle &bundle, int capability, const std::string &gpuName);
  ~CudaKernels();
  CudaKernels(const CudaKernels &) = delete;
  CudaKernels &operator=(const CudaKernels &) = delete;

  const std::vector<Launch> &launches(const std::string &kernel) const;
  /// "cubin" or "PTX, JIT-compiled for sm_XY".
  const std::string &image() const { return image_; }

private:
  CUmodule module_ = nullptr;
  std::string image_;
  std::map<std::string, std::vector<Launch>> launches_;
};

/// "sm_90" -> 90, "sm_90a" -> 90 with `archSpecific`; -1 if malformed.
int chipCapability(const std::string &chip, bool *archSpecific = nullptr);

} // namespace fbt::cuda

#endif // FBT_RUNTIME_HAL_CUDA_CUDAKERNELS_H
