//===- Measurer.h - timing kernel variants inside the real steps -*- C++ -*-===//
//
// Internal to the tune room: the probe the tuner sets on every runner while
// it measures. Before each sampled kernel call it times every variant of
// the kernel (and before each sampled GEMM call every algorithm) on the
// call's own arguments, restoring what they overwrite, and tallies the
// medians per step.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_TUNE_MEASURER_H
#define FBT_RUNTIME_TUNE_MEASURER_H

#include "runtime/base/Bf16.h"
#include "runtime/base/Error.h"
#include "runtime/base/Hash.h"
#include "runtime/base/Median.h"
#include "runtime/base/Progress.h"
#include "runtime/session/Session.h"
#include "runtime/tune/TuneKeys.h"
#include "runtime/tune/Timing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace fbt::tune {

/// The probe on every runner while measuring: it times the variants of the
/// sampled kernel calls and the algorithms of the sampled GEMM calls.
class Measurer : public CallProbe {
public:
  Measurer(const Bundle &bundle, const TuneSettings &settings, double deadline)
      : bundle_(bundle), settings_(settings), deadline_(deadline) {
    for (const std::string &s : settings.steps)
      steps_.insert(s);
  }

  void beforeCall(StepRunner &runner, size_t op) override {
    const StepPlan &plan = runner.plan();
    if (!steps_.empty() && !steps_.count(plan.name))
      return;
    const PlanOp &call = plan.ops[op];
    const std::string key = callKey(call);
    auto variants = bundle_.variants().find(call.kernel);
    if (call.isKernel() && variants == bundle_.variants().end())
      return;
    int &sampled = sampled_[{plan.name, key}];
    if (sampled >= settings_.callsPerStep)
      return;
    if (settings_.clock() > deadline_) {
      outOfBudget = true;
      return;
    }
    ++sampled;
    if (call.isGemm())
      measureGemm(runner, op, key);
    else
      measureKernel(runner, op, variants->second);
  }

  /// Per kernel (or GEMM shape), per variant (or algorithm): why it was
  /// rejected, and per step the sum over the sampled calls of its median
  /// times the step's calls of the kernel, with the number of samples.
  struct Tally {
    std::vector<std::string> rejected; ///< one per variant ("" if kept)
    std::map<std::string, std::pair<std::vector<double>, int>> perStep;
  };
  std::map<std::string, Tally> kernels, gemms;
  std::map<std::string, std::string> gemmShapes; // key -> shape
  bool outOfBudget = false;

private:
  /// The call's arguments as they are now.
  std::vector<std::string> save(StepRunner &runner, size_t op) {
    const PlanOp &call = runner.plan().ops[op];
    std::vector<std::string> args(call.args.size());
    for (size_t a = 0; a < args.size(); ++a) {
      args[a].resize(call.args[a].bytes);
      runner.readArgument(op, a, args[a].data());
    }
    return args;
  }
  void restore(StepRunner &runner, size_t op, const std::vector<std::string> &args,
               const std::vector<size_t> &which) {
    for (size_t a : which)
      runner.writeArgument(op, a, args[a].data());
  }

  static int callsOf(const StepPlan &plan, const std::string &key, bool gemm) {
    int n = 0;
    for (const PlanOp &o : plan.ops)
      n += gemm ? (o.isGemm() && callKey(o) == key) : o.kernel == key;
    return n;
  }

  void measureKernel(StepRunner &runner, size_t op, const KernelVariants &variants) {
    const StepPlan &plan = runner.plan();
    const PlanOp &call = plan.ops[op];
    size_t count = variants.builds.size();
    Tally &t = kernels[call.kernel];
    t.rejected.resize(count);
    std::vector<size_t> all(call.args.size());
    for (size_t a = 0; a < all.size(); ++a)
      all[a] = a;
    std::vector<std::string> before = save(runner, op);

    // The default's results, and which arguments a call writes.
    runner.callVariant(op, variants.builds[0].symbol);
    std::vector<std::string> want = save(runner, op);
    std::vector<size_t> written;
    for (size_t a = 0; a < all.size(); ++a)
      if (want[a] != before[a])
        written.push_back(a);
    std::vector<size_t> accepted{0};
    for (size_t v = 1; v < count; ++v) {
      if (!t.rejected[v].empty())
        continue;
      restore(runner, op, before, all);
      try {
        runner.callVariant(op, variants.builds[v].symbol);
      } catch (const RuntimeError &e) {
        t.rejected[v] = e.what();
        continue;
      }
      std::vector<std::string> got = save(runner, op);
      for (size_t a = 0; a < all.size() && t.rejected[v].empty(); ++a) {
        std::string why;
        DType type = a < variants.args.size() ? variants.args[a] : DType::F32;
        if (!resultsMatch(type, want[a].data(), got[a].data(), want[a].size(), why))
          t.rejected[v] = "argument " + std::to_string(a) + " differs from the "
                          "default's in step '" + plan.name + "': " + why;
      }
      if (t.rejected[v].empty())
        accepted.push_back(v);
    }
    std::vector<double> medians = timeAlternatives(
        accepted.size(),
        [&](size_t i) { runner.callVariant(op, variants.builds[accepted[i]].symbol); },
        [&] { restore(runner, op, before, written); }, settings_.clock, settings_.warmup,
        settings_.repeats);
    int calls = callsOf(plan, call.kernel, false);
    auto &[sum, samples] = t.perStep[plan.name];
    sum.resize(count, 0);
    ++samples;
    for (size_t i = 0; i < accepted.size(); ++i)
      sum[accepted[i]] += medians[i] * calls;
    restore(runner, op, before, all); // the real call runs on what was there
  }

  void measureGemm(StepRunner &runner, size_t op, const std::string &key) {
    int count = runner.gemmAlgorithms(op);
    if (count < 2)
      return;
    const StepPlan &plan = runner.plan();
    const PlanOp &call = plan.ops[op];
    gemmShapes[key] = gemmShapeKey(call);
    Tally &t = gemms[key];
    t.rejected.resize(count);
    // beta = 0: the result is all a GEMM writes, and it reads nothing of it.
    std::vector<std::string> before = save(runner, op);
    runner.callGemm(op, 0);
    std::vector<std::string> want = save(runner, op);
    std::vector<size_t> accepted{0};
    float most = 0;
    std::vector<float> wide = widen(call.resultType, want[2]);
    for (float v : wide)
      most = std::max(most, std::fabs(v));
    for (int a = 1; a < count; ++a) {
      if (!t.rejected[a].empty())
        continue;
      try {
        runner.callGemm(op, a);
      } catch (const RuntimeError &e) {
        t.rejected[a] = e.what();
        continue;
      }
      std::vector<float> got = widen(call.resultType, save(runner, op)[2]);
      // Algorithms split and order the k sum differently: within 1% of
      // the result's largest magnitude.
      for (size_t i = 0; i < got.size() && t.rejected[a].empty(); ++i)
        if (!(std::fabs(got[i] - wide[i]) <= 1e-2f * most + 1e-6f))
          t.rejected[a] = "element " + std::to_string(i) + " differs from algorithm 0's";
      if (t.rejected[a].empty())
        accepted.push_back(a);
    }
    std::vector<double> medians = timeAlternatives(
        accepted.size(), [&](size_t i) { runner.callGemm(op, accepted[i]); }, [] {},
        settings_.clock, settings_.warmup, settings_.repeats);
    int calls = callsOf(plan, key, true);
    auto &[sum, samples] = t.perStep[plan.name];
    sum.resize(count, 0);
    ++samples;
    for (size_t i = 0; i < accepted.size(); ++i)
      sum[accepted[i]] += medians[i] * calls;
    runner.writeArgument(op, 2, before[2].data());
  }

  static std::vector<float> widen(DType type, const std::string &bytes) {
    std::vector<float> v;
    if (type == DType::BF16) {
      for (size_t i = 0; i + 1 < bytes.size(); i += 2) {
        uint16_t h;
        std::memcpy(&h, bytes.data() + i, 2);
        v.push_back(bf16ToFloat(h));
      }
    } else {
      v.resize(bytes.size() / 4);
      std::memcpy(v.data(), bytes.data(), v.size() * 4);
    }
    return v;
  }

  const Bundle &bundle_;
  const TuneSettings &settings_;
  double deadline_;
  std::set<std::string> steps_;
  std::map<std::pair<std::string, std::string>, int> sampled_;
};

/// Per-variant seconds of a tally: each step's sum over its samples,
/// averaged, then summed over steps.
inline std::vector<double> totals(const Measurer::Tally &t) {
  std::vector<double> total(t.rejected.size(), 0);
  for (const auto &[step, entry] : t.perStep)
    for (size_t i = 0; i < entry.first.size() && i < total.size(); ++i)
      total[i] += entry.first[i] / std::max(1, entry.second);
  return total;
}

//===----------------------------------------------------------------------===//
// The workloads: what runs the bundle's steps
//===----------------------------------------------------------------------===//

} // namespace fbt::tune

#endif // FBT_RUNTIME_TUNE_MEASURER_H
