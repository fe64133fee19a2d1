//===- NvptxTarget.h - kernels to PTX and cubin ------------------*- C++ -*-===//
//
// The NVIDIA backend: the module's GPU-mapped kernels are split into their
// launches (GpuKernels.h), lowered through MLIR's gpu -> NVVM path and
// LLVM's NVPTX backend to PTX for an explicit chip and PTX version, and, when
// the CUDA toolkit's ptxas is found, assembled to a cubin for that chip.
// Transcendentals (exp, log, sin, cos) are expanded to polynomials in IR, so
// the PTX calls no libdevice function and needs no toolkit to produce.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_CODEGEN_NVPTX_NVPTXTARGET_H
#define FBT_CODEGEN_NVPTX_NVPTXTARGET_H

#include "codegen/nvptx/GpuKernels.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectRegistry.h"

#include <string>

namespace mlir::fbt {

struct NvptxTargetOptions {
  std::string chip = "sm_90";
  /// PTX ISA version as an LLVM feature; PTX 8.0 covers sm_80 and sm_90.
  std::string features = "+ptx80";
  int optLevel = 3;
  /// Assemble a cubin with ptxas (when found).
  bool cubin = true;
};

struct NvptxBinary {
  std::string ptx;
  std::string cubin;    ///< empty when no ptxas was found
  std::string ptxasLog; ///< ptxas -v: registers, spills per entry
  GpuLaunchTable launches;
};

/// Dialects and interfaces the NVPTX lowering needs, for a context's registry.
void registerNvptxTarget(DialectRegistry &registry);

/// Compiles the kernels of `module` (built with fbt-to-kernels target=gpu).
/// Failures are diagnosed on the module.
FailureOr<NvptxBinary> compileKernelsForNvptx(ModuleOp module,
                                              const NvptxTargetOptions &options);

/// exp, log, sin and cos under `root` as the polynomials the NVIDIA target
/// computes them with (the SIMT emulator uses them too, so that its checks
/// cover the GPU's math).
LogicalResult approximateTranscendentals(Operation *root);

/// Path of the CUDA toolkit's ptxas: $FBT_PTXAS, then PATH, then
/// $CUDA_HOME/bin and the toolkit's usual install folder; empty if none.
std::string findPtxas();

} // namespace mlir::fbt

#endif // FBT_CODEGEN_NVPTX_NVPTXTARGET_H
