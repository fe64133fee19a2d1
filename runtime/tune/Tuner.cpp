//===- Tuner.cpp - choosing kernel variants and GEMM algorithms -----------===//

#include "runtime/tune/Tuner.h"

#include "runtime/base/Bf16.h"
#include "runtime/base/Error.h"
#include "runtime/base/Hash.h"
#include "runtime/base/Median.h"
#include "runtime/base/Progress.h"
#include "runtime/base/Random.h"
#include "runtime/decode/Decoder.h"
#include "runtime/format/StepNames.h"
#include "runtime/session/Session.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <memory>
#include <set>
#include <unistd.h>

namespace fbt {

//===----------------------------------------------------------------------===//
// Applying the cache
//===----------------------------------------------------------------------===//

namespace {
/// What the tuner calls a GEMM shape among kernels: "gemm:<shape>".
std::string gemmKey(const std::string &shape) { return "gemm:" + shape; }
/// A plan call's key: its kernel, or its GEMM's.
std::string callKey(const PlanOp &op) {
  return op.isGemm() ? gemmKey(gemmShapeKey(op)) : op.kernel;
}

/// What a device is told to run for each GEMM shape.
GemmChoice gemmAlgorithms(const std::vector<TunedGemm> &gemms) {
  GemmChoice algorithms;
  for (const TunedGemm &g : gemms)
    algorithms[g.shape] = (int)g.algorithm;
  return algorithms;
}
} // namespace

std::string bundleKey(const Bundle &bundle) {
  uint64_t h = kFnvBasis;
  for (const char *blob : {"kernels.so", "kernels.ptx", "kernels.cubin"})
    if (const std::string *b = bundle.blob(blob))
      h = fnvMix(fnvMix(h, blob), *b);
  if (const Json *v = jsonFind(bundle.manifest(), "variants"))
    h = fnvMix(h, dumpJson(*v));
  h = fnvMix(h, dumpJson(jsonAt(bundle.manifest(), "target")));
  return hexDigits(h);
}

KernelChoice loadKernelChoice(const Bundle &bundle, const Json &deviceKey,
                              const TuneOptions &options, std::string &note,
                              std::vector<TunedGemm> *gemms) {
  note.clear();
  if (!options.enabled)
    return {};
  bool named = !options.path.empty();
  std::string path = named ? options.path : tuneCachePath(deviceKey);
  if (::access(path.c_str(), F_OK) != 0) {
    if (named)
      tuneWarning("no tune cache at " + path + "; using the default kernels");
    return {};
  }
  TuneCache cache;
  try {
    cache = readTuneCache(path);
  } catch (const std::exception &e) {
    tuneWarning(std::string(e.what()) + "; using the default kernels");
    return {};
  }
  if (cache.device != deviceKey) {
    tuneWarning("tune cache " + path + " is for another device (" +
                dumpJson(cache.device) + "); using the default kernels");
    return {};
  }
  auto it = cache.entries.find(bundleKey(bundle));
  if (it == cache.entries.end()) {
    if (named)
      tuneWarning("tune cache " + path + " has no entry for " + bundle.path() +
                  " (tuned for another build of it?); using the default kernels");
    return {};
  }
  // Every choice must still be a variant of its kernel, built as recorded.
  const VariantTable &variants = bundle.variants();
  KernelChoice choice;
  for (const auto &[kernel, tuned] : it->second.kernels) {
    auto v = variants.find(kernel);
    bool found = false;
    if (v != variants.end())
      for (const KernelVariant &b : v->second.builds)
        found |= b.symbol == tuned.symbol && b.config == tuned.config;
    if (!found) {
      tuneWarning("tune cache " + path + " is stale: '" + tuned.symbol +
                  "' is not a variant of '" + kernel + "' in " + bundle.path() +
                  "; using the default kernels");
      return {};
    }
    if (tuned.symbol != kernel)
      choice[kernel] = tuned.symbol;
  }
  if (gemms)
    *gemms = it->second.gemms;
  note = "using tuned kernels from " + path + " (" + std::to_string(choice.size()) +
         " of " + std::to_string(variants.size()) + " tunable kernels changed, " +
         std::to_string(it->second.gemms.size()) + " GEMM shapes)";
  return choice;
}

bool useTuning(Session &session, const TuneOptions &options) {
  std::string note;
  std::vector<TunedGemm> gemms;
  Json key = session.device().tuneKey();
  KernelChoice choice = loadKernelChoice(session.bundle(), key, options, note, &gemms);
  bool tuned = !note.empty();
  // A bundle specialized by fbtc --tuned carries its choices: its kernels
  // are the chosen builds, and its GEMM algorithms hold on that device only.
  if (!tuned && options.enabled && session.bundle().tuned()) {
    const TunedBuild &t = *session.bundle().tuned();
    tuned = true;
    if (t.device == key) {
      for (const auto &[shape, algorithm] : t.gemmAlgorithms)
        gemms.push_back({shape, algorithm, 1});
      note = "using the kernels and GEMM algorithms tuned on " + t.tunedAt +
             " that this bundle was compiled with";
    } else {
      note = "using the kernels this bundle was tuned with, on another device (" +
             dumpJson(t.device) + "); its GEMM algorithms are not used here";
    }
  }
  if (!tuned)
    return false;
  session.selectBuilds(std::move(choice), gemmAlgorithms(gemms));
  std::fprintf(stderr, "fbt: %s\n", note.c_str());
  return true;
}

//===----------------------------------------------------------------------===//
// Measuring
//===----------------------------------------------------------------------===//

bool resultsMatch(DType type, const void *want, const void *got, size_t bytes,
                  std::string &why) {
  if (std::memcmp(want, got, bytes) == 0)
    return true;
  if (type != DType::F32 && type != DType::BF16) {
    why = "integers differ";
    return false;
  }
  bool bf16 = type == DType::BF16;
  size_t n = bytes / (bf16 ? 2 : 4);
  double atol = bf16 ? 1e-2 : 1e-4, rtol = bf16 ? 1.0 / 64 : 1e-3;
  for (size_t i = 0; i < n; ++i) {
    float w, g;
    if (bf16) {
      w = bf16ToFloat(static_cast<const uint16_t *>(want)[i]);
      g = bf16ToFloat(static_cast<const uint16_t *>(got)[i]);
    } else {
      w = static_cast<const float *>(want)[i];
      g = static_cast<const float *>(got)[i];
    }
    if (std::isnan(w) && std::isnan(g))
      continue;
    if (!(std::fabs((double)g - w) <= atol + rtol * std::fabs((double)w))) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "element %zu is %.7g, the default's %.7g", i, g, w);
      why = buf;
      return false;
    }
  }
  return true;
}

size_t chooseVariant(const std::vector<VariantTiming> &timings) {
  if (timings.empty() || !timings[0].rejected.empty() || timings[0].seconds <= 0)
    return 0;
  size_t best = 0;
  for (size_t i = 1; i < timings.size(); ++i)
    if (timings[i].rejected.empty() && timings[i].seconds < timings[best].seconds)
      best = i; // strictly faster: a tie keeps the earlier
  return timings[0].seconds >= kMinGain * timings[best].seconds ? best : 0;
}

std::vector<double> timeAlternatives(size_t count, const std::function<void(size_t)> &run,
                                     const std::function<void()> &restore,
                                     const std::function<double()> &clock, int warmup,
                                     int repeats) {
  std::vector<std::vector<double>> samples(count);
  for (int round = 0; round < warmup + repeats; ++round)
    for (size_t i = 0; i < count; ++i) {
      restore();
      double start = clock();
      run(i);
      double seconds = clock() - start;
      if (round >= warmup)
        samples[i].push_back(seconds);
    }
  std::vector<double> medians;
  for (auto &s : samples)
    medians.push_back(median(std::move(s)));
  return medians;
}

std::map<std::string, std::string>
choicesToPutBack(const std::map<std::string, StepTiming> &steps,
                 const std::map<std::string, std::set<std::string>> &calls,
                 const std::set<std::string> &chosen) {
  std::map<std::string, std::string> back;
  for (const auto &[workload, t] : steps) {
    auto keys = calls.find(workload);
    if (t.tunedSeconds <= kMinGain * t.defaultSeconds || keys == calls.end())
      continue;
    for (const std::string &key : keys->second)
      if (chosen.count(key))
        back.emplace(key, "made " + workload + " slower in the step");
  }
  return back;
}

namespace {
double steadySeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

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
std::vector<double> totals(const Measurer::Tally &t) {
  std::vector<double> total(t.rejected.size(), 0);
  for (const auto &[step, entry] : t.perStep)
    for (size_t i = 0; i < entry.first.size() && i < total.size(); ++i)
      total[i] += entry.first[i] / std::max(1, entry.second);
  return total;
}

//===----------------------------------------------------------------------===//
// The workloads: what runs the bundle's steps
//===----------------------------------------------------------------------===//

/// One way of running steps: a training step, an evaluation, generation in
/// a regime. run(session, i) runs it once, with inputs varied by i;
/// runs(step) says whether it runs that step.
struct Workload {
  std::string name;
  std::function<void(Session &, int64_t)> run;
  std::function<bool(const std::string &)> runs;
};

bool startsWith(const std::string &s, const std::string &prefix) { return s.rfind(prefix, 0) == 0; }

std::vector<Workload> workloads(const Bundle &bundle, const ModelConfig &c) {
  std::vector<Workload> list;
  auto tokens = [&c](int64_t n, uint64_t stream, int64_t i) {
    return rng::syntheticIds(n, c.vocabSize, stream, uint64_t(i));
  };
  using namespace rng::streams;
  int64_t bt = c.training.batchSize * c.training.sequenceLength;
  for (const auto &[name, plan] : bundle.steps()) {
    int64_t k = step::passesOf(name);
    if (k == 0)
      continue;
    auto itself = [name = name](const std::string &step) { return step == name; };
    if (plan.kind == StepKind::Train)
      list.push_back({name,
                      [=](Session &s, int64_t i) {
                        s.trainStep(k, tokens(bt, kSyntheticIds, i).data(), tokens(bt, kSyntheticTargets, i).data(), i,
                                    1e-4f);
                      },
                      itself});
    else if (plan.kind == StepKind::Grads)
      list.push_back({name,
                      [=](Session &s, int64_t i) {
                        s.gradientStep(k, tokens(bt, kSyntheticIds, i).data(), tokens(bt, kSyntheticTargets, i).data(), i);
                      },
                      itself});
    else if (plan.kind == StepKind::Eval)
      list.push_back({name,
                      [=](Session &s, int64_t i) {
                        s.evalStep(k, tokens(bt, kSyntheticIds, i).data(), tokens(bt, kSyntheticTargets, i).data());
                      },
                      itself});
  }
  // The most used first (K = 1, 2, then decoding below, evaluation, the
  // other K): the timing phase may run out of budget.
  auto rank = [](const std::string &n) {
    return n == step::train(1) || n == step::train(2) ? 0 : n == step::eval(step::passesOf(n)) ? 1 : 2;
  };
  std::vector<Workload> ordered;
  for (int r = 0; r < 3; ++r)
    for (const Workload &w : list)
      if (rank(w.name) == r)
        ordered.push_back(w);
  list = std::move(ordered);
  if (bundle.hasStep(step::prefill(false)) && bundle.hasStep(step::kDecode)) {
    std::vector<std::string> regimes = {"standard", "soft"};
    if (bundle.hasStep(step::prefill(true)))
      regimes.push_back("fused");
    std::vector<Workload> decoding;
    for (const std::string &r : regimes)
      decoding.push_back(
          {"decode:" + r,
           [=](Session &s, int64_t i) {
             Decoder d(s);
             std::vector<std::vector<int32_t>> prompts;
             for (int64_t row = 0; row < d.batchSize(); ++row)
               prompts.push_back(tokens(d.maxPrompt(), kSyntheticPrompts, (i << 16) | row));
             SamplingOptions greedy;
             d.generate(prompts, Regime::parse(r), greedy, 8,
                        [](int64_t, int32_t) { return true; });
             // Each one-row prefill once (a prompt of its length), so that
             // its kernels are timed too.
             for (int64_t t : d.rowPrefillLengths())
               d.generate({tokens(t, kSyntheticPrompts, (i << 16) | 0xFFFF)}, Regime::parse(r), greedy, 2,
                          [](int64_t, int32_t) { return true; });
           },
           [=](const std::string &name) {
             if (startsWith(name, step::prefill(true)))
               return r == "fused";
             if (name == step::kDecodePlain)
               return r == "standard";
             return startsWith(name, step::prefill(false)) || name == step::kDecode;
           }});
    list.insert(list.begin() + std::min<size_t>(2, list.size()), decoding.begin(),
                decoding.end());
  }
  return list;
}

/// Runs `w` on `s` `repeats` times after one warm-up; the median seconds.
double timeWorkload(Session &s, const Workload &w, int repeats,
                    const std::function<double()> &clock) {
  w.run(s, 0);
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) {
    double start = clock();
    w.run(s, r + 1);
    t.push_back(clock() - start);
  }
  return median(t);
}

std::unique_ptr<ProgressBar> progress(const TuneSettings &settings, size_t total,
                                      const std::string &what) {
  if (!settings.progress)
    return nullptr;
  ProgressOptions o;
  o.unit = "runs";
  auto bar = std::make_unique<ProgressBar>((int64_t)total, 0, o);
  bar->setField("phase", what);
  return bar;
}

std::string isoNow() {
  std::time_t now = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return buf;
}
} // namespace

//===----------------------------------------------------------------------===//
// The tuner
//===----------------------------------------------------------------------===//

namespace {
/// 1. Measures: one run of each workload, its steps probed. Each step's
/// runner goes when its workload is done: the arenas of every K at once may
/// not fit.
void measure(Session &probe, std::vector<Workload> &work, Measurer &measurer,
             const TuneSettings &settings) {
  probe.setProbe(&measurer);
  std::unique_ptr<ProgressBar> bar = progress(settings, work.size(), "measuring");
  for (size_t i = 0; i < work.size(); ++i) {
    if (bar)
      bar->setField("run", work[i].name);
    work[i].run(probe, 0);
    probe.releaseSteps();
    if (bar)
      bar->update(i + 1);
  }
  probe.setProbe(nullptr);
}

/// 2. Chooses each measured kernel's variant: the report's rows, and the
/// kernels that change.
KernelChoice chooseKernels(const Bundle &bundle, const Measurer &measurer,
                           std::vector<KernelTuning> &rows) {
  KernelChoice choice;
  for (const auto &[kernel, variants] : bundle.variants()) {
    KernelTuning k;
    k.kernel = kernel;
    auto t = measurer.kernels.find(kernel);
    std::vector<double> seconds =
        t == measurer.kernels.end() ? std::vector<double>() : totals(t->second);
    for (size_t i = 0; i < variants.builds.size(); ++i) {
      VariantTiming v{variants.builds[i].symbol, variants.builds[i].config, 0, {}};
      if (t != measurer.kernels.end()) {
        v.rejected = t->second.rejected[i];
        v.seconds = v.rejected.empty() ? seconds[i] : -1;
      }
      k.variants.push_back(std::move(v));
    }
    k.measured = t != measurer.kernels.end();
    if (k.measured) {
      k.chosen = chooseVariant(k.variants);
      k.speedup = k.variants[0].seconds / std::max(1e-12, k.variants[k.chosen].seconds);
      if (k.chosen)
        choice[kernel] = k.variants[k.chosen].symbol;
    }
    rows.push_back(std::move(k));
  }
  return choice;
}

/// ... and each measured GEMM shape's algorithm.
std::vector<TunedGemm> chooseGemms(const Measurer &measurer, std::vector<GemmTuning> &rows) {
  std::vector<TunedGemm> choice;
  for (const auto &[key, t] : measurer.gemms) {
    std::vector<double> seconds = totals(t);
    std::vector<VariantTiming> v;
    for (size_t i = 0; i < seconds.size(); ++i)
      v.push_back({std::to_string(i), {}, t.rejected[i].empty() ? seconds[i] : -1,
                   t.rejected[i]});
    GemmTuning g{measurer.gemmShapes.at(key), (int)v.size(), 0, 1, {}, {}};
    for (size_t i = 0; i < v.size(); ++i)
      if (!v[i].rejected.empty())
        g.rejected.push_back("algorithm " + std::to_string(i) + ": " + v[i].rejected);
    g.chosen = (int)chooseVariant(v);
    g.speedup = v[0].seconds / std::max(1e-12, v[g.chosen].seconds);
    choice.push_back({g.shape, g.chosen, g.speedup});
    rows.push_back(g);
  }
  return choice;
}

/// 3. Times each workload before and after, alternating sessions. What holds
/// of one call timed alone need not hold in the step (what is in the caches,
/// how the threads hand work on): a workload the choice makes slower gets
/// the defaults back for every kernel and GEMM shape its steps call, and
/// what those reach is timed again.
void checkAgainstSteps(const std::string &bundlePath, const Bundle &bundle,
                       const std::vector<Workload> &work, const TuneSettings &settings,
                       KernelChoice &choice, std::vector<TunedGemm> &gemmChoice,
                       TuneReport &report) {
  Session before(bundlePath), after(bundlePath);
  before.initialize(1);
  after.initialize(1);
  auto calls = [&](const Workload &w) {
    std::set<std::string> keys;
    for (const auto &[name, plan] : bundle.steps())
      if (w.runs(name))
        for (const PlanOp &op : plan.ops)
          keys.insert(callKey(op));
    return keys;
  };
  auto timeAll = [&](const std::vector<const Workload *> &which, const char *phase) {
    after.device().selectKernels(choice);
    after.device().selectGemms(gemmAlgorithms(gemmChoice));
    std::unique_ptr<ProgressBar> bar = progress(settings, which.size(), phase);
    double deadline = settings.clock() + settings.budgetSeconds;
    int64_t done = 0;
    for (const Workload *w : which) {
      if (bar)
        bar->update(done++);
      if (settings.clock() > deadline) {
        report.untimed.push_back(w->name);
        report.steps.erase(w->name);
        continue;
      }
      std::vector<double> a, b;
      for (int r = 0; r < 2; ++r) {
        a.push_back(timeWorkload(before, *w, settings.stepRepeats, settings.clock));
        b.push_back(timeWorkload(after, *w, settings.stepRepeats, settings.clock));
      }
      before.releaseSteps();
      after.releaseSteps();
      report.steps[w->name] = {*std::min_element(a.begin(), a.end()),
                               *std::min_element(b.begin(), b.end())};
    }
    if (bar)
      bar->update(done);
  };
  std::vector<const Workload *> all;
  for (const Workload &w : work)
    all.push_back(&w);
  timeAll(all, "timing");

  std::map<std::string, std::set<std::string>> callsOf;
  for (const Workload &w : work)
    callsOf[w.name] = calls(w);
  std::set<std::string> chosen;
  for (const auto &[kernel, symbol] : choice)
    chosen.insert(kernel);
  for (const TunedGemm &g : gemmChoice)
    if (g.algorithm != 0)
      chosen.insert(gemmKey(g.shape));
  std::map<std::string, std::string> reverted =
      choicesToPutBack(report.steps, callsOf, chosen);
  if (reverted.empty())
    return;
  for (const auto &[key, why] : reverted) {
    choice.erase(key);
    for (TunedGemm &g : gemmChoice)
      if (gemmKey(g.shape) == key)
        g.algorithm = 0;
  }
  std::vector<const Workload *> again;
  for (const Workload &w : work) {
    std::set<std::string> keys = calls(w);
    if (std::any_of(reverted.begin(), reverted.end(),
                    [&](const auto &r) { return keys.count(r.first); }))
      again.push_back(&w);
  }
  timeAll(again, "timing again");
  for (KernelTuning &k : report.kernels)
    if (auto r = reverted.find(k.kernel); r != reverted.end()) {
      k.reverted = r->second;
      k.chosen = 0;
      k.speedup = 1;
    }
  for (GemmTuning &g : report.gemms)
    if (auto r = reverted.find(gemmKey(g.shape)); r != reverted.end()) {
      g.reverted = r->second;
      g.chosen = 0;
      g.speedup = 1;
    }
}
} // namespace

TuneReport tuneBundle(const std::string &bundlePath, const TuneSettings &given) {
  TuneSettings settings = given;
  if (!settings.clock)
    settings.clock = steadySeconds;
  TuneReport report;
  Session probe(bundlePath);
  const Bundle &bundle = probe.bundle();
  for (const std::string &s : settings.steps)
    if (!bundle.hasStep(s))
      throw RuntimeError(bundlePath + " has no step '" + s + "' (--steps)");
  if (bundle.variants().empty())
    tuneWarning(bundlePath + " has no kernel variants (fbtc --tune-space=default "
                             "builds them): tuning its GEMMs only");
  report.device = probe.device().describe();
  report.bundleKey = bundleKey(bundle);
  probe.initialize(1);
  // The workloads that run a step probed (--steps; all without).
  std::vector<Workload> work;
  for (Workload &w : workloads(bundle, probe.model()))
    if (settings.steps.empty() ||
        std::any_of(settings.steps.begin(), settings.steps.end(), w.runs))
      work.push_back(std::move(w));

  Measurer measurer(bundle, settings, settings.clock() + settings.budgetSeconds);
  measure(probe, work, measurer, settings);
  report.outOfBudget = measurer.outOfBudget;
  KernelChoice choice = chooseKernels(bundle, measurer, report.kernels);
  std::vector<TunedGemm> gemmChoice = chooseGemms(measurer, report.gemms);
  checkAgainstSteps(bundlePath, bundle, work, settings, choice, gemmChoice, report);

  // 4. Store.
  Json key = probe.device().tuneKey();
  report.cachePath = settings.cachePath.empty() ? tuneCachePath(key) : settings.cachePath;
  storeTuneEntry(report.cachePath, key, report.bundleKey, report.entry(bundle));
  return report;
}

TuneEntry TuneReport::entry(const Bundle &bundle) const {
  TuneEntry e;
  e.model = modelHash(bundle.model());
  e.target = targetName(jsonAt(bundle.manifest(), "target"));
  e.tunedAt = isoNow();
  for (const KernelTuning &k : kernels)
    if (k.measured)
      e.kernels[k.kernel] = {k.variants[k.chosen].symbol, k.variants[k.chosen].config,
                             k.speedup};
  for (const GemmTuning &g : gemms)
    e.gemms.push_back({g.shape, g.chosen, g.speedup});
  return e;
}

Json TuneReport::toJson() const {
  Json ks = Json::array(), gs = Json::array(), ss = Json::object();
  for (const KernelTuning &k : kernels) {
    Json variants = Json::array();
    for (const VariantTiming &v : k.variants) {
      Json config = Json::object();
      for (const auto &[knob, value] : v.config)
        config[knob] = value;
      Json j = Json::object({{"symbol", v.symbol}, {"config", std::move(config)}});
      if (!v.rejected.empty())
        j["rejected"] = v.rejected;
      else if (k.measured)
        j["seconds"] = v.seconds;
      variants.push_back(std::move(j));
    }
    Json kj = Json::object({{"name", k.kernel},
                            {"variants", std::move(variants)},
                            {"measured", k.measured},
                            {"chosen", k.variants[k.chosen].symbol},
                            {"speedup", k.speedup}});
    if (!k.reverted.empty())
      kj["reverted"] = k.reverted;
    ks.push_back(std::move(kj));
  }
  for (const GemmTuning &g : gemms) {
    gs.push_back(Json::object({{"shape", g.shape},
                               {"algorithms", g.algorithms},
                               {"chosen", g.chosen},
                               {"speedup", g.speedup},
                               {"rejected", g.rejected}}));
    if (!g.reverted.empty())
      gs.back()["reverted"] = g.reverted;
  }
  for (const auto &[name, t] : steps)
    ss[name] = Json::object({{"default_ms", 1e3 * t.defaultSeconds},
                             {"tuned_ms", 1e3 * t.tunedSeconds},
                             {"speedup", t.defaultSeconds / std::max(1e-12, t.tunedSeconds)}});
  return Json::object({{"device", device},
                       {"cache", cachePath},
                       {"bundle_key", bundleKey},
                       {"out_of_budget", outOfBudget},
                       {"untimed", untimed},
                       {"kernels", std::move(ks)},
                       {"gemms", std::move(gs)},
                       {"steps", std::move(ss)}});
}

} // namespace fbt
