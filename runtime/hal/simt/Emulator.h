//===- Emulator.h - GPU launches run on the CPU, thread by thread -*- C++ -*-===//
//
// Runs the launches of an emulated-GPU bundle (fbtc --target=simt; the
// kernels of codegen/simt/SimtTarget.h): each block's threads in turn on this CPU
// thread. Threads of a cooperative (rows) launch are coroutines (ucontext)
// that run until the next barrier, so barriers, warp shuffles and shared
// memory behave as on a GPU; other launches call each thread's function
// directly. Deterministic: one block at a time, threads in order. For tests:
// it checks the GPU's kernels where no GPU is.
//
// The kernels call back into it through four C symbols (fbt_simt_*), which
// the executable that loads them must export.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_HAL_SIMT_EMULATOR_H
#define FBT_RUNTIME_HAL_SIMT_EMULATOR_H

#include "runtime/hal/KernelCall.h"

#include <cstddef>
#include <cstdint>

namespace fbt::simt {

/// Runs `fn` on `grid` blocks of `block` threads with `count` buffers.
void launch(KernelFn fn, void *const *args, size_t count,
            int64_t grid, int64_t block, bool cooperative);

} // namespace fbt::simt

#endif // FBT_RUNTIME_HAL_SIMT_EMULATOR_H
