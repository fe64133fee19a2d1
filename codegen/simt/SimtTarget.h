//===- SimtTarget.h - GPU kernels run on the CPU, for tests ------*- C++ -*-===//
//
// The GPU's kernels, exactly as split into launches for the NVIDIA target,
// compiled for this CPU so that tests check them where no GPU exists: every
// launch becomes an exported function that one emulated GPU thread runs.
// The emulator (runtime/hal/simt) provides the thread's coordinates and the
// cooperative operations:
//
//   size_t fbt_simt_thread_id(void);    gpu.thread_id x
//   size_t fbt_simt_block_id(void);     gpu.block_id x
//   void   fbt_simt_barrier(void);      gpu.barrier
//   float  fbt_simt_shuffle_xor(float value, int32_t offset);  gpu.shuffle xor
//
// A launch's shared memory becomes a global buffer: the emulator runs one
// block at a time. exp, log, sin and cos are the GPU's polynomials, so the
// emulator's results are the GPU's math too.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_CODEGEN_SIMT_SIMTTARGET_H
#define FBT_CODEGEN_SIMT_SIMTTARGET_H

#include "codegen/nvptx/GpuKernels.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace mlir::fbt {

struct SimtBinary {
  std::string library; ///< a shared object, as for the CPU target
  GpuLaunchTable launches;
};

/// Compiles the GPU-mapped kernels of `module` (fbt-to-kernels target=gpu)
/// for emulation on this CPU.
FailureOr<SimtBinary> compileKernelsForSimt(ModuleOp module);

} // namespace mlir::fbt

#endif // FBT_CODEGEN_SIMT_SIMTTARGET_H
