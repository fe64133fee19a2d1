//===- Trainer.h - The training loop behind `fbt train` ---------*- C++ -*-===//
//
// A run is a pure function of (bundle, data, seed, steps, micro-batches).
// Step s (0-based)
//  - trains on a global batch of G micro-batches (RunSettings::microBatches,
//    1 unless several ranks or --accumulate share it): micro-batch j is
//    sampleBatch(train, B, T, seed, s, j, G) (text/TokenStream.h),
//  - at K = PassSchedule::passesAt(s) and lr = LrSchedule::at(s), both built
//    from the bundle's `training` config (Schedule.h),
//  - with the kernel seed kernelSeed(seed, s, j) for jitter and prefix mix-in.
// Rank r of N (the session's Channel) runs micro-batches r*A .. r*A + A-1,
// A = G / N, and the compiled step reduces the gradients over all of them:
// every random draw is a function of the step and the micro-batch, never of
// the rank, so N ranks x A micro-batches compute what 1 rank x N*A does (up
// to the order of the sums), and a run may resume on any N that divides G.
// Rank 0 alone writes the run directory; validation batches are shared out
// across the ranks and their losses summed.
// Nothing else carries over from one step to the next but the parameters and
// the AdamW moments, and the checkpoint holds those exactly (fp32), so
// resuming from the checkpoint of step n replays steps n, n+1, ... exactly
// as the uninterrupted run does: the same losses and the same bytes.
//
// An output directory holds
//   run.json               the settings (RunSettings), so `--resume DIR`
//                          continues the same run without repeating options
//   metrics.jsonl          a line per step and a line per evaluation
//   latest.safetensors     every --save-every steps and at the end
//   step-<N>.safetensors   at the end of the run (N = its last step)
// Checkpoints are written atomically (temp file, fsync, rename), so a kill at
// any moment leaves latest.safetensors either the previous checkpoint or the
// new one, never a torn file.
//
// Metrics lines (`step` counts optimizer steps done, so the first is 1):
//   {"step":7,"passes":2,"loss":4.1,"pass_losses":[2.1,2.0],"lr":0.001,
//    "grad_norm":0.8,"tokens_per_s":41000,"elapsed_s":0.12}
//   {"step":10,"val_passes":3,"val_loss":6.1,"val_pass_losses":[2.1,2,2]}
// On resume from step n the file is cut back to the lines with step <= n
// (dropping what a killed run logged after its last checkpoint) and appended
// to, so it always reads as one uninterrupted run.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_TRAIN_TRAINER_H
#define FBT_RUNTIME_TRAIN_TRAINER_H

#include "runtime/base/Json.h"
#include "runtime/session/Session.h"
#include "runtime/text/DataSplits.h"
#include "runtime/text/TokenStream.h"
#include "runtime/train/MetricsLog.h"
#include "runtime/train/Schedule.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fbt {

/// What the user asked for. Unset fields come from the resumed run's
/// run.json, else from the bundle's config, else from the defaults noted.
struct TrainOptions {
  std::optional<std::string> data;    ///< "" or unset: the embedded corpus
  std::optional<std::string> tokenizer; ///< text data's tokenizer; "bytes"
  std::optional<double> valFraction;  ///< --data's validation part; default 0.1
  std::optional<double> testFraction; ///< --data's test part; default 0.1
  std::optional<int64_t> steps;       ///< default training.steps
  std::optional<uint64_t> seed;       ///< default training.seed
  std::optional<double> learningRate; ///< default training.learning_rate
  std::optional<int64_t> warmupSteps; ///< default training.warmup_steps
  std::optional<int64_t> evalEvery;   ///< default max(1, steps / 10)
  std::optional<int64_t> evalBatches; ///< default 4
  std::optional<int64_t> saveEvery;   ///< default evalEvery
  std::optional<int64_t> accumulate;  ///< micro-batches per rank and step;
                                      ///< default: the resumed run's G / N, else 1
  std::string outDir;    ///< "" : runs/<model name>, or the resumed run's dir
  std::string resume;    ///< a checkpoint file or a run directory; "" : fresh
  /// A fresh run from another run's weights (a checkpoint file or a run
  /// directory): its parameters, not its moments, step or schedule.
  std::string init;
  int64_t stopAfter = 0; ///< > 0: checkpoint and stop after this many steps
                         ///< (of --steps; the schedule is unchanged)
};

/// The weights a run began from (`--init`), as run.json records them.
struct InitSource {
  std::string checkpoint; ///< "" : the spec's initialization
  std::string model;      ///< the checkpoint's fbt.model ("" if it has none)
  int64_t step = 0;       ///< the checkpoint's fbt.step

  Json toJson() const;
};

/// The resolved settings of a run (what run.json records).
struct RunSettings {
  std::string data; ///< "" : the embedded corpus
  std::string tokenizer = "bytes"; ///< runtime/text/Tokenizer.h; in checkpoints too
  double valFraction = 0.1;  ///< 0: no validation
  double testFraction = 0.1; ///< for --data (the embedded corpus has its parts)
  int64_t steps = 0;
  uint64_t seed = 0;
  double learningRate = 0, minLearningRate = 0;
  int64_t warmupSteps = 0;
  InitSource init;
  int64_t evalEvery = 1, evalBatches = 4, saveEvery = 1;
  int64_t microBatches = 1; ///< G: the global batch, in compiled batches

  Json toJson() const;
};

/// One optimizer step, as logged.
struct StepRecord {
  int64_t step = 0; ///< steps done, including this one (1-based)
  int64_t passes = 1;
  float loss = 0;
  std::vector<float> passLosses;
  float lr = 0;
  float gradNorm = 0;
  double seconds = 0;         ///< this step's wall time (not logged)
  /// Of which this rank waited for the reductions (logged as collective_s
  /// when several ranks run).
  double collectiveSeconds = 0;
  int ranks = 1;
  double tokensPerSecond = 0; ///< B * T * G / seconds
  double elapsedSeconds = 0;  ///< since the run began, across resumes

  Json toJson() const;
};

/// Validation: the mean over the fixed validation batches.
struct EvalRecord {
  int64_t step = 0; ///< steps done when it ran
  int64_t passes = 1;
  double loss = 0;
  std::vector<double> passLosses;

  Json toJson() const;
};

struct TrainSummary {
  int64_t startStep = 0; ///< steps done before this process (resume)
  int64_t endStep = 0;   ///< steps done now
  int64_t totalSteps = 0;
  bool finished = false; ///< endStep == totalSteps
  /// The pass-1 training loss (the plain next-token loss, comparable across
  /// K) averaged over the first and the last `window` steps of the run.
  double firstLoss = 0, lastLoss = 0;
  int64_t window = 0;
  std::optional<EvalRecord> lastEval;
  double tokensPerSecond =
      0;                  ///< this process's steps, excluding evals and saves
  std::string checkpoint; ///< the last checkpoint written
};

/// Hooks for reporting progress; Trainer itself prints nothing.
class TrainObserver {
public:
  virtual ~TrainObserver() = default;
  virtual void started(const class Trainer &) {}
  virtual void stepDone(const StepRecord &) {}
  virtual void evaluated(const EvalRecord &) {}
};

class Trainer {
public:
  /// Resolves the settings, loads the data, checks that the bundle has every
  /// training step the schedule needs, initializes or resumes `session`, and
  /// prepares the output directory. Throws RuntimeError with one clear line
  /// for bad input (missing data, ids >= vocab, --steps 0, a checkpoint of
  /// another model, ...).
  Trainer(Session &session, const TrainOptions &options);

  /// Trains from startStep() to the end (or --stop-after), evaluating and
  /// checkpointing on the way. A non-finite loss throws, leaving the last
  /// checkpoint as it was.
  TrainSummary run(TrainObserver *observer = nullptr);

  const RunSettings &settings() const { return settings_; }
  const std::string &outDir() const { return outDir_; }
  int64_t startStep() const { return startStep_; }
  /// Where run() stops: settings().steps, or --stop-after.
  int64_t endStep() const { return endStep_; }
  int64_t batchSize() const { return batchSize_; }
  /// The ranks of the run, this one's, and its micro-batches per step.
  int ranks() const { return ranks_; }
  int rank() const { return rank_; }
  int64_t accumulate() const { return accumulate_; }
  int64_t seqLen() const { return seqLen_; }
  /// Tokens of a global batch: B * T * G.
  int64_t tokensPerStep() const { return batchSize_ * seqLen_ * settings_.microBatches; }
  int64_t evalPasses() const { return evalPasses_; }
  const PassSchedule &passSchedule() const { return passSchedule_; }
  const LrSchedule &lrSchedule() const { return lrSchedule_; }
  /// The data's train, validation and test parts.
  const DataSplits &splits() const { return split_; }
  /// The checkpoint resumed from ("" for a fresh run).
  const std::string &resumedFrom() const { return resumedFrom_; }
  /// The parameters a run from --init initialized as the spec says, since
  /// its checkpoint lacks them (empty otherwise).
  const std::vector<std::string> &initializedFresh() const { return initializedFresh_; }
  /// A fresh run whose output directory already held a run's checkpoint,
  /// which the first save replaces.
  bool replacesRun() const { return replacesRun_; }

  /// The seed the compiled step of step s, micro-batch j gets (jitter,
  /// prefix mix-in): k = mix(seed ^ (0x9E3779B97F4A7C15 * (s + 1))) for
  /// j = 0, mix(k ^ (0xD1B54A32D192ED03 * j)) after. It differs per step
  /// and micro-batch, and it is not the init seed itself (Random.h: the
  /// kernels' small streams would otherwise replay parameter init draws).
  static uint64_t kernelSeed(uint64_t seed, int64_t step, int64_t micro = 0);

private:
  void resolve(const TrainOptions &options, const Json *recorded,
               const std::map<std::string, std::string> &checkpointMeta);
  void resolveInit(const TrainOptions &options, const Json *recorded,
                   std::map<std::string, std::string> &tokenizerMeta);
  void loadData();
  void checkSteps();
  void restoreState(const std::string &checkpoint);
  void resolveRanks(const TrainOptions &options, const Json *recorded);
  void checkRanksAgree(const std::string &checkpoint);
  void prepareOutput(bool resuming);
  StepRecord trainOne(int64_t step);
  EvalRecord evaluate(int64_t stepsDone);
  void save(int64_t stepsDone, bool final);
  std::string lastCheckpointNote() const;

  Session &session_;
  RunSettings settings_;
  std::string outDir_, resumedFrom_;
  int64_t startStep_ = 0, endStep_ = 0, batchSize_ = 0, seqLen_ = 0;
  int rank_ = 0, ranks_ = 1;
  int64_t accumulate_ = 1;
  int64_t evalPasses_ = 0; ///< 0: no validation (--val-fraction 0)
  bool replacesRun_ = false;
  std::vector<std::string> initializedFresh_;
  PassSchedule passSchedule_;
  LrSchedule lrSchedule_;
  DataSplits split_;
  std::unique_ptr<ValBatches> valBatches_;
  std::unique_ptr<MetricsWriter> metrics_;
  /// Pass-1 losses of steps 1.. so far (from the kept metrics on resume).
  std::vector<double> firstPassLosses_;
  std::optional<EvalRecord> lastEval_;
  double elapsedBefore_ = 0; ///< elapsed_s at the resumed step
  std::string lastCheckpoint_;
  int64_t lastCheckpointStep_ = -1;
};

} // namespace fbt

#endif // FBT_RUNTIME_TRAIN_TRAINER_H
