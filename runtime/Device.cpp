//===- Device.cpp - where a bundle's steps run ----------------------------===//
//
// Which backends exist is decided when fbt is built: the CPU one needs a
// CBLAS (FBT_HAVE_BLAS), the CUDA one the toolkit's headers (FBT_HAVE_CUDA;
// the driver itself is looked for at run time).
//
//===----------------------------------------------------------------------===//

#include "runtime/Device.h"

#include "runtime/Error.h"

#ifdef FBT_HAVE_BLAS
#include "runtime/CpuDevice.h"
#endif
#ifdef FBT_HAVE_CUDA
#include "runtime/cuda/CudaDevice.h"
#endif

namespace fbt {

std::unique_ptr<Device> openDevice(const Bundle &bundle) {
  if (bundle.target().gpu()) {
#ifdef FBT_HAVE_CUDA
    return cuda::openCudaDevice(bundle);
#else
    throw RuntimeError(bundle.path() + ": this bundle targets NVIDIA " +
                       bundle.target().chip +
                       ", but this fbt was built without CUDA support; rebuild "
                       "it where the CUDA toolkit is installed");
#endif
  }
#ifdef FBT_HAVE_BLAS
  return openCpuDevice(bundle);
#else
  throw RuntimeError(bundle.path() +
                     ": this bundle targets the CPU, but this fbt was built "
                     "without BLAS, which CPU bundles need for their GEMMs; "
                     "rebuild it with OpenBLAS, or compile the model for a GPU "
                     "(fbtc --target=sm_90)");
#endif
}

bool probeGpus(std::vector<std::string> *lines) {
#ifdef FBT_HAVE_CUDA
  return cuda::probeCuda(lines);
#else
  lines->push_back("this fbt was built without CUDA support");
  return false;
#endif
}

std::string backendSummary(const BundleTarget &target) {
  if (target.emulated())
    return "simt: the GPU's kernels emulated on the CPU, thread by thread (for "
           "tests), GEMMs on BLAS";
  if (!target.gpu()) {
#ifdef FBT_HAVE_BLAS
    return "cpu: generated kernels (shared library), GEMMs on BLAS";
#else
    return "cpu: generated kernels (shared library), GEMMs on BLAS; this fbt "
           "was built without BLAS and cannot run it";
#endif
  }
  std::string summary = "cuda: generated kernels (PTX/cubin), GEMMs on cuBLASLt";
  std::vector<std::string> gpus;
  if (probeGpus(&gpus))
    return summary + "; GPU here: " + gpus[0];
  return summary + "; cannot run here: " + gpus[0];
}

} // namespace fbt
