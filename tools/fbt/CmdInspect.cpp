//===- CmdInspect.cpp - fbt inspect ---------------------------------------===//

#include "CommandLine.h"
#include "Commands.h"

#include "runtime/format/Bundle.h"
#include "runtime/format/ModelConfig.h"
#include "runtime/hal/Device.h"

#include <cstdio>

namespace fbt {

int runInspect(int argc, char **argv) {
  CommandLine args("fbt inspect",
                   "Validates a bundle and prints its model, target, the backend\n"
                   "that runs it (and whether it can run here), steps (with their\n"
                   "arena sizes and call counts) and kernels.");
  args.positional("BUNDLE", "the compiled bundle")
      .flag("json", "print the bundle's manifest as JSON instead");
  if (!args.parse(argc, argv))
    return 0;
  Bundle b = Bundle::load(args.require("BUNDLE"));
  if (args.has("json")) {
    std::puts(dumpJson(b.manifest(), 2).c_str());
    return 0;
  }
  ModelConfig m = parseModelConfig(b.model());
  std::printf("bundle   %s\n", b.path().c_str());
  std::printf("model    %s: V=%lld D=%lld L=%lld H=%lld F=%lld, fusion %s\n",
              m.name.c_str(), (long long)m.vocabSize, (long long)m.hiddenSize,
              (long long)m.numHiddenLayers, (long long)m.numAttentionHeads,
              (long long)m.intermediateSize, kindName(m.feedback.fusion));
  std::printf("inference weights %s, activations %s (the products by weights), "
              "KV cache %s\n",
              kindName(m.inference.weights), kindName(m.inference.activations),
              kindName(m.inference.kvCache));
  const BundleTarget &t = b.target();
  std::string detail = t.chip;
  if (!t.features.empty())
    detail += ", " + t.features;
  if (t.int8Layout != Int8Layout::Rows)
    detail += std::string(", int8 weights ") + kindName(t.int8Layout);
  std::printf("target   %s (%s)\n", kindName(t.kind), detail.c_str());
  std::printf("backend  %s\n", backendSummary(t).c_str());
  std::printf("params   %zu tensors, %lld values\n", b.params().size(),
              (long long)b.parameterCount());
  if (t.gpu()) {
    int64_t launches = 0;
    for (const std::string &k : b.kernels())
      launches += b.launches(k).size();
    std::printf("kernels  %zu generated, %zu bytes of PTX%s, %lld launches\n",
                b.kernels().size(), b.blob("kernels.ptx")->size(),
                b.blob("kernels.cubin") ? " and a cubin" : "", (long long)launches);
  } else {
    std::printf("kernels  %zu generated, %zu bytes of code\n", b.kernels().size(),
                b.kernelLibrary().size());
  }
  if (!b.variants().empty()) {
    size_t builds = 0;
    for (const auto &[kernel, v] : b.variants())
      builds += v.builds.size() - 1;
    std::printf("variants %zu kernels tunable, %zu other builds (fbt tune chooses)\n",
                b.variants().size(), builds);
  }
  if (b.tuned())
    std::printf("tuned    the builds fbt tune chose on %s, %s\n",
                dumpJson(b.tuned()->device).c_str(), b.tuned()->tunedAt.c_str());
  std::printf("steps\n");
  for (const auto &[name, plan] : b.steps()) {
    int64_t gemms = 0;
    for (const PlanOp &op : plan.ops)
      gemms += op.isGemm();
    std::printf("  %-16s %-8s arena %10lld B  %4zu calls (%lld GEMMs)\n", name.c_str(),
                kindName(plan.kind), (long long)plan.arenaBytes, plan.ops.size(),
                (long long)gemms);
  }
  return 0;
}

} // namespace fbt
