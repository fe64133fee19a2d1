//===- CmdProbe.cpp - fbt probe: what each layer can read ------------------===//
//
//   fbt probe BUNDLE --ckpt C [--data FILE] [--split test] [--targets ...]
//             [--passes 8] [--soft] [--windows 96] [--json]
//
// The measure is runtime/eval/LayerProbes.h (the Python module's
// Session.probe too): ridge probes of every layer under plain prefill, the
// fused passes and with --soft the soft recurrence, on windows of a held-out
// part, beside random features of the same width.
//
//===----------------------------------------------------------------------===//

#include "CommandLine.h"
#include "Commands.h"
#include "EvalData.h"

#include "runtime/base/Error.h"
#include "runtime/base/Json.h"
#include "runtime/eval/LayerProbes.h"

#include <cstdio>
#include <memory>

namespace fbt {

namespace {
using probe::Target;

/// The tables: per target, test R^2 by regime (rows) and layer, and the
/// state each fused pass was handed.
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
    std::printf(" top | handed state |\n|---|");
    for (int64_t l = 0; l <= layers + 1; ++l)
      std::printf("---|");
    std::printf("\n");
    const Json &handed = t.at("handed_state");
    for (const auto &[regime, row] : asObject(t.at(classes ? "test_accuracy" : "test_r2"))) {
      std::printf("| %s |", regime.c_str());
      for (const Json &r2 : row)
        std::printf(" %.3f |", r2.get<double>());
      if (handed.contains(regime))
        std::printf(" %.3f |\n", handed.at(regime).get<double>());
      else
        std::printf(" - |\n");
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
  LayerProbeOptions options;
  options.targets = parseProbeTargets(args.get("targets", "depth,indent,letter"));
  std::unique_ptr<Session> opened = openTrained(args);
  Session &session = *opened;
  DataPart part = parsePart(args.get("split", "test"));
  if (part == DataPart::Train)
    throw RuntimeError("--split train: fbt probe measures held-out parts");
  HeldOutData data = loadEvalData(args, session);
  options.passes = args.getInt("passes", 0);
  options.windows = args.getInt("windows", 96);
  options.soft = args.has("soft");
  options.seed = (uint64_t)args.getInt("seed", 1);
  if (args.has("passes") && options.passes < 1)
    throw RuntimeError("--passes must be >= 1");
  Json out = probeLayers(session, data.splits.part(part), partName(part), options);
  if (args.has("json")) {
    std::printf("%s\n", dumpJson(out).c_str());
    return 0;
  }
  const int64_t windows = out.at("windows").get<int64_t>();
  printTables(out, options.targets, part, windows,
              out.at("positions").get<int64_t>() / windows, session.model().numHiddenLayers);
  return 0;
}

} // namespace fbt
