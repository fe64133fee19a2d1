//===- Session.cpp - a loaded bundle ready to run ---------------------------===//

#include "runtime/session/Session.h"

#include "runtime/base/Error.h"
#include "runtime/format/Safetensors.h"
#include "runtime/format/StepNames.h"
#include "runtime/session/ParamInit.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>

namespace fbt {

Session::Session(const std::string &path)
    : bundle_(Bundle::load(path)), model_(parseModelConfig(bundle_.model())),
      device_(openDevice(bundle_)) {
  for (const ParamSpec &p : bundle_.params()) {
    size_t bytes = shapeElements(p.shape) * sizeof(float);
    state_.params.emplace_back(*device_, bytes, "parameter '" + p.name + "'");
  }
  for (const auto &[name, plan] : bundle_.steps())
    for (const PlanOp &op : plan.ops)
      shardsOptimizer_ = shardsOptimizer_ || !op.shard.empty();
}

bool Session::shardsOptimizer() const { return shardsOptimizer_; }

bool Session::keepsMoments(size_t index) {
  return !shardsOptimizer() || sync().owns(bundle_.params().at(index).name);
}

void Session::allocateMoments() {
  if (!state_.m.empty())
    return;
  for (size_t i = 0; i < bundle_.params().size(); ++i) {
    const ParamSpec &p = bundle_.params()[i];
    if (!keepsMoments(i)) {
      state_.m.emplace_back();
      state_.v.emplace_back();
      continue;
    }
    size_t bytes = shapeElements(p.shape) * sizeof(float);
    state_.m.emplace_back(*device_, bytes, "AdamW moment of '" + p.name + "'");
    state_.v.emplace_back(*device_, bytes, "AdamW moment of '" + p.name + "'");
  }
}

int64_t Session::momentBytes() {
  allocateMoments();
  int64_t bytes = 0;
  for (size_t i = 0; i < state_.m.size(); ++i)
    bytes += int64_t(state_.m[i].size() + state_.v[i].size());
  return bytes;
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
    if (name.rfind(prefix, 0) == 0 && (p = paramIndex(name.substr(7))) >= 0) {
      allocateMoments();
      // Null where another rank keeps them: only its calls read them.
      return (*moments)[p].size() ? (*moments)[p].data() : nullptr;
    }
  return inferenceWeight(name);
}

std::vector<float> Session::parameter(size_t index) const {
  const DeviceBuffer &b = state_.params.at(index);
  std::vector<float> values(b.size() / sizeof(float));
  device_->download(values.data(), b.data(), b.size());
  return values;
}

void Session::selectBuilds(KernelChoice kernels, GemmChoice gemms) {
  if (!runners_.empty())
    throw RuntimeError("the tune cache must be applied before any step runs");
  device_->selectKernels(std::move(kernels));
  device_->selectGemms(gemms);
  tuned_ = true;
}

StepRunner &Session::runner(const std::string &step) {
  auto &r = runners_[step];
  if (!r) {
    r = device_->makeRunner(bundle_.step(step));
    r->setProbe(probe_);
    r->setCollectives(&sync());
    auto training = [](const StepPlan &p) {
      return p.kind == StepKind::Train || p.kind == StepKind::Grads ||
             p.kind == StepKind::Eval;
    };
    if (training(r->plan())) {
      if (!trainingArena_.size()) {
        int64_t bytes = 0;
        for (const auto &[name, plan] : bundle_.steps())
          if (training(plan))
            bytes = std::max(bytes, plan.arenaBytes);
        trainingArena_ = DeviceBuffer(*device_, size_t(std::max<int64_t>(bytes, 1)),
                                      "the training steps' arena");
      }
      r->shareArena(trainingArena_.data(), int64_t(trainingArena_.size()));
    }
  }
  return *r;
}

void Session::setChannel(Channel &channel) {
  if (sync_)
    throw RuntimeError("a session joins its ranks before any step runs");
  channel_ = &channel;
}

Channel &Session::channel() {
  if (!channel_) {
    localChannel_ = localChannel(*device_);
    channel_ = localChannel_.get();
  }
  return *channel_;
}

GradientSync &Session::sync() {
  if (!sync_)
    sync_ = std::make_unique<GradientSync>(*device_, channel(), bundle_.params());
  return *sync_;
}

void Session::setProbe(CallProbe *probe) {
  probe_ = probe;
  for (auto &[name, r] : runners_)
    r->setProbe(probe);
}

void Session::releaseSteps() {
  bindings_.clear();
  runners_.clear();
  trainingArena_ = DeviceBuffer();
}

void Session::initialize(uint64_t seed) {
  // The feedback weights start as the spec's recipe says (feedback.init,
  // feedback.init_std); the shared weights as GPT-2's.
  InitKind feedbackKind = InitKind::Normal;
  float feedbackStd = kDefaultInitStddev;
  const ModelConfig::Feedback &fb = model_.feedback;
  if (fb.init)
    feedbackKind = *fb.init == "uniform" ? InitKind::Uniform : InitKind::Normal;
  if (fb.initStd)
    feedbackStd = static_cast<float>(*fb.initStd);
  allocateMoments();
  for (size_t i = 0; i < bundle_.params().size(); ++i) {
    const ParamSpec &p = bundle_.params()[i];
    std::vector<float> values(state_.params[i].size() / sizeof(float));
    if (p.feedback)
      initParameter(values.data(), p.shape, seed, i, feedbackStd, feedbackKind);
    else
      initParameter(values.data(), p.shape, seed, i);
    device_->upload(state_.params[i].data(), values.data(), state_.params[i].size());
    for (DeviceBuffer *moment : {&state_.m[i], &state_.v[i]})
      if (moment->size())
        device_->zero(moment->data(), moment->size());
  }
  state_.step = 0;
  state_.seed = seed;
  parametersChanged();
}

StepBinding &Session::trainBinding(const std::string &step, bool update) {
  auto &b = bindings_[step];
  if (!b) {
    std::set<std::string> batch = {"input_ids", "targets", "seed"};
    if (update)
      batch.insert({"lr", "step"});
    allocateMoments();
    std::set<std::string> elsewhere; // ZeRO-1: moments other ranks keep
    for (size_t i = 0; i < bundle_.params().size(); ++i)
      if (!state_.m[i].size())
        elsewhere.insert({"adam_m." + bundle_.params()[i].name,
                          "adam_v." + bundle_.params()[i].name});
    b = std::make_unique<StepBinding>(
        *device_, bundle_.step(step),
        [&](const std::string &name) { return stateBuffer(name); }, batch,
        "this runtime", model_.vocabSize, elsewhere);
  }
  return *b;
}

namespace {
/// Binds the batch: [B, T] ids and targets, and the kernel seed.
void setBatch(StepBinding &b, const StepPlan &plan, const int32_t *ids,
              const int32_t *targets, const int64_t *seed) {
  for (const char *name : {"input_ids", "targets"}) {
    int64_t i = plan.inputIndex(name);
    if (i >= 0)
      b.set(name, name[0] == 'i' ? ids : targets, plan.inputs[i].bytes);
  }
  b.set("seed", seed, sizeof(*seed));
}

StepResult readLosses(const StepPlan &plan, const StepBinding &b) {
  StepResult r;
  b.read("loss", &r.loss, sizeof(float));
  r.passLosses.resize(std::max<int64_t>(plan.passes, 1));
  b.read("pass_losses", r.passLosses.data(), r.passLosses.size() * sizeof(float));
  if (b.hasOutput("grad_norm"))
    b.read("grad_norm", &r.gradNorm, sizeof(float));
  return r;
}
} // namespace

StepResult Session::trainStep(int64_t passes, const int32_t *ids,
                              const int32_t *targets, uint64_t seed, float lr) {
  std::string name = step::train(passes);
  StepRunner &run = runner(name);
  StepBinding &b = trainBinding(name, true);
  int64_t seedValue = (int64_t)seed;
  float stepCount = (float)(state_.step + 1); // AdamW counts from 1
  setBatch(b, run.plan(), ids, targets, &seedValue);
  b.set("lr", &lr, sizeof(lr));
  b.set("step", &stepCount, sizeof(stepCount));
  try {
    b.run(run);
  } catch (...) {
    sync().reset();
    throw;
  }
  sync().reset();
  ++state_.step;
  parametersChanged();
  StepResult r = readLosses(run.plan(), b);
  if (!std::isfinite(r.loss) || !std::isfinite(r.gradNorm))
    throw RuntimeError("the loss or the gradient norm is not finite at step " +
                       std::to_string(state_.step) +
                       " (try a lower learning rate); nothing was saved");
  return r;
}

StepResult Session::evalStep(int64_t passes, const int32_t *ids, const int32_t *targets) {
  std::string name = step::eval(passes);
  StepRunner &run = runner(name);
  StepBinding &b = trainBinding(name, false);
  refreshInferenceWeights();
  int64_t unusedSeed = 0;
  setBatch(b, run.plan(), ids, targets, &unusedSeed);
  b.run(run);
  return readLosses(run.plan(), b);
}

int64_t Session::evalPasses() const {
  for (const auto &[name, plan] : bundle_.steps())
    if (plan.kind == StepKind::Eval)
      return plan.passes;
  return 0;
}

StepResult Session::accumulateStep(int64_t passes, const int32_t *ids,
                                   const int32_t *targets, uint64_t seed) {
  // Everything the training step reduces, under the names it reduces them by.
  std::vector<AlignedBuffer> grads;
  StepResult r = gradientStep(passes, ids, targets, seed, &grads);
  for (size_t i = 0; i < grads.size(); ++i)
    sync().accumulate("grad." + bundle_.params()[i].name, grads[i].as<float>(),
                      grads[i].size() / sizeof(float));
  sync().accumulate("loss", &r.loss, 1);
  sync().accumulate("pass_losses", r.passLosses.data(), r.passLosses.size());
  sync().finishMicroBatch();
  return r;
}

StepResult Session::gradientStep(int64_t passes, const int32_t *ids,
                                 const int32_t *targets, uint64_t seed,
                                 std::vector<AlignedBuffer> *grads) {
  std::string name = step::trainGrads(passes);
  StepRunner &run = runner(name);
  StepBinding &b = trainBinding(name, false);
  int64_t seedValue = (int64_t)seed;
  setBatch(b, run.plan(), ids, targets, &seedValue);
  b.run(run);
  StepResult r = readLosses(run.plan(), b);
  if (grads) {
    grads->clear();
    for (const ParamSpec &p : bundle_.params()) {
      int64_t i = run.plan().outputIndex("grad." + p.name);
      if (i < 0)
        throw RuntimeError("step '" + name + "' has no gradient for " + p.name);
      grads->emplace_back(run.plan().outputs[i].bytes);
      b.read("grad." + p.name, grads->back().data(), grads->back().size());
    }
  }
  return r;
}

} // namespace fbt
