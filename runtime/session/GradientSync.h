//===- GradientSync.h - a training step's collectives -------------*- C++ -*-===//
//
// The compiled training step reduces its gradients and losses over every
// contribution to the global batch (PlanOp "all_reduce", mean): each rank's
// micro-batch, and each micro-batch a rank ran before it through the
// gradient-only step (--accumulate). GradientSync is what runs those
// collectives for a session: it keeps the accumulated micro-batches' sums
// by name ("grad.<param>", "loss", "pass_losses"), adds them into the
// step's own before the reduction starts, and hands the reduction to the
// run's Channel (hal/Channel.h) with the scale 1 / (ranks x micro-batches).
//
// The sum over a rank's micro-batches is taken in order, then the sum over
// ranks by the channel, so N ranks x A micro-batches add up what 1 rank x
// N*A does, up to the order of the additions.
//
// Under ZeRO-1 it also says which rank owns which parameter (ZeroShards.h),
// for the reduce-scatters, the all-gathers and the calls the plan gives to
// one rank (PlanOp::shard).
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_SESSION_GRADIENTSYNC_H
#define FBT_RUNTIME_SESSION_GRADIENTSYNC_H

#include "runtime/hal/Channel.h"

#include <map>
#include <string>
#include <vector>

namespace fbt {

class GradientSync : public Collectives {
public:
  /// `params`: the bundle's parameters, whose owners ZeRO-1's collectives
  /// and sharded calls go by.
  GradientSync(Device &device, Channel &channel, const std::vector<ParamSpec> &params);

  Channel &channel() { return channel_; }
  /// Adds a micro-batch's outputs (host memory, `count` floats) to the sum
  /// kept under `name`.
  void accumulate(const std::string &name, const float *values, size_t count);
  /// Micro-batches accumulated since the last reduced step.
  int64_t accumulated() const { return microBatches_; }
  /// Counts one accumulated micro-batch (after its accumulate() calls).
  void finishMicroBatch() { ++microBatches_; }
  /// Forgets the accumulated sums (after the step that reduced them).
  void reset();

  void start(const PlanOp &op, const std::vector<ReduceBuffer> &buffers) override;
  void wait(int64_t bucket) override;
  void progress() override;
  bool owns(const std::string &param) const override;
  /// The rank that owns parameter `param` under ZeRO-1; RuntimeError for a
  /// name that is no parameter, or a world ZeRO-1 cannot divide.
  int owner(const std::string &param) const;

  /// Seconds spent starting reductions and waiting for them, so far: the
  /// communication the step did not overlap with its own work.
  double exposedSeconds() const { return exposedSeconds_; }

private:
  Device &device_;
  Channel &channel_;
  std::vector<std::string> paramNames_;
  std::vector<int64_t> paramElements_;
  mutable std::map<std::string, int> owners_; ///< made when first asked
  std::map<std::string, std::vector<float>> sums_;
  int64_t microBatches_ = 0;
  double exposedSeconds_ = 0;
};

} // namespace fbt

#endif // FBT_RUNTIME_SESSION_GRADIENTSYNC_H
