//===- BundleAssembly.h - a compiled module as a bundle's contents -*- C++ -*-===//
//
// The last stage of fbtc: the kernels of a kernel-level module compiled for
// the bundle's target (a shared object for the CPU and the SIMT emulator,
// PTX and a cubin for NVIDIA GPUs), and the manifest that describes them
// (target, kernels and their variants, early writes, launches, parameters,
// the resolved spec, the step plans). Everything it needs comes in a
// BundleBuild, so the driver's options stay the driver's.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_CODEGEN_BUNDLE_BUNDLEASSEMBLY_H
#define FBT_CODEGEN_BUNDLE_BUNDLEASSEMBLY_H

#include "codegen/cpu/CpuTarget.h"
#include "codegen/nvptx/NvptxTarget.h"
#include "runtime/format/BundleFormat.h"
#include "runtime/format/Kinds.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Support/LLVM.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlir::fbt {

/// What a bundle is built for, and what of the model it records.
struct BundleBuild {
  ::fbt::TargetKind target = ::fbt::TargetKind::Cpu;
  NvptxTargetOptions nvptx; ///< Nvptx
  CpuTargetOptions cpu;     ///< Cpu
  std::string storage;      ///< Nvptx, Simt: training activations, "bf16" or "f32"
  bool int8Activations = false; ///< Cpu: the products by int8 weights quantize x too
  std::optional<::fbt::TunedBuild> tuned;
  std::vector<::fbt::ParamSpec> params;
  ::fbt::Json model; ///< the resolved spec
};

/// The bundle's contents: its manifest and its binaries.
struct AssembledBundle {
  ::fbt::BundleManifest manifest;
  ::fbt::BundleBlobs blobs;
};

/// Compiles `module`'s kernels for `build.target` and assembles the
/// manifest around them and `steps`. Fails (with diagnostics) when the
/// kernels do not compile.
FailureOr<AssembledBundle> assembleBundle(ModuleOp module,
                                          std::map<std::string, ::fbt::StepPlan> steps,
                                          int64_t largestArena, const BundleBuild &build);

/// What the bundle's manifest calls `build`'s target ("cpu:x86-64-v3",
/// "nvptx:sm_90:bf16", "simt:f32"), as the tune cache records it.
std::string bundleTargetName(const BundleBuild &build);

} // namespace mlir::fbt

#endif // FBT_CODEGEN_BUNDLE_BUNDLEASSEMBLY_H
