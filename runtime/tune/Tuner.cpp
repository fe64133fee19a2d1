//===- Tuner.cpp - choosing kernel variants and GEMM algorithms -----------===//
//
// fbt tune's phases: measure each kernel's variants and each GEMM's
// algorithms inside the real steps (Measurer.h, on Workloads.h's runs),
// choose, time each workload before and after, put back what made a step
// slower, and report. Applying a cache's choice is ApplyCache.cpp.
//
//===----------------------------------------------------------------------===//

#include "runtime/tune/Tuner.h"

#include "runtime/base/Error.h"
#include "runtime/base/Hash.h"
#include "runtime/base/Progress.h"
#include "runtime/base/Random.h"
#include "runtime/decode/Decoder.h"
#include "runtime/format/Safetensors.h"
#include "runtime/format/StepNames.h"
#include "runtime/session/Session.h"
#include "runtime/tune/Measurer.h"
#include "runtime/tune/TuneKeys.h"
#include "runtime/tune/Workloads.h"

#include <algorithm>
#include <chrono>
#include <ctime>
#include <memory>
#include <set>
#include <unistd.h>

namespace fbt {

using tune::callKey;
using tune::gemmAlgorithms;
using tune::gemmKey;
using tune::Measurer;
using tune::timeWorkload;
using tune::totals;
using tune::Workload;
using tune::workloads;


//===----------------------------------------------------------------------===//
// Choosing
//===----------------------------------------------------------------------===//

size_t chooseVariant(const std::vector<VariantTiming> &timings) {
  if (timings.empty() || !timings[0].rejected.empty() || timings[0].seconds <= 0)
    return 0;
  size_t best = 0;
  for (size_t i = 1; i < timings.size(); ++i)
    if (timings[i].rejected.empty() && timings[i].seconds < timings[best].seconds)
      best = i; // strictly faster: a tie keeps the earlier
  return timings[0].seconds >= kMinGain * timings[best].seconds ? best : 0;
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

/// The keys (callKey) of every call of the steps `w` runs.
std::set<std::string> callKeysOf(const Bundle &bundle, const Workload &w) {
  std::set<std::string> keys;
  for (const auto &[name, plan] : bundle.steps())
    if (w.runs(name))
      for (const PlanOp &op : plan.ops)
        keys.insert(callKey(op));
  return keys;
}

/// Two sessions of the bundle, one on the default builds and one on the
/// choice, that time workloads in alternation into the report's steps.
struct BeforeAndAfter {
  Session before, after;
  const TuneSettings &settings;

  BeforeAndAfter(const std::string &bundlePath, const TuneSettings &settings)
      : before(bundlePath), after(bundlePath), settings(settings) {
    before.initialize(1);
    after.initialize(1);
  }

  /// Times each of `which` twice per session (the faster of the two), within
  /// the budget; what the budget leaves out is reported untimed.
  void time(const std::vector<const Workload *> &which, const KernelChoice &choice,
            const std::vector<TunedGemm> &gemmChoice, const char *phase, TuneReport &report) {
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
  }
};

/// The keys of everything the choice changes.
std::set<std::string> chosenKeys(const KernelChoice &choice,
                                 const std::vector<TunedGemm> &gemmChoice) {
  std::set<std::string> chosen;
  for (const auto &[kernel, symbol] : choice)
    chosen.insert(kernel);
  for (const TunedGemm &g : gemmChoice)
    if (g.algorithm != 0)
      chosen.insert(gemmKey(g.shape));
  return chosen;
}

/// Gives `reverted`'s kernels and GEMM shapes their defaults back, in the
/// choice and in the report's rows (with the reason).
void putBack(const std::map<std::string, std::string> &reverted, KernelChoice &choice,
             std::vector<TunedGemm> &gemmChoice, TuneReport &report) {
  for (const auto &[key, why] : reverted) {
    choice.erase(key);
    for (TunedGemm &g : gemmChoice)
      if (gemmKey(g.shape) == key)
        g.algorithm = 0;
  }
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

/// 3. Times each workload before and after, alternating sessions. What holds
/// of one call timed alone need not hold in the step (what is in the caches,
/// how the threads hand work on): a workload the choice makes slower gets
/// the defaults back for every kernel and GEMM shape its steps call, and
/// what those reach is timed again.
void checkAgainstSteps(const std::string &bundlePath, const Bundle &bundle,
                       const std::vector<Workload> &work, const TuneSettings &settings,
                       KernelChoice &choice, std::vector<TunedGemm> &gemmChoice,
                       TuneReport &report) {
  BeforeAndAfter sessions(bundlePath, settings);
  std::vector<const Workload *> all;
  std::map<std::string, std::set<std::string>> callsOf;
  for (const Workload &w : work) {
    all.push_back(&w);
    callsOf[w.name] = callKeysOf(bundle, w);
  }
  sessions.time(all, choice, gemmChoice, "timing", report);

  std::map<std::string, std::string> reverted =
      choicesToPutBack(report.steps, callsOf, chosenKeys(choice, gemmChoice));
  if (reverted.empty())
    return;
  putBack(reverted, choice, gemmChoice, report);
  std::vector<const Workload *> again;
  for (const Workload &w : work) {
    const std::set<std::string> &keys = callsOf[w.name];
    if (std::any_of(reverted.begin(), reverted.end(),
                    [&](const auto &r) { return keys.count(r.first); }))
      again.push_back(&w);
  }
  sessions.time(again, choice, gemmChoice, "timing again", report);
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
