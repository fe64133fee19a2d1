//===- GradientSync.cpp - a training step's collectives -------------------===//

#include "runtime/session/GradientSync.h"

#include "runtime/base/Error.h"
#include "runtime/format/ZeroShards.h"

#include <chrono>

namespace fbt {

GradientSync::GradientSync(Device &device, Channel &channel,
                           const std::vector<ParamSpec> &params)
    : device_(device), channel_(channel) {
  for (const ParamSpec &p : params) {
    paramNames_.push_back(p.name);
    int64_t n = 1;
    for (int64_t d : p.shape)
      n *= d;
    paramElements_.push_back(n);
  }
}

int GradientSync::owner(const std::string &param) const {
  if (owners_.empty()) {
    std::vector<int> owner = zeroOwners(paramElements_, channel_.size());
    for (size_t i = 0; i < owner.size(); ++i)
      owners_[paramNames_[i]] = owner[i];
  }
  auto it = owners_.find(param);
  if (it == owners_.end())
    throw RuntimeError(channel_.who() + "the step shards its optimizer by '" + param +
                       "', which is no parameter of the bundle");
  return it->second;
}

bool GradientSync::owns(const std::string &param) const {
  return owner(param) == channel_.rank();
}

void GradientSync::accumulate(const std::string &name, const float *values, size_t count) {
  std::vector<float> &sum = sums_[name];
  if (sum.empty()) {
    sum.assign(values, values + count);
    return;
  }
  if (sum.size() != count)
    throw RuntimeError("accumulated '" + name + "' changed size between micro-batches");
  for (size_t i = 0; i < count; ++i)
    sum[i] += values[i];
}

void GradientSync::reset() {
  sums_.clear();
  microBatches_ = 0;
}

namespace {
double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
} // namespace

void GradientSync::start(const PlanOp &op, const std::vector<ReduceBuffer> &buffers) {
  auto began = std::chrono::steady_clock::now();
  std::vector<ReduceBuffer> reduce = buffers;
  for (size_t i = 0; i < op.shards.size(); ++i)
    reduce[i].root = owner(op.shards[i]);
  if (op.collective == CollectiveKind::AllGather) {
    channel_.startAllGather(op.bucket, reduce);
    exposedSeconds_ += secondsSince(began);
    return;
  }
  if (microBatches_ > 0)
    for (size_t i = 0; i < buffers.size(); ++i) {
      if (op.names[i].empty())
        continue; // a value of this step alone (ZeRO-1's squared norm)
      auto sum = sums_.find(op.names[i]);
      if (sum == sums_.end() || (int64_t)sum->second.size() != buffers[i].count)
        throw RuntimeError(channel_.who() + "the step reduces '" + op.names[i] +
                           "', which the accumulated micro-batches did not return");
      // out = (earlier micro-batches) + this one, then reduced in place. On
      // the CPU the device's memory is the host's; a GPU goes through it.
      size_t bytes = buffers[i].count * sizeof(float);
      std::vector<float> mine(buffers[i].count);
      device_.download(mine.data(), buffers[i].in, bytes);
      for (size_t e = 0; e < mine.size(); ++e)
        mine[e] = sum->second[e] + mine[e];
      device_.upload(buffers[i].out, mine.data(), bytes);
      reduce[i].in = buffers[i].out;
    }
  float contributions = float(channel_.size()) * float(microBatches_ + 1);
  float scale = op.reduction == Reduction::Mean ? 1.0f / contributions : 1.0f;
  if (op.collective == CollectiveKind::ReduceScatter)
    channel_.startReduceScatter(op.bucket, reduce, scale);
  else
    channel_.startAllReduce(op.bucket, reduce, scale);
  exposedSeconds_ += secondsSince(began);
}

void GradientSync::progress() {
  auto began = std::chrono::steady_clock::now();
  channel_.progress();
  exposedSeconds_ += secondsSince(began);
}

void GradientSync::wait(int64_t bucket) {
  auto began = std::chrono::steady_clock::now();
  channel_.wait(bucket);
  exposedSeconds_ += secondsSince(began);
}

} // namespace fbt
