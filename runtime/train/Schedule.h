//===- Schedule.h - Pass-count and learning-rate schedules ------*- C++ -*-===//
//
// Both schedules are pure functions of the step, so a resumed run picks up
// exactly where it stopped. A run's pass schedule is the spec's, as the
// bundle holds it (PassSchedule::ofModel): its defaults are the frontend's
// alone (frontend/Spec.h), never restated here.
//
// Pass schedule (DESIGN.md section 2, "progressive"): K = 1 while step <
// singlePassFraction * totalSteps; afterwards each step runs K =
// deepPasses with probability deepPassFraction and K = passes otherwise.
// The deep draw is uniform(seed, streams::kSchedule, step) < deepPassFraction
// (Random.h), so which steps are deep depends on nothing but seed and step.
// With a `distribution` ({K, weight}, weights summing to 1, ascending K) the
// same draw u picks the first K whose cumulative weight exceeds u.
//
// Learning rate: linear warmup from 0, lr * (step + 1) / warmupSteps for
// step < warmupSteps, then cosine decay from lr at step warmupSteps to
// minLearningRate at step totalSteps (and minLearningRate from then on).
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_TRAIN_SCHEDULE_H
#define FBT_RUNTIME_TRAIN_SCHEDULE_H

#include "runtime/format/ModelConfig.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace fbt {

struct PassSchedule {
  double singlePassFraction = 0; ///< f: the K = 1 phase, fraction of steps
  int64_t passes = 0;            ///< K2: the multi-pass phase's K
  double deepPassFraction = 0;   ///< p3: fraction of multi-pass steps at K3
  int64_t deepPasses = 0;        ///< K3
  /// The multi-pass phase's K as {K, weight}; replaces K2/K3/p3 when given.
  std::vector<std::pair<int64_t, double>> distribution;
  int64_t totalSteps = 0;        ///< N
  uint64_t seed = 0;

  /// The schedule `model`'s spec defines ("training"), over `totalSteps`
  /// steps drawn with `seed`; without a feedback path (fusion none) every
  /// step is one pass. Validated.
  static PassSchedule ofModel(const ModelConfig &model, int64_t totalSteps, uint64_t seed);

  /// Throws RuntimeError naming the first field out of range.
  void validate() const;
  /// The number of passes of `step` (0-based).
  int64_t passesAt(int64_t step) const;
  /// Steps 0 .. n-1 run K = 1; n = ceil(f * N).
  int64_t singlePassSteps() const;
  /// Every K that passesAt can return over steps 0 .. N-1, ascending: the
  /// compiled training steps a run needs.
  std::vector<int64_t> distinctPasses() const;
};

struct LrSchedule {
  double learningRate = 0;
  double minLearningRate = 0;
  int64_t warmupSteps = 0;
  int64_t totalSteps = 0;

  /// Throws RuntimeError naming the first field out of range.
  void validate() const;
  /// The learning rate of `step` (0-based).
  double at(int64_t step) const;
};

} // namespace fbt

#endif // FBT_RUNTIME_TRAIN_SCHEDULE_H
