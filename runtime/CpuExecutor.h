//===- CpuExecutor.h - running a step plan on the CPU -------------*- C++ -*-===//
//
// One StepRunner per compiled step: it owns the step's arena and constant
// buffers and runs the plan's calls in order, GEMMs on BLAS and everything
// else through the generated kernels. The caller binds inputs and outputs by
// index (StepPlan::inputIndex / outputIndex); outputs updated in place need
// no buffer of their own.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_CPUEXECUTOR_H
#define FBT_RUNTIME_CPUEXECUTOR_H

#include "runtime/Bundle.h"
#include "runtime/KernelLibrary.h"

#include <cstdlib>
#include <map>
#include <string>
#include <memory>
#include <vector>

namespace fbt {

/// 64-byte aligned, zeroed bytes.
class AlignedBuffer {
public:
  AlignedBuffer() = default;
  explicit AlignedBuffer(size_t bytes);
  void *data() { return ptr_.get(); }
  const void *data() const { return ptr_.get(); }
  size_t size() const { return size_; }
  template <typename T> T *as() { return static_cast<T *>(data()); }
  template <typename T> const T *as() const { return static_cast<const T *>(data()); }

private:
  struct Free {
    void operator()(void *p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> ptr_;
  size_t size_ = 0;
};

class StepRunner {
public:
  StepRunner(const StepPlan &plan, const KernelLibrary &kernels);

  /// Runs the step. `inputs[i]` must hold plan.inputs[i].bytes; `outputs[j]`
  /// plan.outputs[j].bytes, or null for an output updated in place.
  void run(const std::vector<void *> &inputs, const std::vector<void *> &outputs);

  const StepPlan &plan() const { return plan_; }
  /// Seconds spent in GEMMs and in kernels over all runs (for profiles).
  double gemmSeconds() const { return gemmSeconds_; }
  double kernelSeconds() const { return kernelSeconds_; }
  /// Seconds per kernel name (its stem after the kN_ prefix), and "gemm".
  const std::map<std::string, double> &profile() const { return byName_; }
  void setProfiling(bool on) { profile_ = on; }

private:
  const StepPlan &plan_;
  std::vector<KernelLibrary::Kernel> kernels_; // per op (null for GEMMs)
  AlignedBuffer arena_;
  std::vector<AlignedBuffer> constants_;
  bool profile_ = false;
  double gemmSeconds_ = 0, kernelSeconds_ = 0;
  std::map<std::string, double> byName_;
  std::vector<std::string> stems_; // per op
};

} // namespace fbt

#endif // FBT_RUNTIME_CPUEXECUTOR_H
