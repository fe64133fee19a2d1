//===- CmdTrain.cpp - fbt train: train a bundle's model -------------------===//
//
// Option parsing and the console around runtime/train/Trainer.h, which holds the
// loop itself: a progress bar on stderr (steps, loss, per-pass losses,
// tokens/s, ETA), a line per validation, and a summary on stdout at the end.
//
//===----------------------------------------------------------------------===//

#include "CommandLine.h"
#include "Commands.h"

#include "runtime/base/Error.h"
#include "runtime/base/Progress.h"
#include "runtime/hal/Channel.h"
#include "runtime/session/Session.h"
#include "runtime/train/Trainer.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace fbt {

namespace {

std::string fixed(double value, int digits = 3) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, value);
  return buf;
}

template <typename T> std::string joined(const std::vector<T> &values) {
  std::string s;
  for (const T &v : values)
    s += (s.empty() ? "" : " ") + fixed(v);
  return s;
}

/// The multi-pass phase's K: "K=2..8 uniform" or "K=2 40%, K=8 60%".
std::string describeDistribution(const PassSchedule &ps) {
  std::vector<std::pair<int64_t, double>> used;
  for (auto kw : ps.distribution)
    if (kw.second > 0)
      used.push_back(kw);
  bool uniform = used.size() > 1;
  for (size_t i = 1; i < used.size(); ++i)
    uniform &= used[i].first == used[i - 1].first + 1 &&
               std::fabs(used[i].second - used[0].second) < 1e-9;
  if (uniform)
    return "K=" + std::to_string(used.front().first) + ".." +
           std::to_string(used.back().first) + " uniform";
  std::string s;
  for (auto [k, w] : used) {
    char part[48];
    std::snprintf(part, sizeof part, "%sK=%lld %.3g%%", s.empty() ? "" : ", ",
                  (long long)k, 100 * w);
    s += part;
  }
  return s;
}

/// "K=1 for 100, then K=2 (3% at K=3)" or "K=1 for 50, then K=2..8 uniform".
std::string describe(const PassSchedule &ps) {
  int64_t single = ps.singlePassSteps();
  if (single == ps.totalSteps)
    return "K=1 throughout";
  char multi[96];
  std::snprintf(multi, sizeof multi, "K=%lld (%g%% at K=%lld)",
                (long long)ps.passes, 100 * ps.deepPassFraction,
                (long long)ps.deepPasses);
  if (ps.deepPassFraction == 0 || ps.deepPasses == ps.passes)
    std::snprintf(multi, sizeof multi, "K=%lld", (long long)ps.passes);
  if (!ps.distribution.empty())
    std::snprintf(multi, sizeof multi, "%s", describeDistribution(ps).c_str());
  if (single == 0)
    return multi;
  return "K=1 for " + std::to_string(single) + ", then " + multi;
}

/// What the console shows while the trainer runs.
class ConsoleReport : public TrainObserver {
public:
  ConsoleReport(Session &session, bool quiet)
      : session_(session), quiet_(quiet) {}

  void started(const Trainer &t) override {
    tokensPerStep_ = t.tokensPerStep();
    if (quiet_)
      return;
    const RunSettings &s = t.settings();
    std::fprintf(
        stderr, "model    %s: %s params, batch %lld x %lld tokens\n",
        session_.model().name.c_str(),
        ProgressBar::formatCount(session_.bundle().parameterCount()).c_str(),
        (long long)(t.batchSize() * t.settings().microBatches), (long long)t.seqLen());
    if (t.settings().microBatches > 1)
      std::fprintf(stderr, "ranks    %d x %lld micro-batches of %lld (%s)\n", t.ranks(),
                   (long long)t.accumulate(), (long long)t.batchSize(),
                   session_.channel().describe().c_str());
    if (session_.shardsOptimizer()) {
      double mib = 1024.0 * 1024.0;
      double whole = 2.0 * sizeof(float) * double(session_.bundle().parameterCount());
      std::fprintf(stderr, "zero     1: rank 0 keeps %.2f MiB of AdamW's %.2f MiB\n",
                   double(session_.momentBytes()) / mib, whole / mib);
    }
    std::fprintf(stderr, "schedule %lld steps: %s; lr %g -> %g (warmup %lld), seed %llu\n",
                 (long long)s.steps, describe(t.passSchedule()).c_str(),
                 s.learningRate, s.minLearningRate, (long long)s.warmupSteps,
                 (unsigned long long)s.seed);
    const DataSplits &parts = t.splits();
    std::string masked;
    if (parts.train.masked()) {
      char share[96];
      std::snprintf(share, sizeof share,
                    "; the loss counts %.1f%% of the training targets (instruction data)",
                    100.0 * double(parts.train.trainedTargets()) /
                        double(std::max<int64_t>(1, parts.train.size() - 1)));
      masked = share;
    }
    std::fprintf(stderr,
                 "data     %s: %s training, %s validation, %s test tokens (%s)%s\n",
                 parts.train.source().c_str(),
                 ProgressBar::formatCount(parts.train.size()).c_str(),
                 ProgressBar::formatCount(parts.validation.size()).c_str(),
                 ProgressBar::formatCount(parts.test.size()).c_str(),
                 parts.byDocument
                     ? (std::to_string(parts.documents[0]) + " / " +
                        std::to_string(parts.documents[1]) + " / " +
                        std::to_string(parts.documents[2]) + " documents")
                           .c_str()
                     : "too few documents: the parts are cut by tokens",
                 masked.c_str());
    if (const InitSource &init = s.init; !init.checkpoint.empty() && t.startStep() == 0) {
      std::string fresh;
      for (const std::string &name : t.initializedFresh())
        fresh += (fresh.empty() ? "" : ", ") + name;
      std::fprintf(stderr, "init     %s (model %s, step %lld): %s\n", init.checkpoint.c_str(),
                   init.model.empty() ? "unnamed" : init.model.c_str(), (long long)init.step,
                   fresh.empty() ? "every parameter loaded"
                                 : ("initialized as the spec says: " + fresh).c_str());
    }
    std::fprintf(stderr, "output   %s\n", t.outDir().c_str());
    if (t.replacesRun())
      std::fprintf(stderr,
                   "note: %s held a run; this one starts over and replaces "
                   "its checkpoints (--resume %s continues it instead)\n",
                   t.outDir().c_str(), t.outDir().c_str());
    if (!t.resumedFrom().empty())
      std::fprintf(stderr, "resuming from %s at step %lld\n",
                   t.resumedFrom().c_str(), (long long)t.startStep());
    bar_ = std::make_unique<ProgressBar>(s.steps, t.startStep());
  }

  void stepDone(const StepRecord &r) override {
    tokens_ += tokensPerStep_;
    seconds_ += r.seconds;
    if (!bar_)
      return;
    bar_->setField("loss", fixed(r.loss));
    bar_->setField("L_k", joined(r.passLosses));
    bar_->setTokensPerSecond(tokens_ / seconds_);
    bar_->update(r.step);
  }

  void evaluated(const EvalRecord &e) override {
    if (bar_)
      bar_->print("step " + std::to_string(e.step) + ": val loss " +
                  fixed(e.loss) + ", per pass (K=" + std::to_string(e.passes) +
                  ") " + joined(e.passLosses));
  }

  void finish() {
    if (bar_)
      bar_->finish();
  }

private:
  Session &session_;
  bool quiet_;
  std::unique_ptr<ProgressBar> bar_;
  int64_t tokensPerStep_ = 0;
  double tokens_ = 0, seconds_ = 0;
};

void printSummary(const TrainSummary &s, const std::string &bundle,
                  const std::string &outDir) {
  if (s.finished)
    std::printf("trained %lld steps (%lld..%lld of %lld)\n",
                (long long)(s.endStep - s.startStep),
                (long long)s.startStep + 1, (long long)s.endStep,
                (long long)s.totalSteps);
  else
    std::printf("stopped after step %lld of %lld; continue with: fbt train %s "
                "--resume %s\n",
                (long long)s.endStep, (long long)s.totalSteps, bundle.c_str(),
                outDir.c_str());
  // Pass 1 is the plain next-token loss at every K; the total loss is not
  // comparable across the schedule's change from K=1 to K=2.
  std::printf("train loss (pass 1): %s -> %s (mean of the first / last %lld "
              "steps)\n",
              fixed(s.firstLoss).c_str(), fixed(s.lastLoss).c_str(),
              (long long)s.window);
  if (s.lastEval)
    std::printf("val loss at step %lld: %s, per pass (K=%lld) %s\n",
                (long long)s.lastEval->step, fixed(s.lastEval->loss).c_str(),
                (long long)s.lastEval->passes,
                joined(s.lastEval->passLosses).c_str());
  std::printf("throughput: %s tokens/s\n",
              ProgressBar::formatCount(s.tokensPerSecond).c_str());
  std::printf("checkpoint: %s\n", s.checkpoint.c_str());
}

/// A non-negative integer option, if given.
std::optional<int64_t> intOption(const CommandLine &args, const char *name) {
  if (!args.has(name))
    return std::nullopt;
  return args.getInt(name, 0);
}

void declareOptions(CommandLine &args) {
  args.positional("BUNDLE", "the compiled bundle")
      .tunable()
      .text("data", "FILE",
            "UTF-8 text (byte-level tokens), .jsonl (a {\"text\"} document a "
            "line), .bin (uint16 ids) or .u32.bin (uint32 ids); default: the "
            "embedded corpus")
      .text("tokenizer", "T",
            "how text data becomes ids: bytes (default), gpt2:DIR, "
            "sp:FILE.model (see fbt tokenize); recorded in the run and its "
            "checkpoints for generate and eval")
      .number("val-fraction", "F",
              "--data: the documents before the test part holding about F of "
              "the tokens are the validation part (default 0.1; 0: no "
              "validation)")
      .number("test-fraction", "F",
              "--data: the last documents holding about F of the tokens are "
              "the test part, which training never reads (default 0.1; fbt "
              "eval reports on it)")
      .integer("steps", "N", "optimizer steps (default: the spec's training.steps)")
      .integer("seed", "S",
               "seeds init, batches, pass schedule and jitter (default: "
               "training.seed)")
      .number("lr", "LR",
              "peak learning rate (default: training.learning_rate); the "
              "cosine floor keeps its ratio to the peak")
      .integer("warmup", "N",
               "learning-rate warmup steps (default: training.warmup_steps)")
      .text("init", "PATH",
            "start a new run from a checkpoint's weights (a file, or a run "
            "directory's latest.safetensors): fresh optimizer and schedule; "
            "parameters it lacks (a plain model's feedback weights) start as "
            "the spec says, tensors of another shape or unknown to the spec "
            "are refused")
      .text("out", "DIR",
            "the run directory (default: runs/<model name>): run.json, "
            "metrics.jsonl, latest.safetensors and step-<N>.safetensors at "
            "the end")
      .integer("eval-every", "N", "validate every N steps (default: steps / 10)")
      .integer("eval-batches", "N",
               "validation batches per evaluation, their windows spread "
               "over the whole validation part (default 4)")
      .integer("save-every", "N",
               "write latest.safetensors every N steps (default: --eval-every)")
      .text("resume", "PATH",
            "continue from a checkpoint, or from a run directory's "
            "latest.safetensors; options not given come from the run's "
            "run.json, output goes to its directory unless --out says "
            "otherwise")
      .integer("stop-after", "N",
               "checkpoint and stop after step N, keeping the schedule of "
               "--steps (continue later with --resume)")
      .integer("accumulate", "A",
               "micro-batches per rank and optimizer step: the global batch "
               "is ranks x A compiled batches (default 1, or on --resume the "
               "run's global batch divided by the ranks)")
      .flag("quiet", "no progress bar or validation lines, only the summary");
}
} // namespace

int runTrain(int argc, char **argv) {
  CommandLine args(
      "fbt train",
      "Trains the bundle's model with its compiled steps, validating and\n"
      "checkpointing as it goes. A run is a pure function of the bundle, the\n"
      "data, the seed and the number of steps, so --resume continues it bit for\n"
      "bit.");
  declareOptions(args);
  if (!args.parse(argc, argv))
    return 0;
  std::string bundle = args.require("BUNDLE");

  TrainOptions o;
  if (args.has("data"))
    o.data = args.get("data");
  if (args.has("tokenizer"))
    o.tokenizer = args.get("tokenizer");
  if (args.has("val-fraction"))
    o.valFraction = args.getDouble("val-fraction", 0);
  if (args.has("test-fraction"))
    o.testFraction = args.getDouble("test-fraction", 0);
  if (args.has("lr"))
    o.learningRate = args.getDouble("lr", 0);
  o.warmupSteps = intOption(args, "warmup");
  o.init = args.get("init");
  o.steps = intOption(args, "steps");
  if (auto seed = intOption(args, "seed")) {
    if (*seed < 0)
      throw RuntimeError("--seed must be >= 0, got " + std::to_string(*seed));
    o.seed = static_cast<uint64_t>(*seed);
  }
  o.evalEvery = intOption(args, "eval-every");
  o.evalBatches = intOption(args, "eval-batches");
  o.saveEvery = intOption(args, "save-every");
  o.accumulate = intOption(args, "accumulate");
  o.outDir = args.get("out");
  o.resume = args.get("resume");
  o.stopAfter = args.getInt("stop-after", 0);
  if (args.has("stop-after") && o.stopAfter < 1)
    throw RuntimeError("--stop-after must be at least 1, got " +
                       std::to_string(o.stopAfter));

  // Under mpirun (or with RANK / WORLD_SIZE) each process is one rank of a
  // data-parallel run; the channel outlives the session that uses it.
  std::unique_ptr<Channel> channel;
  Session session(bundle);
  channel = openChannel(session.device());
  session.setChannel(*channel);
  try {
    useTuning(session, args.tuning());
    Trainer trainer(session, o);
    // Rank 0 speaks for the run.
    ConsoleReport report(session, args.has("quiet") || channel->rank() != 0);
    TrainSummary summary = trainer.run(&report);
    report.finish();
    if (channel->rank() == 0)
      printSummary(summary, bundle, trainer.outDir());
  } catch (const RuntimeError &e) {
    if (channel->size() == 1)
      throw;
    // The other ranks would wait for this one's collectives: end them all.
    std::fprintf(stderr, "fbt: error: %s%s\n",
                 std::string(e.what()).rfind("rank ", 0) == 0 ? "" : channel->who().c_str(),
                 e.what());
    channel->abort(2);
  }
  return 0;
}

} // namespace fbt
