//===- CmdBench.cpp - fbt bench: timing compiled steps ---------------------===//
//
// Times a bundle's steps on synthetic tokens and prints one JSON object, for
// bench/ scripts that run a peer side by side:
//   --train K     optimizer steps of train_k<K>: tokens/s, ms per step, and
//                 how the time splits between BLAS GEMMs and generated kernels,
//                 and the rate of the step's GEMMs run alone (the ceiling)
//   --decode MODE prefill tokens/s, per-token decode latency and (a decode
//                 batch of more than one) the largest mixed step's tokens/s;
//                 with --versus MODE2, both modes timed in alternating
//                 rounds in this process and the median of their ratio
//
//===----------------------------------------------------------------------===//

#include "CommandLine.h"
#include "Commands.h"

#include "runtime/base/Error.h"
#include "runtime/base/Median.h"
#include "runtime/base/Random.h"
#include "runtime/decode/Decoder.h"
#include "runtime/format/StepNames.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <optional>
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

/// The five most expensive kinds of call over `runners`' profiles (kernel
/// stems, "gemm"), each as a share of `seconds`.
Json topCalls(const std::vector<StepRunner *> &runners, double seconds) {
  std::map<std::string, double> byName;
  for (StepRunner *r : runners)
    for (const auto &[name, t] : r->profile())
      byName[name] += t;
  std::vector<std::pair<double, std::string>> top;
  for (const auto &[name, t] : byName)
    top.push_back({t, name});
  std::sort(top.rbegin(), top.rend());
  Json prof = Json::object();
  for (size_t i = 0; i < top.size() && i < 5; ++i)
    prof[top[i].second] = top[i].first / seconds;
  return prof;
}

/// --train K: optimizer steps of train_k<K> on one synthetic batch.
Json benchTrain(Session &s, int64_t k, int64_t warmup, int64_t steps) {
  const ModelConfig &c = s.model();
  int64_t b = c.training.batchSize, t = c.training.sequenceLength;
  std::vector<int32_t> ids = rng::syntheticIds(b * t, c.vocabSize, rng::streams::kSyntheticIds);
  std::vector<int32_t> targets =
      rng::syntheticIds(b * t, c.vocabSize, rng::streams::kSyntheticTargets);
  StepRunner &runner = s.runner(step::train(k));
  for (int64_t i = 0; i < warmup; ++i)
    s.trainStep(k, ids.data(), targets.data(), i, 1e-4f);
  runner.setProfiling(true);
  double start = now();
  for (int64_t i = 0; i < steps; ++i)
    s.trainStep(k, ids.data(), targets.data(), i, 1e-4f);
  double secs = now() - start;
  Json prof = topCalls({&runner}, secs);
  double rss = peakRssMiB(); // the step's, before the GEMMs' own buffers
  double gemmGflops = runner.gemmAloneGflops(5);
  return Json::object({{"bench", "train"},
                       {"device", s.device().describe()},
                       {"tuned", s.tuned()},
                       {"passes", k},
                       {"tokens_per_step", b * t},
                       {"step_ms", 1e3 * secs / steps},
                       {"tokens_per_s", b * t * steps / secs},
                       {"gemm_share", runner.gemmSeconds() / secs},
                       {"kernel_share", runner.kernelSeconds() / secs},
                       {"gemm_alone_gflops", gemmGflops},
                       {"arena_bytes", runner.plan().arenaBytes},
                       {"peak_rss_mib", rss},
                       {"top", prof}});
}

/// Greedy generation of one batch of prompts, timed: the first token comes
/// from the prefill; every later one costs one decode step, timed between
/// the first and the last token's arrival.
struct DecodeTimer {
  Decoder &d;
  std::vector<std::vector<int32_t>> prompts;
  int64_t newTokens = 0;
  SamplingOptions greedy;

  /// Untimed generations, so that every step has run once.
  void warmUp(const Regime &r, int64_t times) {
    for (int64_t i = 0; i < times; ++i)
      d.generate(prompts, r, greedy, 2, [](int64_t, int32_t) { return true; });
  }
  /// The prefill's and the decode steps' seconds.
  std::pair<double, double> time(const Regime &r) {
    double start = now(), first = 0, last = 0;
    d.generate(prompts, r, greedy, newTokens + 1, [&](int64_t row, int32_t) {
      if (row == 0) {
        last = now();
        if (first == 0)
          first = last;
      }
      return true;
    });
    return {first - start, last - first};
  }
};

/// --versus: unprofiled rounds of both modes, each round's order the
/// reverse of the last's, so that a drift of the host's speed within a
/// round weighs on both sides alike.
Json versusRounds(DecodeTimer &timer, const Regime &regime, const Regime &other,
                  int64_t rounds, int64_t warmup) {
  timer.warmUp(other, warmup);
  std::vector<double> base, versus, ratios;
  for (int64_t i = 0; i < rounds; ++i) {
    double a, b;
    if (i % 2) {
      a = timer.time(regime).second;
      b = timer.time(other).second;
    } else {
      b = timer.time(other).second;
      a = timer.time(regime).second;
    }
    base.push_back(1e3 * a / timer.newTokens);
    versus.push_back(1e3 * b / timer.newTokens);
    ratios.push_back(b / a);
  }
  return Json::object({{"mode", other.name()},
                       {"rounds", rounds},
                       {"base_ms_per_token", median(base)},
                       {"ms_per_token", median(versus)},
                       {"ratio", median(ratios)},
                       {"ratios", Json(ratios)}});
}

/// The largest mixed step full of one prompt's tokens: a server's chunked
/// prefill rate, tokens per second (0 without mixed steps).
double mixedRate(Decoder &d, const std::vector<int32_t> &prompt, int64_t steps) {
  int64_t n = d.mixedCapacity();
  if (!n)
    return 0;
  std::vector<Decoder::MixedToken> chunk;
  for (int64_t i = 0; i < n; ++i)
    chunk.push_back({0, prompt[i % prompt.size()], (int32_t)i, false});
  d.mixed(chunk);
  int64_t reps = std::max<int64_t>(1, std::min<int64_t>(steps, 5));
  double t0 = now();
  for (int64_t i = 0; i < reps; ++i)
    d.mixed(chunk);
  return n * reps / (now() - t0);
}

/// --decode MODE [--versus MODE2]: prefill rate, per-token latency and where
/// a token's time goes, then the mixed step's rate.
Json benchDecode(Session &s, const CommandLine &args, int64_t warmup, int64_t steps) {
  Regime regime = Regime::parse(args.get("decode"));
  std::optional<Regime> other;
  if (args.has("versus"))
    other = Regime::parse(args.get("versus"));
  int64_t rounds = args.getInt("rounds", 10);
  if (rounds < 1)
    throw RuntimeError("--rounds must be >= 1");
  Decoder d(s);
  int64_t prompt = std::min<int64_t>(d.maxPrompt(), args.getInt("tokens", d.maxPrompt()));
  // Every row the same prompt, so the rows' times are alike.
  DecodeTimer timer{d,
                    std::vector<std::vector<int32_t>>(
                        d.batchSize(), rng::syntheticIds(prompt, s.model().vocabSize,
                                                         rng::streams::kSyntheticPrompts)),
                    std::min<int64_t>(steps, d.maxSequence() - prompt),
                    {}};
  timer.warmUp(regime, warmup);
  // The timed generation runs unprofiled: the profile reads the clock
  // twice per call, some hundred times per token, which would weigh on
  // the token's time as a peer's timings (gguf_peer.py) do not.
  auto [prefillSecs, decodeSecs] = timer.time(regime);
  // Then the same generation profiled: the decode steps' calls (their
  // runners exist now), as shares of that generation's own decode time.
  std::vector<StepRunner *> decodeRunners;
  for (const auto &[name, plan] : s.bundle().steps())
    if (plan.kind == StepKind::Decode) {
      decodeRunners.push_back(&s.runner(name));
      decodeRunners.back()->setProfiling(true);
    }
  double profiledSecs = timer.time(regime).second;
  // Where a token's time goes: every decode step's calls (the first
  // token's prefill is not among them), per generated token.
  double gemm = 0, kernels = 0;
  int64_t calls = 0;
  for (StepRunner *r : decodeRunners) {
    gemm += r->gemmSeconds();
    kernels += r->kernelSeconds();
    if (r->gemmSeconds() + r->kernelSeconds() > 0)
      calls = std::max<int64_t>(calls, int64_t(r->plan().ops.size()));
  }
  int64_t newTokens = timer.newTokens;
  Json out = Json::object({{"bench", "decode"},
                           {"device", s.device().describe()},
                           {"tuned", s.tuned()},
                           {"mode", regime.name()},
                           {"batch", d.batchSize()},
                           {"prompt_tokens", prompt},
                           {"new_tokens", newTokens},
                           {"prefill_tokens_per_s", d.batchSize() * prompt / prefillSecs},
                           {"ms_per_token", 1e3 * decodeSecs / newTokens},
                           {"calls_per_token", calls},
                           {"gemm_share", gemm / profiledSecs},
                           {"kernel_share", kernels / profiledSecs},
                           {"top", topCalls(decodeRunners, profiledSecs)},
                           {"peak_rss_mib", peakRssMiB()}});
  for (StepRunner *r : decodeRunners)
    r->setProfiling(false);
  if (other)
    out["versus"] = versusRounds(timer, regime, *other, rounds, warmup);
  // After the profile, which is the decode steps' alone.
  out["mixed_tokens"] = d.mixedCapacity();
  out["mixed_tokens_per_s"] = mixedRate(d, timer.prompts[0], steps);
  return out;
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
               "--decode: prompt tokens (default: the bundle's max prompt)")
      .text("versus", "MODE2",
            "--decode: also time MODE2, alternating with MODE round by round "
            "(MODE2 then MODE, MODE then MODE2, ...), and report the median "
            "of each round's MODE2/MODE ratio: a comparison that the host's "
            "drift between separate runs does not blur")
      .integer("rounds", "R", "--versus: timed rounds (default 10)");
  if (!args.parse(argc, argv))
    return 0;
  if (args.has("train") == args.has("decode") ||
      (args.has("versus") && !args.has("decode")) ||
      (args.has("rounds") && !args.has("versus"))) {
    std::fputs(args.help().c_str(), stderr);
    return 2;
  }
  Session s(args.require("BUNDLE"));
  useTuning(s, args.tuning()); // bench times fresh weights: no checkpoint
  s.initialize(1);
  int64_t warmup = args.getInt("warmup", 3), steps = args.getInt("steps", 20);
  if (steps < 1 || warmup < 0)
    throw RuntimeError("--steps must be >= 1 and --warmup >= 0");
  Json out = args.has("train") ? benchTrain(s, args.getInt("train", 1), warmup, steps)
                               : benchDecode(s, args, warmup, steps);
  std::printf("%s\n", dumpJson(out).c_str());
  return 0;
}

} // namespace fbt
