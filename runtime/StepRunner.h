//===- StepRunner.h - running one compiled step on a device -------*- C++ -*-===//
//
// One StepRunner per compiled step and device: it owns the step's arena and
// constant buffers and runs the plan's calls in order, GEMMs on the
// device's BLAS and everything else through the generated kernels. The
// caller binds inputs and outputs by index (StepPlan::inputIndex /
// outputIndex) to buffers in the device's memory (Device.h); outputs
// updated in place need no buffer of their own. The CPU and CUDA backends
// implement run(); the bookkeeping they share (binding checks, addresses,
// the per-kernel profile) lives here.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_STEPRUNNER_H
#define FBT_RUNTIME_STEPRUNNER_H

#include "runtime/Bundle.h"

#include <map>
#include <string>
#include <vector>

namespace fbt {

class StepRunner {
public:
  explicit StepRunner(const StepPlan &plan);
  virtual ~StepRunner() = default;
  StepRunner(const StepRunner &) = delete;
  StepRunner &operator=(const StepRunner &) = delete;

  /// Runs the step. `inputs[i]` must hold plan.inputs[i].bytes; `outputs[j]`
  /// plan.outputs[j].bytes, or null for an output updated in place. On a
  /// GPU the work is queued: reading an output back waits for it.
  virtual void run(const std::vector<void *> &inputs,
                   const std::vector<void *> &outputs) = 0;

  const StepPlan &plan() const { return plan_; }
  /// The rate of this step's GEMMs run alone (each on buffers of its own,
  /// warm, the median of `repeats` timings of all of them), in GFLOP/s: the
  /// ceiling a step made only of its GEMMs would reach. 0 where unmeasured.
  virtual double gemmAloneGflops(int repeats) { (void)repeats; return 0; }
  /// Seconds spent in GEMMs and in kernels over all profiled runs.
  double gemmSeconds() const { return gemmSeconds_; }
  double kernelSeconds() const { return kernelSeconds_; }
  /// Seconds per kernel name (its stem after the kN_ prefix), and "gemm".
  const std::map<std::string, double> &profile() const { return byName_; }
  void setProfiling(bool on) { profile_ = on; }

protected:
  /// Throws unless the binding has one buffer per input and output.
  void checkBinding(const std::vector<void *> &inputs,
                    const std::vector<void *> &outputs) const;
  /// The address `r` names, given the bases of the step's buffers.
  char *address(const BufferRef &r, const std::vector<void *> &inputs,
                const std::vector<void *> &outputs,
                const std::vector<char *> &constants, char *arena) const;
  /// Adds `seconds` of op `index` to the profile.
  void record(size_t index, double seconds);
  /// FBT_TRACE=1: name each call before it runs (for debugging a bundle).
  static bool tracing();

  const StepPlan &plan_;
  bool profile_ = false;

private:
  double gemmSeconds_ = 0, kernelSeconds_ = 0;
  std::map<std::string, double> byName_;
  std::vector<std::string> stems_; // per op
};

} // namespace fbt

#endif // FBT_RUNTIME_STEPRUNNER_H
