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

#ifndef FBT_RUNTIME_HAL_STEPRUNNER_H
#define FBT_RUNTIME_HAL_STEPRUNNER_H

#include "runtime/format/Bundle.h"

#include <map>
#include <string>
#include <vector>

namespace fbt {

class StepRunner;

/// One f32 tensor of a collective: `count` elements read from `in` and the
/// result written to `out` (device memory; in == out works in place). For a
/// reduce-scatter or all-gather (ZeRO-1), `root` is the rank that owns it.
struct ReduceBuffer {
  const void *in = nullptr;
  void *out = nullptr;
  int64_t count = 0;
  int root = 0;
};

/// Runs a plan's collectives (PlanOp::collective) across the ranks of a
/// data-parallel run: the session's (session/GradientSync.h). A runner
/// without one is a world of one, where an all_reduce copies.
class Collectives {
public:
  virtual ~Collectives() = default;
  /// Starts collective `op` (all_reduce, reduce_scatter, all_gather) on
  /// `buffers` (one per operand, in order; `root` unset).
  virtual void start(const PlanOp &op, const std::vector<ReduceBuffer> &buffers) = 0;
  /// Returns once bucket `bucket`'s results are ready.
  virtual void wait(int64_t bucket) = 0;
  /// Called between the step's other calls while a bucket is in flight
  /// (Channel::progress).
  virtual void progress() {}
  /// ZeRO-1: whether this rank makes the calls of parameter `param`
  /// (PlanOp::shard).
  virtual bool owns(const std::string &param) const = 0;
};

/// The tuner's window into a run (runtime/tune/Tuner.h): called before each call
/// of the plan runs, with the call's arguments in place, so that it can
/// time the call's alternatives on the real data.
class CallProbe {
public:
  virtual ~CallProbe() = default;
  virtual void beforeCall(StepRunner &runner, size_t op) = 0;
};

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

  /// Runs with `probe` called before every kernel and GEMM call (null:
  /// none). Probed runs wait for each call and never replay a CUDA graph.
  void setProbe(CallProbe *probe) { probe_ = probe; }
  /// Runs the plan's collectives through `collectives` (null: a world of
  /// one).
  void setCollectives(Collectives *collectives) { collectives_ = collectives; }
  /// Runs in `arena` (device memory of at least the plan's arenaBytes)
  /// instead of an arena of its own: steps that never run at the same time
  /// (a training step, its gradient-only twin, validation) share one, so
  /// accumulating micro-batches costs no second arena. Call before run().
  void shareArena(void *arena, int64_t bytes);
  /// Seconds spent in collectives (starting them and waiting for them)
  /// over all profiled runs: what the reductions did not overlap.
  double collectiveSeconds() const { return collectiveSeconds_; }
  // Inside CallProbe::beforeCall(runner, op), on that op only:
  /// Copies argument `arg` of the call to or from host memory
  /// (plan().ops[op].args[arg].bytes of them).
  virtual void readArgument(size_t op, size_t arg, void *host) = 0;
  virtual void writeArgument(size_t op, size_t arg, const void *host) = 0;
  /// Runs the call as kernel `symbol` (the op's kernel or one of its
  /// variants) and waits for it; a RuntimeError saying why if it cannot be
  /// launched.
  virtual void callVariant(size_t op, const std::string &symbol) = 0;
  /// A GEMM call's alternative algorithms (GPU: cuBLASLt's heuristic
  /// candidates; 0 or 1 where there is no choice), and a run with one.
  virtual int gemmAlgorithms(size_t op) { (void)op; return 0; }
  virtual void callGemm(size_t op, int algorithm) { (void)op; (void)algorithm; }

protected:
  /// Throws unless the binding has one buffer per input and output.
  void checkBinding(const std::vector<void *> &inputs,
                    const std::vector<void *> &outputs) const;
  /// The address `r` names, given the bases of the step's buffers.
  char *address(const BufferRef &r, const std::vector<void *> &inputs,
                const std::vector<void *> &outputs,
                const std::vector<char *> &constants, char *arena) const;
  /// Runs collective `op` (PlanOp::collective) on its arguments' addresses.
  void collective(const PlanOp &op, void *const *args);
  /// ZeRO-1: whether call `op` is another rank's (PlanOp::shard); if so,
  /// each result is made its tied operand here (copied where the plan put
  /// them apart) and the caller skips the call. The buffers of the
  /// moments this rank does not keep are unbound (null).
  bool anotherRanks(const PlanOp &op, const std::vector<void *> &inputs,
                    const std::vector<void *> &outputs,
                    const std::vector<char *> &constants, char *arena);
  /// Between calls: lets the reductions in flight move on.
  void progressCollectives() {
    if (inFlight_ > 0)
      collectives_->progress();
  }
  /// Device to device, in order with the step's calls (an all_reduce with
  /// no Collectives copies its operands).
  virtual void copyWithin(void *to, const void *from, size_t bytes) = 0;
  /// Adds `seconds` of op `index` to the profile.
  void record(size_t index, double seconds);
  /// FBT_TRACE=1: name each call before it runs (for debugging a bundle).
  static bool tracing();

  const StepPlan &plan_;
  char *sharedArena_ = nullptr; ///< shareArena's, or null: the runner's own
  bool profile_ = false;
  CallProbe *probe_ = nullptr;
  Collectives *collectives_ = nullptr;
  int inFlight_ = 0; ///< buckets started and not yet waited for

private:
  double gemmSeconds_ = 0, kernelSeconds_ = 0, collectiveSeconds_ = 0;
  std::map<std::string, double> byName_;
  std::vector<std::string> stems_; // per op
};

} // namespace fbt

#endif // FBT_RUNTIME_HAL_STEPRUNNER_H
