//===- TuneKeys.h - how the tuner names calls and GEMM choices ----*- C++ -*-===//
//
// Internal to the tune room: the key of a plan call among the kernels the
// tuner measures (its kernel, or "gemm:<shape>"), and a device's GEMM choice
// from the tuned shapes.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_TUNE_TUNEKEYS_H
#define FBT_RUNTIME_TUNE_TUNEKEYS_H

#include "runtime/format/BundleFormat.h"
#include "runtime/format/TuneCache.h"
#include "runtime/hal/Device.h"

#include <string>
#include <vector>

namespace fbt::tune {

/// What the tuner calls a GEMM shape among kernels: "gemm:<shape>".
inline std::string gemmKey(const std::string &shape) { return "gemm:" + shape; }
/// A plan call's key: its kernel, or its GEMM's.
inline std::string callKey(const PlanOp &op) {
  return op.isGemm() ? gemmKey(gemmShapeKey(op)) : op.kernel;
}

/// What a device is told to run for each GEMM shape.
inline GemmChoice gemmAlgorithms(const std::vector<TunedGemm> &gemms) {
  GemmChoice algorithms;
  for (const TunedGemm &g : gemms)
    algorithms[g.shape] = (int)g.algorithm;
  return algorithms;
}

} // namespace fbt::tune

#endif // FBT_RUNTIME_TUNE_TUNEKEYS_H
