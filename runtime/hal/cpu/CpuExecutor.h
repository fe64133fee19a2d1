//===- CpuExecutor.h - running a step plan on the CPU -------------*- C++ -*-===//
//
// The CPU StepRunner: the step's arena and constants are host memory, GEMMs
// run on BLAS and everything else through the generated kernels of the
// bundle's shared library, one call after another.
//
// It also runs emulated-GPU bundles ("simt", for tests): each kernel is the
// GPU's launches, run by the SIMT emulator (runtime/hal/simt), and bf16 GEMMs
// (bf16 storage) widen their operands to f32 for BLAS and round the result,
// as cuBLASLt's bf16 GEMMs accumulate in f32.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_HAL_CPU_CPUEXECUTOR_H
#define FBT_RUNTIME_HAL_CPU_CPUEXECUTOR_H

#include "runtime/base/AlignedBuffer.h"
#include "runtime/hal/Device.h"
#include "runtime/hal/StepRunner.h"
#include "runtime/hal/cpu/CpuGemm.h"
#include "runtime/hal/cpu/KernelLibrary.h"

#include <map>
#include <vector>

namespace fbt {

class CpuStepRunner : public StepRunner {
public:
  /// `emulated`: the bundle of an emulated GPU, whose launches `kernels`
  /// holds (by entry name); null for a CPU bundle.
  /// `choice`: the variant that runs each kernel's calls (Device.h).
  /// `gemms`: gemmShapeKey -> GemmSplit, the GEMMs' splits (CpuGemm.h).
  CpuStepRunner(const StepPlan &plan, const KernelLibrary &kernels,
                const Bundle *emulated = nullptr, const KernelChoice &choice = {},
                const std::map<std::string, int> &gemms = {});

  void run(const std::vector<void *> &inputs,
           const std::vector<void *> &outputs) override;
  double gemmAloneGflops(int repeats) override;

  void readArgument(size_t op, size_t arg, void *host) override;
  void writeArgument(size_t op, size_t arg, const void *host) override;
  void callVariant(size_t op, const std::string &symbol) override;
  int gemmAlgorithms(size_t op) override;
  void callGemm(size_t op, int algorithm) override;

protected:
  void copyWithin(void *to, const void *from, size_t bytes) override;

private:
  struct Launch {
    KernelLibrary::Kernel fn;
    const KernelLaunch *shape;
  };
  void gemm(const PlanOp &op, void *a, void *b, void *c, GemmSplit split);
  /// Whether call `i` may run in a batch of GEMMs (parallelSgemms): an f32
  /// GEMM on the default split, outside a probe and ZeRO's shards.
  bool batchable(size_t i) const;
  /// Fills batch_ with the independent batchable GEMMs from call `i` on
  /// and returns how many.
  size_t gemmBatch(size_t i, const std::vector<void *> &inputs,
                   const std::vector<void *> &outputs, char *arena);
  /// Runs a kernel call: `fn` on the CPU, else the emulated launches.
  void call(KernelLibrary::Kernel fn, const std::vector<Launch> &launches,
            size_t count);
  std::vector<Launch> launchesOf(const std::string &symbol) const;
  /// The probed op's argument `arg`, checked.
  char *argument(size_t op, size_t arg) const;

  const KernelLibrary &library_;
  const Bundle *emulated_;
  /// The current call's arguments: 16 for a kernel, two per tensor for a
  /// collective.
  std::vector<void *> args_;
  size_t probedOp_ = ~size_t(0);

  std::vector<KernelLibrary::Kernel> kernels_; // per op (null for GEMMs)
  std::vector<std::string> symbols_;           // per op: what runs it
  std::vector<GemmSplit> splits_;              // per op: a GEMM's split
  std::vector<std::vector<Launch>> launches_;  // per op, emulated GPU only
  std::vector<float> lhs_, rhs_, result_;      // bf16 GEMMs widened to f32
  std::vector<GemmCall> batch_;                // the GEMMs run together
  AlignedBuffer arena_;
  std::vector<AlignedBuffer> constants_;
  std::vector<char *> constantAddresses_;
};

} // namespace fbt

#endif // FBT_RUNTIME_HAL_CPU_CPUEXECUTOR_H
