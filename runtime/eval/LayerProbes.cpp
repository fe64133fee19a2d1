//===- LayerProbes.cpp - what each layer of a model can read --------------===//

#include "runtime/eval/LayerProbes.h"

#include "runtime/base/Error.h"
#include "runtime/base/Progress.h"
#include "runtime/base/Random.h"
#include "runtime/decode/Decoder.h"
#include "runtime/eval/Evaluation.h"

#include <algorithm>

namespace fbt {

namespace {
using probe::Target;

/// The windows' states: features[regime][layer] with a row per probed
/// position (positions 1 .. T-1 of each window), and the windows' bytes.
/// The regimes are passes 1 .. `passes`, then with `soft` pass T. handed[k]
/// is what regime k's pass was handed at those positions, the previous
/// pass's carried state at t-1 (empty for standard prefill, handed nothing).
struct Collected {
  std::vector<std::vector<std::vector<float>>> features;
  std::vector<std::vector<float>> handed;
  std::vector<std::vector<int32_t>> windows;
};

Collected collect(Decoder &decoder, const TokenStream &part, int64_t count, int64_t passes,
                  bool soft, int64_t layers) {
  const int64_t t = decoder.maxPrompt(), d = decoder.width();
  if (part.size() < t)
    throw RuntimeError("the part holds " + std::to_string(part.size()) +
                       " tokens, fewer than one window of " + std::to_string(t));
  Collected c;
  c.windows = spreadWindows(part, count, t);
  std::vector<int64_t> kept; // the passes kept, 0-based
  for (int64_t p = 0; p < passes; ++p)
    kept.push_back(p);
  if (soft)
    kept.push_back(t - 1);
  c.features.assign(kept.size(), std::vector<std::vector<float>>(layers + 1));
  c.handed.assign(kept.size(), {});
  ProgressOptions po;
  po.unit = "windows";
  ProgressBar bar(count, 0, po);
  for (int64_t first = 0; first < count; first += decoder.batchSize()) {
    int64_t n = std::min(decoder.batchSize(), count - first);
    std::vector<std::vector<int32_t>> batch(c.windows.begin() + first,
                                            c.windows.begin() + first + n);
    std::vector<std::vector<std::vector<float>>> carried;
    auto states = decoder.layerStates(batch, soft ? t : passes, &carried);
    for (size_t k = 0; k < kept.size(); ++k)
      for (int64_t b = 0; b < n; ++b) {
        for (int64_t l = 0; l <= layers; ++l)
          c.features[k][l].insert(c.features[k][l].end(), states[kept[k]][l][b].begin() + d,
                                  states[kept[k]][l][b].end());
        // Position t's row is the state at t-1: the carried states less the last.
        if (kept[k] > 0) {
          const std::vector<float> &from = carried[kept[k] - 1][b];
          c.handed[k].insert(c.handed[k].end(), from.begin(), from.end() - d);
        }
      }
    bar.update(first + n);
  }
  bar.finish();
  return c;
}

/// Window i's rows go to train (i mod 5 < 3), validation (3) or test (4),
/// so that each part is spread over the held-out text.
probe::Parts windowParts(int64_t windows, int64_t perWindow) {
  probe::Parts parts;
  for (int64_t i = 0; i < windows; ++i) {
    auto &to = i % 5 < 3 ? parts.train : i % 5 == 3 ? parts.validation : parts.test;
    for (int64_t r = 0; r < perWindow; ++r)
      to.push_back(i * perWindow + r);
  }
  return parts;
}

std::string regimeOfPass(int64_t pass) {
  return pass == 1 ? "standard" : "fused:" + std::to_string(pass);
}

/// One target's probes: test R^2 (a quantity) or test accuracy (a class)
/// per regime and layer, and the random features' score beside them.
Json probeTarget(Target target, const Collected &c, const probe::Parts &all,
                 const std::vector<float> &random, int64_t d, int64_t passes) {
  std::vector<double> y;
  for (const auto &w : c.windows) {
    std::vector<double> v = probe::targetValues(target, w);
    y.insert(y.end(), v.begin() + 1, v.end());
  }
  probe::Parts parts = probe::definedRows(all, y);
  if (parts.train.empty() || parts.validation.empty() || parts.test.empty())
    throw RuntimeError(std::string("probe target ") + probe::targetName(target) +
                       ": no position of the " + std::to_string(c.windows.size()) +
                       " windows has it in one of the probe's parts (value: the depth "
                       "task's problem lines, \"$...=\", in the data's held-out part)");
  const bool classes = probe::isClassTarget(target);
  auto score = [&](const std::vector<float> &features) {
    return classes ? probe::fitRidgeClasses(features, d, y, parts).testAccuracy
                   : probe::fitRidge(features, d, y, parts).testR2;
  };
  Json regimes = Json::object(), handed = Json::object();
  for (size_t k = 0; k < c.features.size(); ++k) {
    Json row = Json::array();
    for (const auto &layer : c.features[k])
      row.push_back(score(layer));
    std::string name = (int64_t)k < passes ? regimeOfPass((int64_t)k + 1) : "soft";
    regimes[name] = std::move(row);
    if (!c.handed[k].empty())
      handed[name] = score(c.handed[k]);
  }
  Json out = Json::object({{classes ? "test_accuracy" : "test_r2", std::move(regimes)},
                           {"handed_state", std::move(handed)},
                           {"positions", (int64_t)(parts.train.size() + parts.validation.size() +
                                                   parts.test.size())}});
  if (classes) {
    probe::ClassFit floor = probe::fitRidgeClasses(random, d, y, parts);
    out["random"] = floor.testAccuracy;
    out["majority"] = floor.majority;
  } else {
    out["random"] = probe::fitRidge(random, d, y, parts).testR2;
  }
  return out;
}
} // namespace

std::vector<Target> parseProbeTargets(const std::string &list) {
  std::vector<Target> out;
  size_t at = 0;
  while (at <= list.size()) {
    size_t comma = list.find(',', at);
    std::string name = list.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    out.push_back(probe::parseTarget(name));
    if (comma == std::string::npos)
      break;
    at = comma + 1;
  }
  return out;
}

Json probeLayers(Session &session, const TokenStream &part, const std::string &partLabel,
                 const LayerProbeOptions &options) {
  if (session.tokenizerName() != "bytes")
    throw RuntimeError("probe targets are defined on bytes: this run's tokenizer is " +
                       session.tokenizerName());
  if (options.targets.empty())
    throw RuntimeError("no probe target (depth, indent, letter, value)");
  Decoder decoder(session);
  const bool feedback = session.model().feedback.fusion != Fusion::None;
  const int64_t passes = options.passes ? options.passes : feedback ? 8 : 1;
  if (passes < 1 || ((passes > 1 || options.soft) && !feedback) || options.windows < 5)
    throw RuntimeError("probe passes must be >= 1 (1 and no soft states for a model without "
                       "feedback) and windows >= 5");
  const int64_t layers = session.model().numHiddenLayers, d = decoder.width();
  Collected c = collect(decoder, part, options.windows, passes, options.soft, layers);
  const int64_t perWindow = decoder.maxPrompt() - 1;
  probe::Parts parts = windowParts(options.windows, perWindow);

  std::vector<float> random(options.windows * perWindow * d);
  for (size_t i = 0; i < random.size(); ++i)
    random[i] = rng::normal(options.seed, rng::streams::kProbeFeatures, i);

  Json out = Json::object({{"split", partLabel},
                           {"windows", options.windows},
                           {"positions", options.windows * perWindow},
                           {"layers", layers}});
  Json perTarget = Json::object();
  for (Target target : options.targets)
    perTarget[probe::targetName(target)] =
        probeTarget(target, c, parts, random, d, passes);
  out["targets"] = std::move(perTarget);
  return out;
}

} // namespace fbt
