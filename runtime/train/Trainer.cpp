//===- Trainer.cpp - The training loop behind `fbt train` -----------------===//

#include "runtime/train/Trainer.h"

#include "runtime/base/Error.h"
#include "runtime/base/FaultInjection.h"
#include "runtime/base/FileIO.h"
#include "runtime/base/Hash.h"
#include "runtime/base/Random.h"
#include "runtime/format/Safetensors.h"
#include "runtime/format/StepNames.h"
#include "runtime/text/DefaultCorpus.h"
#include "runtime/text/TokenFiles.h"
#include "runtime/train/RunDirectory.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

namespace fbt {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;

double secondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

/// Timings to `digits` decimals for the metrics file: more is noise.
double rounded(double value, int digits) {
  double scale = std::pow(10.0, digits);
  return std::round(value * scale) / scale;
}

//===----------------------------------------------------------------------===//
// Settings
//===----------------------------------------------------------------------===//

/// Reads recorded settings with errors that name run.json.
class Recorded {
public:
  Recorded(const Json *json, std::string source)
      : json_(json), source_(std::move(source)) {}
  const Json *find(const char *key) const {
    const Json *v = json_ ? jsonFind(*json_, key) : nullptr;
    return v && !v->is_null() ? v : nullptr;
  }
  template <typename F> auto get(const char *key, F read) const {
    try {
      return read(*find(key));
    } catch (const RuntimeError &e) {
      throw RuntimeError(source_ + ": '" + key + "': " + e.what());
    }
  }
  std::optional<int64_t> integer(const char *key) const {
    if (!find(key))
      return std::nullopt;
    return get(key, [](const Json &v) { return asInt(v); });
  }
  std::optional<double> number(const char *key) const {
    if (!find(key))
      return std::nullopt;
    return get(key, [](const Json &v) { return asDouble(v); });
  }

private:
  const Json *json_;
  std::string source_;
};

bool isDecimal(const std::string &s) {
  return !s.empty() && s.size() <= 19 &&
         s.find_first_not_of("0123456789") == std::string::npos;
}

std::string formatNumber(double value) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", value);
  return buf;
}

void requireAtLeast(int64_t value, int64_t least, const char *option) {
  if (value < least)
    throw RuntimeError(std::string(option) + " must be at least " +
                       std::to_string(least) + ", got " +
                       std::to_string(value));
}

} // namespace

//===----------------------------------------------------------------------===//
// Records
//===----------------------------------------------------------------------===//

Json InitSource::toJson() const {
  if (checkpoint.empty())
    return Json();
  return Json::object({{"checkpoint", checkpoint}, {"model", model}, {"step", step}});
}

Json RunSettings::toJson() const {
  return Json::object({
      {"data", data.empty() ? Json() : Json(data)},
      {"tokenizer", tokenizer},
      {"val_fraction", valFraction},
      {"test_fraction", testFraction},
      {"steps", steps},
      {"seed", static_cast<int64_t>(seed)},
      {"learning_rate", learningRate},
      {"min_learning_rate", minLearningRate},
      {"warmup_steps", warmupSteps},
      {"init", init.toJson()},
      {"eval_every", evalEvery},
      {"eval_batches", evalBatches},
      {"save_every", saveEvery},
      {"micro_batches", microBatches},
  });
}

Json StepRecord::toJson() const {
  Json losses = Json::array();
  for (float l : passLosses)
    losses.push_back(jsonFloat(l));
  Json j = Json::object({
      {"step", step},
      {"passes", passes},
      {"loss", jsonFloat(loss)},
      {"pass_losses", std::move(losses)},
      {"lr", jsonFloat(lr)},
      {"grad_norm", jsonFloat(gradNorm)},
      {"tokens_per_s", rounded(tokensPerSecond, 1)},
      {"elapsed_s", rounded(elapsedSeconds, 3)},
  });
  if (ranks > 1)
    j["collective_s"] = rounded(collectiveSeconds, 5);
  return j;
}

Json EvalRecord::toJson() const {
  Json::array_t losses(passLosses.begin(), passLosses.end());
  return Json::object({
      {"step", step},
      {"val_passes", passes},
      {"val_loss", loss},
      {"val_pass_losses", std::move(losses)},
  });
}

//===----------------------------------------------------------------------===//
// Trainer
//===----------------------------------------------------------------------===//

uint64_t Trainer::kernelSeed(uint64_t seed, int64_t step, int64_t micro) {
  uint64_t k = rng::mix(seed ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(step + 1)));
  if (micro == 0)
    return k; // the one micro-batch of a single-rank run, as before there were more
  return rng::mix(k ^ (0xD1B54A32D192ED03ull * static_cast<uint64_t>(micro)));
}

Trainer::Trainer(Session &session, const TrainOptions &options)
    : session_(session) {
  std::string model = session_.model().name;
  ResumePoint from = findResumePoint(options.resume, model);
  const Json *recorded = from.recorded.is_null() ? nullptr : &from.recorded;
  resolveInit(options, recorded, from.metadata);
  resolve(options, recorded, from.metadata);
  resolveRanks(options, from.recorded.is_null() ? nullptr : &from.recorded);
  loadData();
  checkSteps();
  outDir_ = !options.outDir.empty()   ? options.outDir
            : from.checkpoint.empty() ? joinPath("runs", model)
                                      : from.directory;
  restoreState(from.checkpoint);
  checkRanksAgree(from.checkpoint);
  endStep_ = settings_.steps;
  if (options.stopAfter > 0) {
    if (options.stopAfter <= startStep_)
      throw RuntimeError("--stop-after " + std::to_string(options.stopAfter) +
                         " is not after the resumed step " +
                         std::to_string(startStep_));
    endStep_ = std::min(endStep_, options.stopAfter);
  }
  prepareOutput(!from.checkpoint.empty());
}

/// The global batch G: N ranks x --accumulate A, else what the resumed run
/// recorded (then A = G / N), else N.
void Trainer::resolveRanks(const TrainOptions &o, const Json *recordedJson) {
  Channel &channel = session_.channel();
  rank_ = channel.rank();
  ranks_ = channel.size();
  Recorded rec(recordedJson, "run.json");
  std::optional<int64_t> recorded = rec.integer("micro_batches");
  std::string launched = std::to_string(ranks_) + " rank" + (ranks_ > 1 ? "s" : "");
  if (o.accumulate) {
    requireAtLeast(*o.accumulate, 1, "--accumulate");
    accumulate_ = *o.accumulate;
    if (recorded && *recorded != ranks_ * accumulate_)
      throw RuntimeError("the resumed run's global batch is " + std::to_string(*recorded) +
                         " micro-batches, but " + launched + " x --accumulate " +
                         std::to_string(accumulate_) + " make " +
                         std::to_string(ranks_ * accumulate_) +
                         " (omit --accumulate to derive it)");
  } else if (recorded) {
    if (*recorded < 1 || *recorded % ranks_)
      throw RuntimeError("the resumed run's global batch is " + std::to_string(*recorded) +
                         " micro-batches, which " + launched + " cannot share evenly");
    accumulate_ = *recorded / ranks_;
  }
  settings_.microBatches = ranks_ * accumulate_;
}

/// Every rank must run the same bundle, settings and starting state: each
/// one's fingerprint of them, compared before the first step.
void Trainer::checkRanksAgree(const std::string &checkpoint) {
  Channel &channel = session_.channel();
  if (channel.size() == 1)
    return;
  auto agree = [&](uint64_t mine, const std::string &what, const std::string &fix) {
    std::vector<uint64_t> all = channel.allGatherHost(mine);
    std::string differ;
    for (size_t r = 1; r < all.size(); ++r)
      if (all[r] != all[0])
        differ += (differ.empty() ? "" : ", ") + std::to_string(r);
    if (!differ.empty())
      throw RuntimeError(channel.who() +
                         (differ.find(',') == std::string::npos ? "rank " : "ranks ") +
                         differ + " started with a different " + what + " than rank 0; " + fix);
  };
  agree(fnvMix(kFnvBasis, dumpJson(session_.bundle().manifest())), "bundle",
        "every rank must load the same bundle");
  agree(fnvMix(kFnvBasis, dumpJson(settings_.toJson())), "run (data, steps, seed, lr, ...)",
        "every rank must be given the same options");
  uint64_t state = fnvMix(kFnvBasis, std::to_string(session_.state().step));
  for (size_t i = 0; i < session_.bundle().params().size(); ++i) {
    std::vector<float> p = session_.parameter(i);
    state = fnv1a64(p.data(), p.size() * sizeof(float), state);
  }
  agree(state, checkpoint.empty() ? "initial model" : "checkpoint (" + checkpoint + ")",
        "every rank must resume from the same checkpoint");
}

/// A fresh model from the seed, or the checkpoint's parameters, moments and
/// step count.
void Trainer::restoreState(const std::string &checkpoint) {
  if (checkpoint.empty()) {
    // A fresh run starts over in a directory that holds one (as rerunning a
    // script expects); the old latest survives until the first save.
    std::error_code ec;
    replacesRun_ = fs::exists(joinPath(outDir_, "latest.safetensors"), ec);
    session_.initialize(settings_.seed);
    if (!settings_.init.checkpoint.empty())
      initializedFresh_ = session_.loadWeights(settings_.init.checkpoint);
    return;
  }
  session_.loadCheckpoint(checkpoint);
  // The checkpoint records the seed its run continues with.
  session_.state().seed = settings_.seed;
  startStep_ = session_.state().step;
  resumedFrom_ = lastCheckpoint_ = checkpoint;
  lastCheckpointStep_ = startStep_;
  if (startStep_ >= settings_.steps)
    throw RuntimeError(checkpoint + " has already taken " +
                       std::to_string(startStep_) + " of " +
                       std::to_string(settings_.steps) +
                       " steps: nothing to do (pass a larger --steps to "
                       "train further)");
}

/// --init: the checkpoint a fresh run starts from, what it says of itself,
/// and its tokenizer, which the run must keep (`meta`, for resolve). A
/// resumed run keeps the source its run.json records.
void Trainer::resolveInit(const TrainOptions &o, const Json *recordedJson,
                          std::map<std::string, std::string> &meta) {
  InitSource &init = settings_.init;
  if (o.init.empty()) {
    Recorded rec(recordedJson, "run.json");
    if (rec.find("init"))
      init = rec.get("init", [](const Json &v) {
        return InitSource{asString(jsonAt(v, "checkpoint")),
                          asString(jsonAt(v, "model")), asInt(jsonAt(v, "step"))};
      });
    return;
  }
  if (!o.resume.empty())
    throw RuntimeError("--init starts a new run from a checkpoint's weights and "
                       "--resume continues a run: pass one of them");
  init.checkpoint = checkpointToResume(o.init);
  std::map<std::string, std::string> header;
  try { // the header alone; Session::loadWeights reports a bad file
    header = readSafetensorsHeader(init.checkpoint).metadata;
  } catch (const RuntimeError &) {
  }
  if (auto m = header.find("fbt.model"); m != header.end())
    init.model = m->second;
  if (auto s = header.find("fbt.step"); s != header.end() && isDecimal(s->second))
    init.step = std::stoll(s->second);
  // The embedding rows are the source's tokens: its tokenizer comes along.
  meta.clear();
  if (auto t = header.find("fbt.tokenizer"); t != header.end())
    meta["fbt.tokenizer"] = t->second;
}

/// Each setting: the option, else what the resumed run recorded, else the
/// bundle's config (or the default).
void Trainer::resolve(const TrainOptions &o, const Json *recordedJson,
                      const std::map<std::string, std::string> &meta) {
  const ModelConfig::Training &t = session_.model().training;
  Recorded rec(recordedJson, "run.json");
  RunSettings &s = settings_;

  if (o.data)
    s.data = *o.data;
  else if (rec.find("data"))
    s.data = rec.get("data", [](const Json &v) { return asString(v); });
  // The tokenizer: asked for, else the run's (run.json, the checkpoint).
  std::string recorded = "bytes";
  if (rec.find("tokenizer"))
    recorded = rec.get("tokenizer", [](const Json &v) { return asString(v); });
  else if (auto m = meta.find("fbt.tokenizer"); m != meta.end())
    recorded = m->second;
  if (o.tokenizer && (recordedJson || meta.count("fbt.tokenizer")) &&
      canonicalTokenizerName(*o.tokenizer) != canonicalTokenizerName(recorded))
    throw RuntimeError("--tokenizer " + *o.tokenizer + ": the weights this run " +
                       (o.init.empty() ? "continues" : "starts from") +
                       " were trained on text tokenized with " + recorded);
  s.tokenizer = canonicalTokenizerName(o.tokenizer.value_or(recorded));
  session_.setTokenizer(s.tokenizer);
  s.valFraction =
      o.valFraction.value_or(rec.number("val_fraction").value_or(0.1));
  // A run recorded before test parts existed held out validation only.
  s.testFraction = o.testFraction.value_or(
      rec.number("test_fraction").value_or(rec.find("val_fraction") ? 0.0 : 0.1));
  s.steps =
      o.steps.value_or(rec.integer("steps").value_or(t.steps));

  if (o.seed)
    s.seed = *o.seed;
  else if (auto r = rec.integer("seed"))
    s.seed = static_cast<uint64_t>(*r);
  else if (auto m = meta.find("fbt.seed");
           m != meta.end() && isDecimal(m->second))
    s.seed = std::stoull(m->second);
  else
    s.seed = t.seed;

  // --lr scales the whole schedule: the floor keeps its ratio to the peak.
  double specLr = t.learningRate;
  double specMin = t.minLearningRate;
  if (o.learningRate) {
    s.learningRate = *o.learningRate;
    s.minLearningRate = specLr > 0 ? specMin * s.learningRate / specLr
                                   : std::min(specMin, s.learningRate);
  } else {
    s.learningRate = rec.number("learning_rate").value_or(specLr);
    s.minLearningRate = rec.number("min_learning_rate").value_or(specMin);
  }

  s.warmupSteps = o.warmupSteps.value_or(
      rec.integer("warmup_steps").value_or(t.warmupSteps));
  requireAtLeast(s.warmupSteps, 0, "--warmup");

  s.evalEvery = o.evalEvery.value_or(
      rec.integer("eval_every").value_or(std::max<int64_t>(1, s.steps / 10)));
  s.evalBatches =
      o.evalBatches.value_or(rec.integer("eval_batches").value_or(4));
  s.saveEvery =
      o.saveEvery.value_or(rec.integer("save_every").value_or(s.evalEvery));

  requireAtLeast(s.steps, 1, "--steps");
  requireAtLeast(s.evalEvery, 1, "--eval-every");
  requireAtLeast(s.evalBatches, 1, "--eval-batches");
  requireAtLeast(s.saveEvery, 1, "--save-every");
  if (!(s.valFraction >= 0 && s.valFraction < 1))
    throw RuntimeError("--val-fraction must be in [0, 1), got " +
                       formatNumber(s.valFraction));
  if (!(s.testFraction >= 0 && s.testFraction < 1 && s.valFraction + s.testFraction < 1))
    throw RuntimeError("--test-fraction must be in [0, 1) and leave a training part "
                       "beside --val-fraction, got " + formatNumber(s.testFraction));
  if (s.data.empty() && ((o.valFraction && *o.valFraction != 0) || o.testFraction))
    throw RuntimeError("the embedded corpus has its own validation and test parts: "
                       "--val-fraction and --test-fraction apply to --data "
                       "(--val-fraction 0 turns validation off)");
  if (!(std::isfinite(s.learningRate) && s.learningRate >= 0))
    throw RuntimeError("--lr must be a finite number >= 0");
}

void Trainer::loadData() {
  const ModelConfig &config = session_.model();
  int64_t vocab = config.vocabSize;
  batchSize_ = config.training.batchSize;
  seqLen_ = config.training.sequenceLength;

  if (settings_.data.empty()) {
    if (vocab < kByteVocabSize)
      throw RuntimeError("the embedded corpus is byte-level text and needs a "
                         "vocab size of at least 256, the model has " +
                         std::to_string(vocab) + "; pass --data");
    split_ = defaultCorpusSplits();
  } else {
    // Checks ids < vocab; text goes through the run's tokenizer.
    TokenStream tokens = loadTokenFile(settings_.data, vocab, TokenFileFormat::Auto, {},
                                       &session_.tokenizer());
    split_ = splitData(tokens, int32_t(config.bosTokenId), settings_.valFraction,
                       settings_.testFraction);
  }
  if (split_.train.size() < seqLen_ + 1)
    throw RuntimeError(
        split_.train.source() + ": " + std::to_string(split_.train.size()) +
        " training tokens (after holding out --val-fraction " +
        formatNumber(settings_.valFraction) + " and --test-fraction " +
        formatNumber(settings_.testFraction) + "), too few for one window of " +
        std::to_string(seqLen_ + 1));
  // Instruction data whose every target is masked (no assistant turn) would
  // train on nothing: a loss of 0 and checkpoints that say nothing.
  if (split_.train.masked() && split_.train.trainedTargets() == 0)
    throw RuntimeError(split_.train.source() + ": no token of the training part is a target "
                       "the loss counts (instruction data without an assistant answer): "
                       "nothing to train on");
  if (settings_.valFraction == 0)
    return;
  try {
    // Windows spread over the whole validation part.
    valBatches_ = std::make_unique<ValBatches>(split_.validation, batchSize_, seqLen_,
                                               settings_.evalBatches * batchSize_);
  } catch (const RuntimeError &e) {
    throw RuntimeError(std::string(e.what()) +
                       "; raise --val-fraction, or set it to 0 to train "
                       "without validation");
  }
}

/// The schedules, and the compiled steps they need.
void Trainer::checkSteps() {
  const ModelConfig &config = session_.model();
  const Bundle &bundle = session_.bundle();
  passSchedule_ = PassSchedule::ofModel(config, settings_.steps, settings_.seed);

  lrSchedule_.learningRate = settings_.learningRate;
  lrSchedule_.minLearningRate = settings_.minLearningRate;
  lrSchedule_.warmupSteps = settings_.warmupSteps;
  lrSchedule_.totalSteps = settings_.steps;
  lrSchedule_.validate();

  std::string have;
  for (const auto &[name, plan] : bundle.steps())
    if (plan.kind == StepKind::Train)
      have += (have.empty() ? "" : ", ") + name;
  evalPasses_ = session_.evalPasses();
  for (int64_t k : passSchedule_.distinctPasses())
    if (!bundle.hasStep(step::train(k)))
      throw RuntimeError("the pass schedule needs the step '" +
                         step::train(k) +
                         "', which the bundle lacks (it has: " + have + ")");
  if (!valBatches_)
    evalPasses_ = 0;
  else if (evalPasses_ == 0)
    throw RuntimeError("the bundle has no eval_k<K> step to validate with "
                       "(recompile it with this fbtc, or pass --val-fraction "
                       "0 to train without)");
}

void Trainer::prepareOutput(bool resuming) {
  if (rank_ != 0)
    return; // rank 0 keeps the run directory
  std::error_code ec;
  fs::create_directories(outDir_, ec);
  if (ec || !fs::is_directory(outDir_))
    throw RuntimeError(outDir_ + ": cannot create the output directory" +
                       (ec ? ": " + ec.message() : std::string()));
  removeStaleTempFiles(outDir_);
  std::string runJson = dumpJson(settings_.toJson(), 2) + "\n";
  writeFileAtomic(joinPath(outDir_, "run.json"), {runJson});

  std::string metricsPath = joinPath(outDir_, "metrics.jsonl");
  if (!resuming) {
    metrics_ = std::make_unique<MetricsWriter>(metricsPath,
                                               MetricsWriter::Mode::Truncate);
    return;
  }
  // Pick up the loss history and the clock where the checkpoint left them.
  for (const Json &r : keepMetricsThrough(metricsPath, startStep_)) {
    if (const Json *losses = jsonFind(r, "pass_losses"))
      firstPassLosses_.push_back(asDouble(jsonAt(*losses, 0)));
    if (const Json *elapsed = jsonFind(r, "elapsed_s"))
      elapsedBefore_ = asDouble(*elapsed);
    if (const Json *val = jsonFind(r, "val_loss")) {
      EvalRecord e;
      e.step = asInt(jsonAt(r, "step"));
      e.passes = asInt(jsonAt(r, "val_passes"));
      e.loss = asDouble(*val);
      for (const Json &l : asArray(jsonAt(r, "val_pass_losses")))
        e.passLosses.push_back(asDouble(l));
      lastEval_ = e;
    }
  }
  metrics_ =
      std::make_unique<MetricsWriter>(metricsPath, MetricsWriter::Mode::Append);
}

std::string Trainer::lastCheckpointNote() const {
  if (lastCheckpoint_.empty())
    return "no checkpoint was written";
  return "the last checkpoint, " + lastCheckpoint_ + " (step " +
         std::to_string(lastCheckpointStep_) + "), is intact";
}

StepRecord Trainer::trainOne(int64_t step) {
  StepRecord r;
  r.step = step + 1;
  r.passes = passSchedule_.passesAt(step);
  r.lr = static_cast<float>(lrSchedule_.at(step));
  StepResult result;
  try {
    // This rank's micro-batches; the last one's step reduces them all.
    for (int64_t a = 0; a < accumulate_; ++a) {
      int64_t micro = rank_ * accumulate_ + a;
      Batch batch = sampleBatch(split_.train, batchSize_, seqLen_, settings_.seed, step,
                                micro, settings_.microBatches);
      uint64_t seed = kernelSeed(settings_.seed, step, micro);
      if (a + 1 < accumulate_)
        session_.accumulateStep(r.passes, batch.inputs.data(), batch.targets.data(), seed);
      else
        result = session_.trainStep(r.passes, batch.inputs.data(), batch.targets.data(),
                                    seed, r.lr);
    }
  } catch (const RuntimeError &e) {
    // A non-finite loss: the parameters in memory are lost, the files not.
    throw RuntimeError(std::string(e.what()) + "; " + lastCheckpointNote());
  }
  r.loss = result.loss;
  r.passLosses = result.passLosses;
  r.gradNorm = result.gradNorm;
  return r;
}

// Validation runs the compiled eval_k<K> step on held-out windows: the
// per-pass losses in inference mode (no jitter, no prefix mix-in, the state
// fed back from t = 1), what decoding will see. The jittered training
// objective stays in the step lines (loss, pass_losses).
EvalRecord Trainer::evaluate(int64_t stepsDone) {
  EvalRecord e;
  e.step = stepsDone;
  e.passes = evalPasses_;
  // [loss, pass losses...]: this rank's share of the batches (i % N), then
  // the sum over the ranks.
  std::vector<double> sums(1 + evalPasses_, 0.0);
  int64_t n = valBatches_->size();
  for (int64_t i = rank_; i < n; i += ranks_) {
    Batch batch = (*valBatches_)[i];
    StepResult r;
    try {
      r = session_.evalStep(evalPasses_, batch.inputs.data(), batch.targets.data());
    } catch (const RuntimeError &e) {
      throw RuntimeError(std::string(e.what()) + "; " + lastCheckpointNote());
    }
    sums[0] += double(r.loss) / double(n);
    for (int64_t k = 0; k < evalPasses_; ++k)
      sums[1 + k] += double(r.passLosses[k]) / double(n);
  }
  session_.channel().allReduceHost(sums.data(), (int64_t)sums.size());
  e.loss = sums[0];
  e.passLosses.assign(sums.begin() + 1, sums.end());
  return e;
}

void Trainer::save(int64_t stepsDone, bool final) {
  lastCheckpoint_ = joinPath(outDir_, "latest.safetensors");
  lastCheckpointStep_ = stepsDone;
  // Every rank holds the same model (and, under ZeRO-1, its share of the
  // moments): each takes part, rank 0 writes.
  if (final)
    session_.saveCheckpoint(joinPath(
        outDir_, "step-" + std::to_string(stepsDone) + ".safetensors"));
  session_.saveCheckpoint(lastCheckpoint_);
}

TrainSummary Trainer::run(TrainObserver *observer) {
  if (observer)
    observer->started(*this);
  Clock::time_point began = Clock::now();
  auto evaluateAndLog = [&](int64_t stepsDone) {
    lastEval_ = evaluate(stepsDone);
    if (metrics_)
      metrics_->write(lastEval_->toJson());
    if (observer)
      observer->evaluated(*lastEval_);
  };
  if (startStep_ == 0 && valBatches_)
    evaluateAndLog(0); // the baseline: ~ln(vocab) per pass

  double trainSeconds = 0;
  for (int64_t step = startStep_; step < endStep_; ++step) {
    fault::atStep(rank_, step);
    Clock::time_point t0 = Clock::now();
    double waited = session_.collectiveSeconds();
    StepRecord r = trainOne(step);
    r.seconds = secondsSince(t0);
    r.collectiveSeconds = session_.collectiveSeconds() - waited;
    r.ranks = ranks_;
    r.tokensPerSecond = double(tokensPerStep()) / r.seconds;
    r.elapsedSeconds = elapsedBefore_ + secondsSince(began);
    trainSeconds += r.seconds;
    if (metrics_)
      metrics_->write(r.toJson());
    firstPassLosses_.push_back(r.passLosses[0]);
    if (observer)
      observer->stepDone(r);

    int64_t done = step + 1;
    bool last = done == settings_.steps;
    if (valBatches_ && (done % settings_.evalEvery == 0 || last))
      evaluateAndLog(done);
    // Saved after the evaluation, so a checkpoint's metrics are complete.
    if (last || done % settings_.saveEvery == 0 || done == endStep_)
      save(done, last);
  }

  TrainSummary s;
  s.startStep = startStep_;
  s.endStep = endStep_;
  s.totalSteps = settings_.steps;
  s.finished = endStep_ == settings_.steps;
  int64_t n = static_cast<int64_t>(firstPassLosses_.size());
  s.window = std::max<int64_t>(1, n / 10);
  for (int64_t i = 0; i < s.window; ++i) {
    s.firstLoss += firstPassLosses_[i] / s.window;
    s.lastLoss += firstPassLosses_[n - 1 - i] / s.window;
  }
  s.lastEval = lastEval_;
  s.tokensPerSecond = double((endStep_ - startStep_) * tokensPerStep()) / trainSeconds;
  s.checkpoint = s.finished
                     ? joinPath(outDir_, "step-" + std::to_string(endStep_) +
                                             ".safetensors")
                     : lastCheckpoint_;
  return s;
}

} // namespace fbt
