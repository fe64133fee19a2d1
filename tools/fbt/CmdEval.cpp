//===- CmdEval.cpp - fbt eval ---------------------------------------------===//
//
// Held-out losses per pass and per decoding regime, task accuracy and the
// feedback map's contraction, all in inference mode (runtime/eval/Evaluation.h).
//
//===----------------------------------------------------------------------===//

#include "CommandLine.h"
#include "Commands.h"
#include "EvalData.h"

#include "runtime/base/Error.h"
#include "runtime/base/Progress.h"
#include "runtime/eval/Evaluation.h"
#include "runtime/eval/Tasks.h"
#include "runtime/format/StepNames.h"
#include "runtime/base/FileIO.h"
#include "runtime/base/Json.h"
#include "runtime/text/DataSplits.h"
#include "runtime/text/DefaultCorpus.h"
#include "runtime/train/RunDirectory.h"
#include "runtime/text/TokenStream.h"

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

namespace fbt {

namespace {
std::vector<Regime> parseRegimes(const std::string &list) {
  std::vector<Regime> out;
  size_t at = 0;
  while (at <= list.size()) {
    size_t comma = list.find(',', at);
    std::string item = list.substr(at, comma == std::string::npos ? std::string::npos
                                                                  : comma - at);
    if (item.empty())
      throw RuntimeError("--regimes: an empty item in '" + list + "'");
    out.push_back(Regime::parse(item));
    if (comma == std::string::npos)
      break;
    at = comma + 1;
  }
  return out;
}

void printLosses(const LossReport &r, const char *part) {
  std::printf("%s part: %lld windows of %lld tokens, spread over its %lld (%lld "
              "documents; prompt %lld, continuation %lld tokens per regime)\n",
              part, (long long)r.windows, (long long)r.windowLength,
              (long long)r.windowsInPart, (long long)r.documents,
              (long long)r.promptLength, (long long)r.tokens);
  std::printf("per pass (whole windows, fed back from t = 1; +- s.e. over "
              "batches of %lld windows):\n",
              (long long)r.batchWindows);
  for (size_t k = 0; k < r.passes.size(); ++k)
    std::printf("  pass %zu  %.4f +- %.4f  (x%.3f of pass 1)\n", k + 1, r.passes[k].loss,
                r.passes[k].se, r.passes[k].loss / r.passes[0].loss);
  std::printf("per regime (continuation; +- s.e. over windows, [over documents]; "
              "the difference from standard is paired, window by window):\n");
  bool paired = !r.regimes.empty() && r.regimes.front().name == "standard";
  for (const RegimeLoss &l : r.regimes) {
    std::printf("  %-9s loss %.4f +- %.4f [%.4f]", l.name.c_str(), l.loss.loss, l.loss.se,
                l.loss.seDocuments);
    if (l.bpb >= 0)
      std::printf("  bpb %.4f", l.bpb);
    if (paired && &l != &r.regimes.front())
      std::printf("  minus standard %+.4f +- %.4f [%.4f]", l.minusStandard.loss,
                  l.minusStandard.se, l.minusStandard.seDocuments);
    std::printf("\n");
  }
}
/// --task: exact-match accuracy of greedy answers, per regime.
int runTask(const CommandLine &args, Session &session, const TokenStream &tokens, bool ids,
            std::vector<Regime> regimes, bool json) {
  int64_t count = args.getInt("problems", 200);
  auto results = evaluateTaskOnData(session, args.get("task"), tokens, ids, regimes, count,
                                    (uint64_t)args.getInt("seed", 20261201));
  if (json) {
    std::printf("%s\n", dumpJson(toJson(args.get("task"), results)).c_str());
    return 0;
  }
  std::printf("task %s: %lld held-out problems, greedy, exact match\n",
              args.get("task").c_str(), (long long)count);
  for (const TaskResult &r : results)
    std::printf("  %-9s accuracy %.3f (%lld/%lld), answers %.1f bytes on average\n",
                r.regime.c_str(), r.accuracy(), (long long)r.correct, (long long)r.total,
                r.meanAnswerBytes());
  return 0;
}

/// --contraction: how fast the passes converge, and the state's size along
/// a soft generation.
int runContraction(const CommandLine &args, Session &session, const TokenStream &heldOut,
                   bool json) {
  ContractionOptions o;
  o.passes = args.getInt("contraction-passes", o.passes);
  o.prompts = args.getInt("contraction-prompts", o.prompts);
  o.sequences = args.getInt("contraction-sequences", o.sequences);
  o.generate = args.getInt("generate", o.generate);
  ContractionReport r = evaluateContractionOn(session, heldOut, o);
  if (json) {
    std::printf("%s\n", dumpJson(toJson(r)).c_str());
    return 0;
  }
  std::printf("contraction over %lld held-out prompts of %lld tokens (positions t >= k; "
              "over all positions beside it):\n",
              (long long)r.prompts, (long long)r.promptLength);
  for (size_t k = 0; k < r.ratios.size(); ++k)
    if (k < 8 || (k + 1) % 8 == 0 || k + 1 == r.ratios.size())
      std::printf("  ||s_%zu - s_%zu|| / ||s_%zu|| = %.3g +- %.2g  (all positions %.3g)\n",
                  k + 2, k + 1, k + 1, r.ratios[k], 1.96 * r.ratiosSe[k],
                  r.ratiosAllPositions[k]);
  if (!r.stateRms.empty()) {
    double lo = r.stateRms[0], hi = r.stateRms[0];
    for (double v : r.stateRms)
      lo = std::min(lo, v), hi = std::max(hi, v);
    std::printf("soft generation of %zu tokens: state RMS first %.3f, last "
                "%.3f, min %.3f, max %.3f\n",
                r.stateRms.size(), r.stateRms.front(), r.stateRms.back(), lo, hi);
  }
  if (!r.softLoss.empty()) {
    // The loss along the context in quarters: a recurrence that drifts shows
    // as soft's loss rising against standard's toward the end.
    const size_t n = r.softLoss.size();
    std::printf("teacher-forced over %lld windows of %zu tokens, loss by quarter of the "
                "context (soft / standard):",
                (long long)r.sequences, n + 1);
    for (size_t q = 0; q < 4; ++q) {
      double soft = 0, standard = 0;
      size_t from = q * n / 4, to = (q + 1) * n / 4;
      for (size_t i = from; i < to; ++i)
        soft += r.softLoss[i] / double(to - from), standard += r.standardLoss[i] / double(to - from);
      std::printf(" %.3f / %.3f", soft, standard);
    }
    std::printf("\n");
  }
  return 0;
}

/// The default: held-out losses per pass and per regime.
int runLosses(const CommandLine &args, Session &session, const TokenStream &heldOut,
              DataPart part, bool byteLevel, std::vector<Regime> regimes, bool json,
              bool quiet) {
  LossOptions o;
  std::string windows = args.get("windows", "all");
  if (windows != "all") {
    size_t used = 0;
    try {
      o.windows = std::stoll(windows, &used);
    } catch (const std::exception &) {
      used = 0;
    }
    if (used != windows.size() || o.windows < 1)
      throw RuntimeError("--windows must be a count >= 1 or 'all', got '" + windows + "'");
  }
  o.promptFraction = args.getDouble("prompt-fraction", 0.25);
  o.passes = args.getInt("passes", std::min<int64_t>(8, session.evalPasses()));
  o.regimes = std::move(regimes);
  o.byteLevel = byteLevel;
  std::unique_ptr<ProgressBar> bar;
  auto progress = [&](int64_t done, int64_t total) {
    if (quiet)
      return;
    if (!bar) {
      ProgressOptions po;
      po.unit = "batches";
      bar = std::make_unique<ProgressBar>(total, 0, po);
    }
    bar->update(done);
  };
  LossReport r = evaluateLosses(session, heldOut, o, progress);
  if (bar)
    bar->finish();
  if (json) {
    Json j = toJson(r);
    j["split"] = partName(part);
    std::printf("%s\n", dumpJson(j).c_str());
  } else {
    printLosses(r, partName(part));
  }
  return 0;
}
void declareOptions(CommandLine &args) {
  args.positional("BUNDLE", "the compiled bundle")
      .tunable()
      .text("ckpt", "CKPT", "a checkpoint from fbt train (required)")
      .text("data", "FILE", "the data (default: the embedded corpus)")
      .text("split", "PART", "validation or test (default test)")
      .number("val-fraction", "F",
              "--data: its validation part, as fbt train --val-fraction "
              "(default: the run's, else 0.1)")
      .number("test-fraction", "F",
              "--data: its test part, as fbt train --test-fraction (default: "
              "the run's, else 0.1)")
      .integer("passes", "N",
               "losses: passes 1..N over whole windows (default 8)")
      .text("windows", "N|all",
            "losses: windows spread evenly over the part (default all)")
      .number("prompt-fraction", "F",
              "losses: each window's first F is a plain prompt (default 0.25)")
      .text("regimes", "LIST",
            "comma-separated regimes (default standard,soft,fused:2,fused:3)")
      .text("task", "NAME",
            "arithmetic|counting|file:PATH|chat:PATH|passkey:N: exact-match accuracy "
            "and mean length of greedy answers to --problems held-out problems "
            "(file: the first of a JSON Lines file's {prompt, answer}; chat: "
            "conversations ending with the assistant's answer; passkey: a key "
            "retrieved across N bytes), per regime")
      .integer("problems", "N", "--task: problems (default 200)")
      .integer("seed", "S", "--task: the problems' seed (default 20261201)")
      .flag("contraction",
            "||s_{k+1} - s_k|| / ||s_k|| over the positions pass k+1 can still "
            "change (t >= k), for passes up to --contraction-passes, averaged over "
            "--contraction-prompts held-out prompts with its standard error; the "
            "state's RMS along a --generate token greedy soft generation (capped by "
            "the context); and the per-position loss teacher-forced over "
            "--contraction-sequences windows of the whole context, soft and standard")
      .integer("contraction-passes", "N",
               "--contraction: passes (default 64, at most the prompt's length)")
      .integer("contraction-prompts", "N", "--contraction: prompts (default 64)")
      .integer("contraction-sequences", "N",
               "--contraction: teacher-forced windows of the context (default 16)")
      .integer("generate", "N",
               "--contraction: tokens of soft generation (default 500)")
      .flag("json", "one JSON object on stdout")
      .flag("quiet", "no progress output")
      .footer("losses (default): per pass: the loss of passes 1..N (default 8) "
              "over\n"
              "whole windows, the state fed back from t = 1; per regime: each\n"
              "window's first --prompt-fraction (0.25) is a plain prompt, the "
              "rest\n"
              "is teacher-forced through the compiled decoder; the "
              "continuation's\n"
              "loss and bits per byte.");
}
} // namespace

int runEval(int argc, char **argv) {
  CommandLine args(
      "fbt eval",
      "Measures a trained model in inference mode (no jitter, no prefix mix-in)\n"
      "on a held-out part of the data: test (default; report results on it once)\n"
      "or validation (the part fbt train validates on; choose recipes on it).\n"
      "--data is split as its run split it (run.json beside the checkpoint).");
  declareOptions(args);
  if (!args.parse(argc, argv))
    return 0;
  if (args.has("task") && args.has("contraction"))
    throw RuntimeError("give at most one of --task and --contraction");
  std::unique_ptr<Session> opened = openTrained(args);
  Session &session = *opened;
  bool json = args.has("json");
  bool quiet = args.has("quiet") || json;
  DataPart part = parsePart(args.get("split", "test"));
  if (part == DataPart::Train)
    throw RuntimeError("--split train: fbt eval measures held-out parts "
                       "(validation or test)");
  HeldOutData data = loadEvalData(args, session);
  const TokenStream &heldOut = data.splits.part(part);
  if (heldOut.empty())
    throw RuntimeError(std::string("the data's ") + partName(part) +
                       " part is empty (its fraction is 0)");

  std::vector<Regime> regimes;
  if (args.has("regimes"))
    regimes = parseRegimes(args.get("regimes"));

  if (args.has("task"))
    return runTask(args, session, data.tokens, data.ids, regimes, json);
  if (args.has("contraction"))
    return runContraction(args, session, heldOut, json);
  return runLosses(args, session, heldOut, part, data.byteLevel, regimes, json, quiet);
}

} // namespace fbt
