//===- CpuExecutor.h - running a step plan on the CPU -------------*- C++ -*-===//
//
// The CPU StepRunner: the step's arena and constants are host memory, GEMMs
// run on BLAS and everything else through the generated kernels of the
// bundle's shared library, one call after another.
//
// It also runs emulated-GPU bundles ("simt", for tests): each kernel is the
// GPU's launches, run by the SIMT emulator (runtime/simt), and bf16 GEMMs
// (bf16 storage) widen their operands to f32 for BLAS and round the result,
// as cuBLASLt's bf16 GEMMs accumulate in f32.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_CPUEXECUTOR_H
#define FBT_RUNTIME_CPUEXECUTOR_H

#include "runtime/AlignedBuffer.h"
#include "runtime/KernelLibrary.h"
#include "runtime/StepRunner.h"

#include <vector>

namespace fbt {

class CpuStepRunner : public StepRunner {
public:
  /// `emulated`: the bundle of an emulated GPU, whose launches `kernels`
  /// holds (by entry name); null for a CPU bundle.
  CpuStepRunner(const StepPlan &plan, const KernelLibrary &kernels,
                const Bundle *emulated = nullptr);

  void run(const std::vector<void *> &inputs,
           const std::vector<void *> &outputs) override;
  double gemmAloneGflops(int repeats) override;

private:
  struct Launch {
    KernelLibrary::Kernel fn;
    const KernelLaunch *shape;
  };
  void gemm(const PlanOp &op, void *a, void *b, void *c);

  std::vector<KernelLibrary::Kernel> kernels_; // per op (null for GEMMs)
  std::vector<std::vector<Launch>> launches_;  // per op, emulated GPU only
  std::vector<float> lhs_, rhs_, result_;      // bf16 GEMMs widened to f32
  AlignedBuffer arena_;
  std::vector<AlignedBuffer> constants_;
  std::vector<char *> constantAddresses_;
};

} // namespace fbt

#endif // FBT_RUNTIME_CPUEXECUTOR_H
