//===- CpuTarget.h - kernels to a shared object ------------------*- C++ -*-===//
//
// The CPU backend: the module's kernels (func.func marked fbt.kernel) are
// lowered through the LLVM dialect to LLVM IR, optimized, compiled to an
// object for the host (or a named CPU), and linked into a shared library the
// runtime loads. Each kernel is an exported C function taking one pointer
// per buffer (the bare-pointer memref convention).
//
//===----------------------------------------------------------------------===//

#ifndef FBT_CODEGEN_CPU_CPUTARGET_H
#define FBT_CODEGEN_CPU_CPUTARGET_H

#include "codegen/kernels/KernelConfig.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace mlir::fbt {

struct CpuTargetOptions {
  /// LLVM CPU name; empty for x86-64-v3 (AVX2, FMA), "native" for this
  /// machine's.
  std::string cpu;
  int optLevel = 3;
  /// Run kernels' parallel loops (scf.parallel, lowered through OpenMP's
  /// dialect) on the runtime's team of threads (runtime/format/
  /// KernelThreads.h) where a kernel touches at least `parallelMinElements`
  /// elements; smaller kernels stay serial (a fork costs more than they do).
  /// The results are the serial ones bit for bit. The runtime runs GEMMs on
  /// the same team (runtime/hal/cpu/CpuGemm.h). Never for the SIMT emulator,
  /// whose launches are threads of their own.
  bool parallel = true;
  int64_t parallelMinElements = kCpuParallelMinElements;
  /// Where to keep the LLVM IR (empty: don't).
  std::string dumpLLVMIR;
};

/// The shared library's bytes, or failure (diagnosed on `module`).
FailureOr<std::string> compileKernelsForCpu(ModuleOp module,
                                            const CpuTargetOptions &options);

/// Compiles every function of `kernels` (a module holding kernels and what
/// they use, nothing else) to a shared library.
FailureOr<std::string> compileModuleForCpu(ModuleOp kernels,
                                           const CpuTargetOptions &options);

/// A new module holding copies of `module`'s kernels (func.func marked
/// fbt.kernel) only.
OwningOpRef<ModuleOp> cloneKernels(ModuleOp module);

/// The CPU name the options resolve to ("x86-64-v3", the host's, ...).
std::string resolvedCpu(const CpuTargetOptions &options);

/// The target triple CPU kernels are compiled for (the host's), and its
/// architecture's name ("x86_64", "aarch64"): what the bundle records, so a
/// runtime on another architecture refuses it by name.
std::string cpuTargetTriple();
std::string cpuTargetArch();

/// Whether the CPU the options name is x86 with AVX2: what the kernels of
/// int8 inference activations are written in (codegen/kernels/KernelsQuant.cpp).
bool cpuHasAvx2(const CpuTargetOptions &options);

/// The vectors of the CPU the options name (AVX-512 with BW, with VNNI or
/// without, else AVX2): what fbt-to-kernels' products are written in.
/// x86-64-v3, the default, has AVX2's.
CpuVectors cpuVectorsOf(const CpuTargetOptions &options);

/// The vector extensions of the CPU the options name that kernels may use
/// and not every x86-64 CPU has, as LLVM names them ("+avx2,+fma,...";
/// empty off x86): what a CPU bundle records, so that a runtime on a CPU
/// without one refuses the bundle instead of stopping on an illegal
/// instruction.
std::string cpuTargetFeatures(const CpuTargetOptions &options);

} // namespace mlir::fbt

#endif // FBT_CODEGEN_CPU_CPUTARGET_H
