//===- KernelCall.h - how a generated kernel is called -----------*- C++ -*-===//
//
// The calling convention of every kernel fbtc generates for the host (the
// CPU target, and the emulated GPU's thread functions): `void k(void *buf0,
// void *buf1, ...)`, one pointer per buffer, operands then results. Shared
// by the CPU backend, which loads kernels, and the SIMT emulator, which runs
// them thread by thread.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_HAL_KERNELCALL_H
#define FBT_RUNTIME_HAL_KERNELCALL_H

#include <cstddef>

namespace fbt {

/// A kernel's address, cast back to its arity when called.
using KernelFn = void (*)();

/// Calls `kernel` with `count` buffer pointers; a RuntimeError beyond the
/// calling table's arity.
void callKernel(KernelFn kernel, void *const *args, size_t count);

} // namespace fbt

#endif // FBT_RUNTIME_HAL_KERNELCALL_H
