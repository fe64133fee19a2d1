//===- GpuKernels.h - kernels split into GPU launches ------------*- C++ -*-===//
//
// A kernel built for the GPU (fbt-to-kernels target=gpu) is a func.func whose
// top level is a sequence of grids (scf.parallel), each marked with how it
// maps to the GPU: `fbt.map = "rows"` (a block of `fbt.threads` per
// iteration) or one thread per iteration (the default). Each grid becomes
// its own gpu.func in one gpu.module, @fbt_kernels, taking all of the
// kernel's buffers in order; the runtime launches them in order on one
// stream, which orders one grid's writes before the next grid's reads.
//
// Scalars the kernel computes at its top level (a learning rate loaded from
// a buffer, bias corrections) are recomputed in each launch that uses them;
// a top-level op with other side effects runs in a launch of one thread.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_CODEGEN_NVPTX_GPUKERNELS_H
#define FBT_CODEGEN_NVPTX_GPUKERNELS_H

#include "runtime/format/BundleFormat.h"

#include "mlir/IR/BuiltinOps.h"

#include <map>
#include <string>
#include <vector>

namespace mlir::fbt {

/// A kernel's launches are the bundle format's (runtime/format/BundleFormat.h):
/// here each is a gpu.func with a 1-D grid and block, its static shared
/// memory the gpu.func's workgroup attributions.
using ::fbt::KernelLaunch;
using GpuLaunchTable = ::fbt::LaunchTable;

/// Replaces the module's kernels (func.func marked fbt.kernel) by the
/// gpu.module @fbt_kernels and returns each kernel's launches.
FailureOr<GpuLaunchTable> outlineGpuKernels(ModuleOp module);

} // namespace mlir::fbt

#endif // FBT_CODEGEN_NVPTX_GPUKERNELS_H
