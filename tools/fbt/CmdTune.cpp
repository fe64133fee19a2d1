//===- CmdTune.cpp - fbt tune: kernel variants for the device at hand -----===//
//
// Times every variant of every kernel of a bundle compiled with
// --tune-space, and every GEMM shape's algorithms (on a GPU cuBLASLt's
// heuristic candidates, on the CPU how the GEMM is split across threads)
// inside the bundle's real steps, keeps the fastest that computes what the
// default does, and stores the choice in this device's tune cache, which
// train, generate, eval, bench and serve then use (runtime/tune/Tuner.h).
//
//===----------------------------------------------------------------------===//

#include "CommandLine.h"
#include "Commands.h"

#include "runtime/base/Error.h"
#include "runtime/tune/Tuner.h"

#include <cstdio>
#include <sstream>

namespace fbt {

namespace {
std::vector<std::string> splitList(const std::string &text) {
  std::vector<std::string> items;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ','))
    if (!item.empty())
      items.push_back(item);
  return items;
}

std::string configText(const std::map<std::string, int64_t> &config) {
  std::string s;
  for (const auto &[k, v] : config)
    s += (s.empty() ? "" : ",") + k + "=" + std::to_string(v);
  return s.empty() ? "-" : s;
}

void printTable(const TuneReport &r) {
  std::printf("device: %s\n\n", r.device.c_str());
  std::printf("%-26s %9s %9s  %-34s %8s\n", "kernel", "variants", "rejected", "chosen",
              "speedup");
  for (const KernelTuning &k : r.kernels) {
    int rejected = 0;
    for (const VariantTiming &v : k.variants)
      rejected += !v.rejected.empty();
    std::string chosen = !k.measured ? "(not run)"
                                     : k.variants[k.chosen].symbol.substr(k.kernel.size()) +
                                           " " + configText(k.variants[k.chosen].config);
    if (k.measured && k.chosen == 0)
      chosen = "default " + configText(k.variants[0].config);
    std::printf("%-26s %9zu %9d  %-34s %7.2fx\n", k.kernel.c_str(), k.variants.size(),
                rejected, chosen.c_str(), k.speedup);
    for (const VariantTiming &v : k.variants)
      if (!v.rejected.empty())
        std::printf("    %s rejected: %s\n", v.symbol.c_str(), v.rejected.c_str());
    if (!k.reverted.empty())
      std::printf("    default put back: the choice %s\n", k.reverted.c_str());
  }
  if (!r.gemms.empty()) {
    std::printf("\n%-40s %10s %7s %8s\n", "GEMM (m,n,k,ta,tb,types)", "algorithms",
                "chosen", "speedup");
    for (const GemmTuning &g : r.gemms) {
      std::printf("%-40s %10d %7d %7.2fx\n", g.shape.c_str(), g.algorithms, g.chosen,
                  g.speedup);
      for (const std::string &why : g.rejected)
        std::printf("    rejected %s\n", why.c_str());
      if (!g.reverted.empty())
        std::printf("    algorithm 0 put back: the choice %s\n", g.reverted.c_str());
    }
  }
  std::printf("\n%-20s %12s %12s %8s\n", "steps", "default ms", "tuned ms", "speedup");
  for (const auto &[name, t] : r.steps)
    std::printf("%-20s %12.3f %12.3f %7.2fx\n", name.c_str(), 1e3 * t.defaultSeconds,
                1e3 * t.tunedSeconds, t.defaultSeconds / std::max(1e-12, t.tunedSeconds));
  if (r.outOfBudget)
    std::printf("\nthe budget ran out: kernels not measured keep their defaults\n");
  if (!r.untimed.empty()) {
    std::string names;
    for (const std::string &n : r.untimed)
      names += (names.empty() ? "" : ", ") + n;
    std::printf("not timed (budget): %s\n", names.c_str());
  }
  std::printf("\nstored in %s\n", r.cachePath.c_str());
}
} // namespace

int runTune(int argc, char **argv) {
  CommandLine args("fbt tune",
                   "Chooses the fastest kernel variants (and GEMM algorithms) for this "
                   "device and stores them in its tune cache.");
  args.positional("BUNDLE", "a bundle compiled with fbtc --tune-space=default|wide")
      .text("steps", "LIST",
            "probe only these steps, comma-separated (default: every step)")
      .text("cache", "FILE",
            "the tune cache to update (default: this device's file under "
            "$XDG_CACHE_HOME/fbt/tune, else ~/.cache/fbt/tune)")
      .number("budget", "SECONDS",
              "time for measuring, and again for timing the steps (default 120); "
              "kernels not reached keep their defaults")
      .integer("repeats", "N", "timed calls per variant and sampled call (default 5)")
      .flag("json", "print one JSON object instead of tables")
      .footer("A variant is kept only if every argument it writes matches the\n"
              "default's (f32 within 1e-4 + 1e-3|x|, bf16 within 1e-2 + |x|/64,\n"
              "f16 within 1e-3 + |x|/512, integers exactly) and it beats the\n"
              "default by 2%.");
  if (!args.parse(argc, argv))
    return 0;
  TuneSettings settings;
  settings.steps = splitList(args.get("steps"));
  settings.cachePath = args.get("cache");
  settings.budgetSeconds = args.getDouble("budget", 120);
  settings.repeats = (int)args.getInt("repeats", 5);
  if (settings.budgetSeconds <= 0 || settings.repeats < 1)
    throw RuntimeError("--budget must be > 0 and --repeats >= 1 (see --help)");
  TuneReport report = tuneBundle(args.require("BUNDLE"), settings);
  if (args.has("json"))
    std::printf("%s\n", dumpJson(report.toJson()).c_str());
  else
    printTable(report);
  return 0;
}

} // namespace fbt
