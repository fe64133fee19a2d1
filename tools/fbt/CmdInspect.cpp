//===- CmdInspect.cpp - fbt inspect ---------------------------------------===//

#include "Args.h"
#include "Commands.h"

#include "runtime/Bundle.h"
#include "runtime/Device.h"

#include <cstdio>

namespace fbt {

int runInspect(int argc, char **argv) {
  Args args(argc, argv, 2, {}, {"help", "json"});
  if (args.has("help")) {
    std::puts("usage: fbt inspect BUNDLE [--json]\n\n"
              "Validates a bundle and prints its model, target, the backend\n"
              "that runs it (and whether it can run here), steps (with their\n"
              "arena sizes and call counts) and kernels.");
    return 0;
  }
  Bundle b = Bundle::load(args.require(0, "BUNDLE"));
  if (args.has("json")) {
    std::puts(b.manifest().dump(2).c_str());
    return 0;
  }
  const Json &m = b.model();
  std::printf("bundle   %s\n", b.path().c_str());
  std::printf("model    %s: V=%lld D=%lld L=%lld H=%lld F=%lld, fusion %s\n",
              m.at("name").asString().c_str(), (long long)m.at("vocab_size").asInt(),
              (long long)m.at("hidden_size").asInt(),
              (long long)m.at("num_hidden_layers").asInt(),
              (long long)m.at("num_attention_heads").asInt(),
              (long long)m.at("intermediate_size").asInt(),
              m.at("feedback").at("fusion").asString().c_str());
  const BundleTarget &t = b.target();
  std::string detail = t.chip;
  if (!t.features.empty())
    detail += ", " + t.features;
  std::printf("target   %s (%s)\n", t.kind.c_str(), detail.c_str());
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
  std::printf("steps\n");
  for (const auto &[name, plan] : b.steps()) {
    int64_t gemms = 0;
    for (const PlanOp &op : plan.ops)
      gemms += op.kernel.empty();
    std::printf("  %-16s %-8s arena %10lld B  %4zu calls (%lld GEMMs)\n", name.c_str(),
                plan.kind.c_str(), (long long)plan.arenaBytes, plan.ops.size(),
                (long long)gemms);
  }
  return 0;
}

} // namespace fbt
