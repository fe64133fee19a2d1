//===- KernelThreads.h - kernels' OpenMP calls through the runtime's table ===//
//
// See runtime/format/KernelThreads.h: the calls convert-scf-to-openmp's code
// makes into the OpenMP runtime go through a table the runtime fills.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_CODEGEN_CPU_KERNELTHREADS_H
#define FBT_CODEGEN_CPU_KERNELTHREADS_H

#include <string>

namespace llvm {
class Module;
} // namespace llvm

namespace mlir::fbt {

/// Routes every call of `m` to an OpenMP entry point through the table
/// (kernel_threads::kTable, made where some call needs it) and drops the
/// entry points' declarations, so that the library links no OpenMP runtime.
/// Fails, saying why in `error`, where a call is one the runtime's team
/// does not take: another entry point, a schedule other than the static
/// ones, a fork of more than kMaxForkArgs arguments or of a count not known
/// here.
bool routeKernelThreads(llvm::Module &m, std::string &error);

} // namespace mlir::fbt

#endif // FBT_CODEGEN_CPU_KERNELTHREADS_H
