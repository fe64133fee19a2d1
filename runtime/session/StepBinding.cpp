//===- StepBinding.cpp - a step's buffers on the device -------------------===//

#include "runtime/session/StepBinding.h"

#include "runtime/base/Error.h"
#include "runtime/base/TokenIds.h"

#include <algorithm>

namespace fbt {

StepBinding::StepBinding(Device &device, const StepPlan &plan,
                         const std::function<void *(const std::string &)> &owned,
                         const std::set<std::string> &hostInputs,
                         const std::string &who, int64_t vocab,
                         const std::set<std::string> &absent)
    : device_(device), plan_(plan), vocab_(vocab) {
  for (const TensorSpec &in : plan.inputs) {
    void *ptr = owned(in.name);
    if (!ptr && absent.count(in.name)) {
      inputs_.push_back(nullptr);
      continue;
    }
    if (!ptr) {
      if (!hostInputs.count(in.name))
        throw RuntimeError("step '" + plan.name + "' takes an input '" + in.name +
                           "' " + who + " cannot bind");
      buffers_.emplace_back(device, in.bytes,
                            "input '" + in.name + "' of step '" + plan.name + "'");
      ptr = buffers_.back().data();
    }
    inputs_.push_back(ptr);
  }
  for (const TensorSpec &out : plan.outputs) {
    if (out.updates >= 0) {
      outputs_.push_back(nullptr); // written in place, into its input
      continue;
    }
    buffers_.emplace_back(device, out.bytes,
                          "output '" + out.name + "' of step '" + plan.name + "'");
    outputs_.push_back(buffers_.back().data());
  }
}

namespace {
/// The ids of input_ids and targets (I32 [rows, positions]) must name rows
/// of the embedding: refused before they reach a kernel.
void checkIds(const StepPlan &plan, const TensorSpec &in, const void *host, int64_t vocab) {
  bool targets = in.name == "targets";
  if (in.dtype != DType::I32 || (in.name != "input_ids" && !targets))
    return;
  int64_t n = in.bytes / (int64_t)sizeof(int32_t);
  int64_t width = in.shape.empty() ? n : std::max<int64_t>(1, in.shape.back());
  requireTokenIds(static_cast<const int32_t *>(host), n, width, vocab, targets,
                  "step '" + plan.name + "': " + in.name);
}
} // namespace

void StepBinding::set(const std::string &name, const void *host, size_t bytes) {
  int64_t i = plan_.inputIndex(name);
  if (i < 0)
    return;
  if ((int64_t)bytes != plan_.inputs[i].bytes)
    throw RuntimeError("step '" + plan_.name + "': input '" + name + "' takes " +
                       std::to_string(plan_.inputs[i].bytes) + " bytes, given " +
                       std::to_string(bytes));
  checkIds(plan_, plan_.inputs[i], host, vocab_);
  device_.upload(inputs_[i], host, bytes);
}

void *StepBinding::input(const std::string &name) const {
  int64_t i = plan_.inputIndex(name);
  if (i < 0)
    throw RuntimeError("the bundle's step '" + plan_.name + "' has no input '" +
                       name + "'; was it compiled by another fbtc? recompile it");
  return inputs_[i];
}

void *StepBinding::output(const std::string &name) const {
  int64_t i = plan_.outputIndex(name);
  if (i < 0 || !outputs_[i])
    throw RuntimeError("the bundle's step '" + plan_.name + "' has no output '" +
                       name + "'; was it compiled by another fbtc? recompile it");
  return outputs_[i];
}

void StepBinding::read(const std::string &name, void *host, size_t bytes) const {
  void *from = output(name);
  int64_t have = plan_.outputs[plan_.outputIndex(name)].bytes;
  if ((int64_t)bytes != have)
    throw RuntimeError("step '" + plan_.name + "': output '" + name + "' holds " +
                       std::to_string(have) + " bytes, not the " +
                       std::to_string(bytes) + " expected");
  device_.download(host, from, bytes);
}

std::vector<float> StepBinding::readFloats(const std::string &name) const {
  output(name); // names a missing output
  std::vector<float> v(plan_.outputs[plan_.outputIndex(name)].bytes / sizeof(float));
  read(name, v.data(), v.size() * sizeof(float));
  return v;
}

} // namespace fbt
