//===- Session.cpp - a loaded bundle ready to run ---------------------------===//

#include "runtime/Session.h"

#include "runtime/Error.h"
#include "runtime/Init.h"
#include "runtime/Safetensors.h"

#include <cmath>
#include <cstring>
#include <map>

namespace fbt {

namespace {
int64_t elements(const std::vector<int64_t> &shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}
} // namespace

Session::Session(const std::string &path)
    : bundle_(Bundle::load(path, "cpu")) {
  kernels_ = std::make_unique<KernelLibrary>(bundle_.kernelLibrary(),
                                             bundle_.kernels(), path);
  for (const ParamSpec &p : bundle_.params()) {
    size_t bytes = elements(p.shape) * sizeof(float);
    state_.params.emplace_back(bytes);
    state_.m.emplace_back(bytes);
    state_.v.emplace_back(bytes);
  }
}

int64_t Session::paramIndex(const std::string &name) const {
  for (size_t i = 0; i < bundle_.params().size(); ++i)
    if (bundle_.params()[i].name == name)
      return i;
  return -1;
}

void *Session::stateBuffer(const std::string &name) {
  int64_t p = paramIndex(name);
  if (p >= 0)
    return state_.params[p].data();
  for (auto [prefix, moments] : {std::pair{"adam_m.", &state_.m}, {"adam_v.", &state_.v}})
    if (name.rfind(prefix, 0) == 0 && (p = paramIndex(name.substr(7))) >= 0)
      return (*moments)[p].data();
  return nullptr;
}

StepRunner &Session::runner(const std::string &step) {
  auto &r = runners_[step];
  if (!r)
    r = std::make_unique<StepRunner>(bundle_.step(step), *kernels_);
  return *r;
}

void Session::initialize(uint64_t seed) {
  for (size_t i = 0; i < bundle_.params().size(); ++i) {
    const ParamSpec &p = bundle_.params()[i];
    initParameter(state_.params[i].as<float>(), p.shape, seed, i);
    std::memset(state_.m[i].data(), 0, state_.m[i].size());
    std::memset(state_.v[i].data(), 0, state_.v[i].size());
  }
  state_.step = 0;
  state_.seed = seed;
}

void Session::saveCheckpoint(const std::string &path) const {
  std::vector<Tensor> tensors;
  auto add = [&](const std::string &name, const ParamSpec &p, const AlignedBuffer &b) {
    Tensor t(name, DType::F32, p.shape);
    std::memcpy(t.bytes.data(), b.data(), t.bytes.size());
    tensors.push_back(std::move(t));
  };
  for (size_t i = 0; i < bundle_.params().size(); ++i) {
    const ParamSpec &p = bundle_.params()[i];
    add(p.name, p, state_.params[i]);
    add("optimizer.adam_m." + p.name, p, state_.m[i]);
    add("optimizer.adam_v." + p.name, p, state_.v[i]);
  }
  std::map<std::string, std::string> meta = {
      {"format", "pt"},
      {"fbt.model", config().at("name").asString()},
      {"fbt.step", std::to_string(state_.step)},
      {"fbt.seed", std::to_string(state_.seed)}};
  writeSafetensorsAtomic(path, tensors, meta);
}

void Session::loadCheckpoint(const std::string &path) {
  SafetensorsFile file = readSafetensors(path);
  auto fill = [&](const std::string &name, const ParamSpec &p, AlignedBuffer &b,
                  bool required) {
    const Tensor *t = file.find(name);
    if (!t) {
      if (required)
        throw RuntimeError(path + ": missing tensor '" + name +
                           "' (does this checkpoint belong to this bundle?)");
      std::memset(b.data(), 0, b.size());
      return;
    }
    if (t->shape != p.shape)
      throw RuntimeError(path + ": tensor '" + name + "' has shape " +
                         shapeString(t->shape) + ", the bundle expects " +
                         shapeString(p.shape));
    std::vector<float> values = t->toF32();
    for (float x : values)
      if (!std::isfinite(x))
        throw RuntimeError(path + ": tensor '" + name + "' holds NaN or Inf");
    std::memcpy(b.data(), values.data(), b.size());
  };
  for (size_t i = 0; i < bundle_.params().size(); ++i) {
    const ParamSpec &p = bundle_.params()[i];
    fill(p.name, p, state_.params[i], true);
    fill("optimizer.adam_m." + p.name, p, state_.m[i], false);
    fill("optimizer.adam_v." + p.name, p, state_.v[i], false);
  }
  auto meta = [&](const char *key, int64_t fallback) -> int64_t {
    auto it = file.metadata.find(key);
    return it == file.metadata.end() ? fallback : std::stoll(it->second);
  };
  state_.step = meta("fbt.step", 0);
  state_.seed = (uint64_t)meta("fbt.seed", 0);
}

namespace {
/// Binds a step's inputs by name from the session's state and the batch.
struct Binding {
  std::vector<void *> inputs, outputs;
  std::vector<AlignedBuffer> owned;
  void *own(size_t bytes) {
    owned.emplace_back(bytes);
    return owned.back().data();
  }
};
} // namespace

static Binding bindTrainInputs(Session &s, const StepPlan &plan, const int32_t *ids,
                               const int32_t *targets, int64_t *seed, float *lr,
                               float *stepCount) {
  Binding b;
  const std::map<std::string, void *> batch = {
      {"input_ids", const_cast<int32_t *>(ids)},
      {"targets", const_cast<int32_t *>(targets)},
      {"seed", seed},
      {"lr", lr},
      {"step", stepCount}};
  for (const TensorSpec &in : plan.inputs) {
    void *ptr = s.stateBuffer(in.name);
    if (!ptr) {
      auto it = batch.find(in.name);
      if (it == batch.end() || !it->second)
        throw RuntimeError("step '" + plan.name + "' takes an input '" +
                           in.name + "' this runtime cannot bind");
      ptr = it->second;
    }
    b.inputs.push_back(ptr);
  }
  for (const TensorSpec &out : plan.outputs)
    b.outputs.push_back(out.updates >= 0 ? nullptr : b.own(out.bytes));
  return b;
}

static StepResult readLosses(const StepPlan &plan, const Binding &b) {
  StepResult r;
  auto out = [&](const char *name) -> const float * {
    int64_t i = plan.outputIndex(name);
    return i < 0 ? nullptr : static_cast<const float *>(b.outputs[i]);
  };
  r.loss = *out("loss");
  const float *per = out("pass_losses");
  r.passLosses.assign(per, per + std::max<int64_t>(plan.passes, 1));
  if (const float *gn = out("grad_norm"))
    r.gradNorm = *gn;
  return r;
}

StepResult Session::trainStep(int64_t passes, const int32_t *ids,
                              const int32_t *targets, uint64_t seed, float lr) {
  std::string name = "train_k" + std::to_string(passes);
  StepRunner &run = runner(name);
  int64_t seedValue = (int64_t)seed;
  float stepCount = (float)(state_.step + 1); // AdamW counts from 1
  Binding b = bindTrainInputs(*this, run.plan(), ids, targets, &seedValue, &lr,
                              &stepCount);
  run.run(b.inputs, b.outputs);
  ++state_.step;
  StepResult r = readLosses(run.plan(), b);
  if (!std::isfinite(r.loss) || !std::isfinite(r.gradNorm))
    throw RuntimeError("the loss or the gradient norm is not finite at step " +
                       std::to_string(state_.step) +
                       " (try a lower learning rate); nothing was saved");
  return r;
}

StepResult Session::evalStep(int64_t passes, const int32_t *ids,
                             const int32_t *targets, uint64_t seed,
                             std::vector<AlignedBuffer> *grads) {
  std::string name = "train_k" + std::to_string(passes) + "_grads";
  StepRunner &run = runner(name);
  int64_t seedValue = (int64_t)seed;
  Binding b = bindTrainInputs(*this, run.plan(), ids, targets, &seedValue,
                              nullptr, nullptr);
  run.run(b.inputs, b.outputs);
  StepResult r = readLosses(run.plan(), b);
  if (grads) {
    grads->clear();
    for (const ParamSpec &p : bundle_.params()) {
      int64_t i = run.plan().outputIndex("grad." + p.name);
      if (i < 0)
        throw RuntimeError("step '" + name + "' has no gradient for " + p.name);
      grads->emplace_back(run.plan().outputs[i].bytes);
      std::memcpy(grads->back().data(), b.outputs[i], grads->back().size());
    }
  }
  return r;
}

} // namespace fbt
