//===- Emulator.h - GPU launches run on the CPU, thread by thread -*- C++ -*-===//
//
// Runs the launches of codegen/SimtTarget.h: each block's threads in turn on
// this CPU thread. Threads of a cooperative (rows) launch are coroutines
// (ucontext) that run until the next barrier, so barriers, shuffles and
// shared memory behave as on a GPU; the other launches call each thread's
// function directly. Deterministic: one block at a time, threads in order.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_TEST_SIMT_EMULATOR_H
#define FBT_TEST_SIMT_EMULATOR_H

#include <cstdint>
#include <vector>

namespace fbt::simt {

/// Calls `fn` (a kernel or launch entry, one pointer per buffer).
void call(void *fn, const std::vector<void *> &args);

/// Runs `fn` on `grid` blocks of `block` threads.
void launch(void *fn, const std::vector<void *> &args, int64_t grid,
            int64_t block, bool cooperative);

} // namespace fbt::simt

#endif // FBT_TEST_SIMT_EMULATOR_H
