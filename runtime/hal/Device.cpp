//===- Device.cpp - where a bundle's steps run ----------------------------===//
//
// Which backends exist is decided when fbt is built: each backend's folder
// registers itself when its library is linked (the CPU one needs a CBLAS,
// the CUDA one the toolkit's headers; the driver itself is looked for at
// run time). This file only asks them.
//
//===----------------------------------------------------------------------===//

#include "runtime/hal/Device.h"

#include "runtime/base/Error.h"

namespace fbt {

namespace {
std::vector<Backend> &backends() {
  static std::vector<Backend> all; // filled by static initializers
  return all;
}

const Backend *backendFor(const BundleTarget &target) {
  for (const Backend &b : backends())
    if (b.runs(target))
      return &b;
  return nullptr;
}
} // namespace

bool registerBackend(Backend backend) {
  backends().push_back(std::move(backend));
  return true;
}

std::unique_ptr<Device> openDevice(const Bundle &bundle) {
  if (const Backend *b = backendFor(bundle.target()))
    return b->open(bundle);
  if (bundle.target().gpu())
    throw RuntimeError(bundle.path() + ": this bundle targets NVIDIA " +
                       bundle.target().chip +
                       ", but this fbt was built without CUDA support; rebuild "
                       "it where the CUDA toolkit is installed");
  throw RuntimeError(bundle.path() +
                     ": this bundle targets the CPU, but this fbt was built "
                     "without BLAS, which CPU bundles need for their GEMMs; "
                     "rebuild it with OpenBLAS, or compile the model for a GPU "
                     "(fbtc --target=sm_90)");
}

bool probeGpus(std::vector<std::string> *lines) {
  for (const Backend &b : backends())
    if (b.probe)
      return b.probe(lines);
  lines->push_back("this fbt was built without CUDA support");
  return false;
}

std::string backendSummary(const BundleTarget &target) {
  if (target.emulated())
    return "simt: the GPU's kernels emulated on the CPU, thread by thread (for "
           "tests), GEMMs on BLAS";
  const Backend *b = backendFor(target);
  if (!target.gpu())
    return b ? b->summary
             : "cpu: generated kernels (shared library), GEMMs on BLAS; this fbt "
               "was built without BLAS and cannot run it";
  std::string summary = "cuda: generated kernels (PTX/cubin), GEMMs on cuBLASLt";
  std::vector<std::string> gpus;
  if (probeGpus(&gpus))
    return summary + "; GPU here: " + gpus[0];
  return summary + "; cannot run here: " + gpus[0];
}

} // namespace fbt
