//===- Schedule.cpp - Pass-count and learning-rate schedules --------------===//

#include "runtime/train/Schedule.h"

#include "runtime/base/Error.h"
#include "runtime/base/Random.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

namespace fbt {

static void require(bool ok, const char *field, const char *expected,
                    double got) {
  if (!ok) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", got);
    throw RuntimeError(std::string(field) + ": expected " + expected +
                       ", got " + buf);
  }
}

PassSchedule PassSchedule::ofModel(const ModelConfig &model, int64_t totalSteps,
                                   uint64_t seed) {
  const ModelConfig::Training &t = model.training;
  PassSchedule s;
  s.singlePassFraction = model.feedback.fusion == Fusion::None ? 1 : t.singlePassFraction;
  s.passes = t.passes;
  s.deepPassFraction = t.deepPassFraction;
  s.deepPasses = t.deepPasses;
  s.distribution = t.passDistribution;
  std::sort(s.distribution.begin(), s.distribution.end());
  s.totalSteps = totalSteps;
  s.seed = seed;
  s.validate();
  return s;
}

void PassSchedule::validate() const {
  require(singlePassFraction >= 0 && singlePassFraction <= 1,
          "single_pass_fraction", "a number in [0, 1]", singlePassFraction);
  require(passes >= 1, "passes", "an integer >= 1", double(passes));
  require(deepPassFraction >= 0 && deepPassFraction <= 1, "deep_pass_fraction",
          "a number in [0, 1]", deepPassFraction);
  require(deepPasses >= 1, "deep_passes", "an integer >= 1",
          double(deepPasses));
  require(totalSteps >= 1, "steps", "an integer >= 1", double(totalSteps));
  double total = 0;
  for (auto [k, w] : distribution) {
    require(k >= 2, "pass_distribution", "pass counts K >= 2", double(k));
    require(w >= 0, "pass_distribution", "weights >= 0", w);
    total += w;
  }
  if (!distribution.empty())
    require(std::fabs(total - 1) < 1e-6, "pass_distribution",
            "weights summing to 1", total);
}

int64_t PassSchedule::passesAt(int64_t step) const {
  if (static_cast<double>(step) <
      singlePassFraction * static_cast<double>(totalSteps))
    return 1;
  // A float in [0, 1) against p3: p3 = 0 never fires, p3 = 1 always does.
  float u =
      rng::uniform(seed, rng::streams::kSchedule, static_cast<uint64_t>(step));
  if (!distribution.empty()) {
    double cumulative = 0;
    for (auto [k, w] : distribution) {
      cumulative += w;
      if (w > 0 && static_cast<double>(u) < cumulative)
        return k;
    }
    for (auto it = distribution.rbegin(); it != distribution.rend(); ++it)
      if (it->second > 0) // rounding left u past the sum: the last K
        return it->first;
  }
  return static_cast<double>(u) < deepPassFraction ? deepPasses : passes;
}

int64_t PassSchedule::singlePassSteps() const {
  double edge = singlePassFraction * static_cast<double>(totalSteps);
  return std::min<int64_t>(totalSteps, static_cast<int64_t>(std::ceil(edge)));
}

std::vector<int64_t> PassSchedule::distinctPasses() const {
  std::vector<int64_t> ks;
  if (singlePassSteps() > 0)
    ks.push_back(1);
  if (singlePassSteps() < totalSteps && !distribution.empty()) {
    for (auto [k, w] : distribution)
      if (w > 0)
        ks.push_back(k);
  } else if (singlePassSteps() < totalSteps) {
    if (deepPassFraction < 1)
      ks.push_back(passes);
    if (deepPassFraction > 0)
      ks.push_back(deepPasses);
  }
  std::sort(ks.begin(), ks.end());
  ks.erase(std::unique(ks.begin(), ks.end()), ks.end());
  return ks;
}

void LrSchedule::validate() const {
  require(learningRate >= 0, "learning_rate", "a number >= 0", learningRate);
  require(minLearningRate >= 0 && minLearningRate <= learningRate,
          "min_learning_rate", "a number in [0, learning_rate]",
          minLearningRate);
  require(warmupSteps >= 0, "warmup_steps", "an integer >= 0",
          double(warmupSteps));
  require(totalSteps >= 1, "steps", "an integer >= 1", double(totalSteps));
}

double LrSchedule::at(int64_t step) const {
  if (step < warmupSteps)
    return learningRate * static_cast<double>(step + 1) /
           static_cast<double>(warmupSteps);
  if (step >= totalSteps)
    return minLearningRate;
  double progress = static_cast<double>(step - warmupSteps) /
                    static_cast<double>(totalSteps - warmupSteps);
  constexpr double kPi = 3.14159265358979323846;
  return minLearningRate + 0.5 * (learningRate - minLearningRate) *
                               (1.0 + std::cos(kPi * progress));
}

} // namespace fbt
