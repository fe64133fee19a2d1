//===- CpuExecutor.h - running a step plan on the CPU -------------*- C++ -*-===//
//
// The CPU StepRunner: the step's arena and constants are host memory, GEMMs
// run on BLAS and everything else through the generated kernels of the
// bundle's shared library, one call after another.
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
  CpuStepRunner(const StepPlan &plan, const KernelLibrary &kernels);

  void run(const std::vector<void *> &inputs,
           const std::vector<void *> &outputs) override;

private:
  std::vector<KernelLibrary::Kernel> kernels_; // per op (null for GEMMs)
  AlignedBuffer arena_;
  std::vector<AlignedBuffer> constants_;
  std::vector<char *> constantAddresses_;
};

} // namespace fbt

#endif // FBT_RUNTIME_CPUEXECUTOR_H
