//===- CmdProbe.cpp - fbt probe: what each layer can read ------------------===//
//
//   fbt probe BUNDLE --ckpt C [--data FILE] [--split test] [--targets ...]
//             [--passes 8] [--soft] [--windows 96] [--json]
//
// Windows spread over a held-out part go through plain prefill and the fused
// passes (prefill_states, prefill_fused_states: fbtc --with-states); at
// every layer of every pass a ridge probe (runtime/eval/Probe.h) reads each
// target off the residual stream. Windows are split 3:1:1 into the probe's
// train, validation (its regularization) and test (its R^2) parts; random
// features of the same width give the floor. --soft adds the states soft
// decoding carries, teacher-forced: with the feedback from t = 1 and no
// jitter, fused pass k is exact for positions below k, so pass T (the
// window's length) is the soft recurrence at every position.
//
//===----------------------------------------------------------------------===//

#include "CommandLine.h"
#include "Commands.h"
#include "EvalData.h"

#include "runtime/base/Error.h"
#include "runtime/base/Json.h"
#include "runtime/base/Progress.h"
#include "runtime/base/Random.h"
#include "runtime/decode/Decoder.h"
#include "runtime/eval/Probe.h"

#include <cstdio>
#include <memory>

namespace fbt {

namespace {
using probe::Target;

/// The windows' states: features[regime][layer] with a row per probed
/// position (positions 1 .. T-1 of each window), and the windows' bytes.
/// The regimes are passes 1 .. `passes`, then with `soft` pass T.
struct Collected {
  std::vector<std::vector<std::vector<float>>> features;
  std::vector<std::vector<int32_t>> windows;
};

Collected collect(Decoder &decoder, const TokenStream &part, int64_t count, int64_t passes,
                  bool soft, int64_t layers) {
  const int64_t t = decoder.maxPrompt(), d = decoder.width();
  if (part.size() < t)
    throw RuntimeError("the part holds " + std::to_string(part.size()) +
                       " tokens, fewer than one window of " + std::to_string(t));
  Collected c;
  for (int64_t i = 0; i < count; ++i) { // spread evenly over the part
    int64_t start = count > 1 ? i * (part.size() - t) / (count - 1) : 0;
    std::vector<int32_t> w(t);
    part.copy(start, t, w.data());
    c.windows.push_back(std::move(w));
  }
  std::vector<int64_t> kept; // the passes kept, 0-based
  for (int64_t p = 0; p < passes; ++p)
    kept.push_back(p);
  if (soft)
    kept.push_back(t - 1);
  c.features.assign(kept.size(), std::vector<std::vector<float>>(layers + 1));
  ProgressOptions po;
  po.unit = "windows";
  ProgressBar bar(count, 0, po);
  for (int64_t first = 0; first < count; first += decoder.batchSize()) {
    int64_t n = std::min(decoder.batchSize(), count - first);
    std::vector<std::vector<int32_t>> batch(c.windows.begin() + first,
                                            c.windows.begin() + first + n);
    auto states = decoder.layerStates(batch, soft ? t : passes);
    for (size_t k = 0; k < kept.size(); ++k)
      for (int64_t l = 0; l <= layers; ++l)
        for (int64_t b = 0; b < n; ++b)
          c.features[k][l].insert(c.features[k][l].end(), states[kept[k]][l][b].begin() + d,
                                  states[kept[k]][l][b].end());
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

std::vector<Target> parseTargets(const std::string &list) {
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
    throw RuntimeError(std::string("probe target ") + probe::targetName(target) + ": no position of the " +
                       std::to_string(c.windows.size()) +
                       " windows has it in one of the probe's parts (value: the depth "
                       "task's problem lines, \"$...=\", in --data's held-out part)");
  const bool classes = probe::isClassTarget(target);
  auto score = [&](const std::vector<float> &features) {
    return classes ? probe::fitRidgeClasses(features, d, y, parts).testAccuracy
                   : probe::fitRidge(features, d, y, parts).testR2;
  };
  Json regimes = Json::object();
  for (size_t k = 0; k < c.features.size(); ++k) {
    Json row = Json::array();
    for (const auto &layer : c.features[k])
      row.push_back(score(layer));
    regimes[(int64_t)k < passes ? regimeOfPass((int64_t)k + 1) : "soft"] = std::move(row);
  }
  Json out = Json::object({{classes ? "test_accuracy" : "test_r2", std::move(regimes)},
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

/// The tables: per target, test R^2 by regime (rows) and layer.
void printTables(const Json &out, const std::vector<Target> &targets, DataPart part,
                 int64_t windows, int64_t perWindow, int64_t layers) {
  std::printf("%s part: %lld windows of %lld positions (probes fitted on 3/5 of the "
              "windows, chosen on 1/5, scored on 1/5)\n",
              partName(part), (long long)windows, (long long)perWindow);
  for (Target target : targets) {
    const Json &t = out.at("targets").at(probe::targetName(target));
    const bool classes = probe::isClassTarget(target);
    std::printf("\n%s: test %s over %lld positions", probe::targetName(target),
                classes ? "accuracy" : "R^2", (long long)t.at("positions").get<int64_t>());
    if (classes)
      std::printf(" (the most common class: %.3f)", t.at("majority").get<double>());
    std::printf("\n| regime |");
    for (int64_t l = 0; l < layers; ++l)
      std::printf(" layer %lld |", (long long)l);
    std::printf(" top |\n|---|");
    for (int64_t l = 0; l <= layers; ++l)
      std::printf("---|");
    std::printf("\n");
    for (const auto &[regime, row] : asObject(t.at(classes ? "test_accuracy" : "test_r2"))) {
      std::printf("| %s |", regime.c_str());
      for (const Json &r2 : row)
        std::printf(" %.3f |", r2.get<double>());
      std::printf("\n");
    }
    std::printf("| random features | %.3f |\n", t.at("random").get<double>());
  }
}

void declareOptions(CommandLine &args) {
  args.positional("BUNDLE", "the compiled bundle (fbtc --with-states)")
      .tunable()
      .text("ckpt", "CKPT", "a checkpoint from fbt train (required)")
      .text("data", "FILE", "the data (default: the embedded corpus)")
      .text("split", "PART", "validation or test (default test)")
      .number("val-fraction", "F", "--data: its validation part (default: the run's)")
      .number("test-fraction", "F", "--data: its test part (default: the run's)")
      .text("targets", "LIST",
            "depth, indent, letter and/or value (default depth,indent,letter)")
      .integer("passes", "N",
               "plain prefill and the fused passes up to N (default 8; 1 for a "
               "model without feedback)")
      .flag("soft", "also the states soft decoding carries (fused pass T: exact at every "
                    "position of a window of T)")
      .integer("windows", "N", "windows of max_prompt_length spread over the part (default 96)")
      .integer("seed", "S", "the random features' seed (default 1)")
      .flag("json", "print one JSON object instead of the tables")
      .footer("Per target, a table of test R^2 by regime (standard: plain prefill;\n"
              "fused:N: the N-th pass of fused prefill; soft: the soft recurrence) and\n"
              "layer (block inputs 0.., then the top state); `random` is a probe of\n"
              "random features of the same width (the floor). Targets: depth (bracket\n"
              "nesting), indent (the line's leading spaces), letter (the control: a\n"
              "function of the current byte), value (the depth task's running value\n"
              "in its problem lines, a class: test accuracy, beside the most common\n"
              "class's share).");
}
} // namespace

int runProbe(int argc, char **argv) {
  CommandLine args("fbt probe",
                   "Linear probes of every layer's residual stream under standard and "
                   "fused\nprefill, on windows of a held-out part.");
  declareOptions(args);
  if (!args.parse(argc, argv))
    return 0;
  std::vector<Target> targets = parseTargets(args.get("targets", "depth,indent,letter"));
  std::unique_ptr<Session> opened = openTrained(args);
  Session &session = *opened;
  if (session.tokenizerName() != "bytes")
    throw RuntimeError("probe targets are defined on bytes: this run's tokenizer is " +
                       session.tokenizerName());
  DataPart part = parsePart(args.get("split", "test"));
  if (part == DataPart::Train)
    throw RuntimeError("--split train: fbt probe measures held-out parts");
  HeldOutData data = loadEvalData(args, session);
  Decoder decoder(session);
  bool feedback = session.model().feedback.fusion != Fusion::None;
  int64_t passes = args.getInt("passes", feedback ? 8 : 1);
  int64_t windows = args.getInt("windows", 96);
  bool soft = args.has("soft");
  if (passes < 1 || ((passes > 1 || soft) && !feedback) || windows < 5)
    throw RuntimeError("--passes must be >= 1 (1 and no --soft for a model without "
                       "feedback) and --windows >= 5");
  const int64_t layers = session.model().numHiddenLayers, d = decoder.width();
  Collected c = collect(decoder, data.splits.part(part), windows, passes, soft, layers);
  const int64_t perWindow = decoder.maxPrompt() - 1;
  probe::Parts parts = windowParts(windows, perWindow);

  uint64_t seed = (uint64_t)args.getInt("seed", 1);
  std::vector<float> random(windows * perWindow * d);
  for (size_t i = 0; i < random.size(); ++i)
    random[i] = rng::normal(seed, rng::streams::kProbeFeatures, i);

  Json out = Json::object({{"split", partName(part)},
                           {"windows", windows},
                           {"positions", windows * perWindow},
                           {"layers", layers}});
  Json perTarget = Json::object();
  for (Target target : targets)
    perTarget[probe::targetName(target)] = probeTarget(target, c, parts, random, d, passes);
  out["targets"] = std::move(perTarget);
  if (args.has("json")) {
    std::printf("%s\n", dumpJson(out).c_str());
    return 0;
  }
  printTables(out, targets, part, windows, perWindow, layers);
  return 0;
}

} // namespace fbt
