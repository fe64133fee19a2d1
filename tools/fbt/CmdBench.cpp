//===- CmdBench.cpp - fbt bench: timing compiled steps ---------------------===//
//
// Times a bundle's steps on synthetic tokens and prints one JSON object, for
// bench/ scripts that run a peer side by side:
//   --train K     optimizer steps of train_k<K>: tokens/s, ms per step, and
//                 how the time splits between BLAS GEMMs and generated kernels,
//                 and the rate of the step's GEMMs run alone (the ceiling)
//   --decode MODE prefill tokens/s and per-token decode latency
//
//===----------------------------------------------------------------------===//

#include "CommandLine.h"
#include "Commands.h"

#include "runtime/format/StepNames.h"
#include "runtime/decode/Decoder.h"
#include "runtime/base/Error.h"
#include "runtime/base/Random.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sys/resource.h>

namespace fbt {

namespace {
double now() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

double peakRssMiB() {
  rusage u;
  getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss / 1024.0;
}
} // namespace

int runBench(int argc, char **argv) {
  CommandLine args("fbt bench",
                   "Times compiled steps on synthetic tokens; prints one JSON line.");
  args.positional("BUNDLE", "the compiled bundle")
      .tunable()
      .integer("train", "K",
               "time optimizer steps of train_k<K> (give --train or --decode)")
      .text("decode", "MODE",
            "time prefill and per-token decode in MODE (standard, soft or "
            "fused:N)")
      .integer("steps", "N", "timed steps, or decode tokens (default 20)")
      .integer("warmup", "W", "untimed warm-up runs (default 3)")
      .integer("tokens", "N",
               "--decode: prompt tokens (default: the bundle's max prompt)");
  if (!args.parse(argc, argv))
    return 0;
  if (args.has("train") == args.has("decode")) {
    std::fputs(args.help().c_str(), stderr);
    return 2;
  }
  Session s(args.require("BUNDLE"));
  useTuning(s, args.tuning());
  s.initialize(1);
  const ModelConfig &c = s.model();
  int64_t vocab = c.vocabSize;
  int64_t warmup = args.getInt("warmup", 3), steps = args.getInt("steps", 20);
  if (steps < 1 || warmup < 0)
    throw RuntimeError("--steps must be >= 1 and --warmup >= 0");

  if (args.has("train")) {
    int64_t k = args.getInt("train", 1);
    int64_t b = c.training.batchSize, t = c.training.sequenceLength;
    std::vector<int32_t> ids(b * t), targets(b * t);
    for (int64_t i = 0; i < b * t; ++i) {
      ids[i] = 1 + (int32_t)rng::uniformInt(3, 1, i, vocab - 1);
      targets[i] = 1 + (int32_t)rng::uniformInt(3, 2, i, vocab - 1);
    }
    StepRunner &runner = s.runner(step::train(k));
    for (int64_t i = 0; i < warmup; ++i)
      s.trainStep(k, ids.data(), targets.data(), i, 1e-4f);
    runner.setProfiling(true);
    double start = now();
    for (int64_t i = 0; i < steps; ++i)
      s.trainStep(k, ids.data(), targets.data(), i, 1e-4f);
    double secs = now() - start;
    // The five most expensive kind of calls, for the profile.
    std::vector<std::pair<double, std::string>> top;
    for (const auto &[name, t] : runner.profile())
      top.push_back({t, name});
    std::sort(top.rbegin(), top.rend());
    std::string prof = "{";
    for (size_t i = 0; i < top.size() && i < 5; ++i)
      prof += (i ? ", \"" : "\"") + top[i].second + "\": " +
              std::to_string(top[i].first / secs).substr(0, 5);
    prof += "}";
    double rss = peakRssMiB(); // the step's, before the GEMMs' own buffers
    double gemmGflops = runner.gemmAloneGflops(5);
    std::printf("{\"bench\": \"train\", \"device\": \"%s\", \"tuned\": %s, "
                "\"passes\": %lld, "
                "\"tokens_per_step\": %lld, "
                "\"step_ms\": %.3f, \"tokens_per_s\": %.1f, \"gemm_share\": %.3f, "
                "\"kernel_share\": %.3f, \"gemm_alone_gflops\": %.1f, "
                "\"arena_bytes\": %lld, \"peak_rss_mib\": %.1f, \"top\": %s}\n",
                s.device().describe().c_str(), s.tuned() ? "true" : "false",
                (long long)k, (long long)(b * t),
                1e3 * secs / steps, b * t * steps / secs,
                runner.gemmSeconds() / secs, runner.kernelSeconds() / secs,
                gemmGflops, (long long)runner.plan().arenaBytes, rss, prof.c_str());
    return 0;
  }

  Regime regime = Regime::parse(args.get("decode"));
  Decoder d(s);
  int64_t prompt = std::min<int64_t>(d.maxPrompt(), args.getInt("tokens", d.maxPrompt()));
  int64_t newTokens = std::min<int64_t>(steps, d.maxSequence() - prompt);
  std::vector<std::vector<int32_t>> prompts(d.batchSize(), std::vector<int32_t>(prompt));
  for (auto &p : prompts)
    for (int64_t i = 0; i < prompt; ++i)
      p[i] = 1 + (int32_t)rng::uniformInt(4, 1, i, vocab - 1);
  SamplingOptions greedy;
  auto all = [](int64_t, int32_t) { return true; };
  for (int64_t i = 0; i < warmup; ++i)
    d.generate(prompts, regime, greedy, 2, all);
  // The first token comes from the prefill; every later one costs one decode
  // step, timed between the first and the last token's arrival.
  double start = now(), first = 0, last = 0;
  d.generate(prompts, regime, greedy, newTokens + 1, [&](int64_t row, int32_t) {
    if (row == 0) {
      last = now();
      if (first == 0)
        first = last;
    }
    return true;
  });
  double prefillSecs = first - start, decodeSecs = last - first;
  std::printf("{\"bench\": \"decode\", \"device\": \"%s\", \"tuned\": %s, "
              "\"mode\": \"%s\", "
              "\"batch\": %lld, "
              "\"prompt_tokens\": %lld, \"new_tokens\": %lld, "
              "\"prefill_tokens_per_s\": %.1f, \"ms_per_token\": %.4f, "
              "\"peak_rss_mib\": %.1f}\n",
              s.device().describe().c_str(), s.tuned() ? "true" : "false",
              regime.name().c_str(),
              (long long)d.batchSize(), (long long)prompt,
              (long long)newTokens, d.batchSize() * prompt / prefillSecs,
              1e3 * decodeSecs / newTokens, peakRssMiB());
  return 0;
}

} // namespace fbt
