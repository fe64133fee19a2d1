//===- ApplyCache.cpp - a session runs the kernels fbt tune chose ---------===//
//
// The tune cache's entry for a bundle on this device, checked against the
// bundle (its kernels' variants), becomes the session's choice of builds and
// GEMM algorithms; a missing, foreign or stale cache is one warning and the
// default kernels.
//
//===----------------------------------------------------------------------===//

#include "runtime/tune/Tuner.h"

#include "runtime/base/Error.h"
#include "runtime/base/Hash.h"
#include "runtime/session/Session.h"
#include "runtime/tune/TuneKeys.h"

#include <string>
#include <unistd.h>
#include <vector>

namespace fbt {

using tune::gemmAlgorithms;

std::string bundleKey(const Bundle &bundle) {
  uint64_t h = kFnvBasis;
  for (const char *blob : {"kernels.so", "kernels.ptx", "kernels.cubin"})
    if (const std::string *b = bundle.blob(blob))
      h = fnvMix(fnvMix(h, blob), *b);
  if (const Json *v = jsonFind(bundle.manifest(), "variants"))
    h = fnvMix(h, dumpJson(*v));
  h = fnvMix(h, dumpJson(jsonAt(bundle.manifest(), "target")));
  return hexDigits(h);
}

KernelChoice loadKernelChoice(const Bundle &bundle, const Json &deviceKey,
                              const TuneOptions &options, std::string &note,
                              std::vector<TunedGemm> *gemms) {
  note.clear();
  if (!options.enabled)
    return {};
  bool named = !options.path.empty();
  std::string path = named ? options.path : tuneCachePath(deviceKey);
  if (::access(path.c_str(), F_OK) != 0) {
    if (named)
      tuneWarning("no tune cache at " + path + "; using the default kernels");
    return {};
  }
  TuneCache cache;
  try {
    cache = readTuneCache(path);
  } catch (const std::exception &e) {
    tuneWarning(std::string(e.what()) + "; using the default kernels");
    return {};
  }
  if (cache.device != deviceKey) {
    tuneWarning("tune cache " + path + " is for another device (" +
                dumpJson(cache.device) + "); using the default kernels");
    return {};
  }
  auto it = cache.entries.find(bundleKey(bundle));
  if (it == cache.entries.end()) {
    if (named)
      tuneWarning("tune cache " + path + " has no entry for " + bundle.path() +
                  " (tuned for another build of it?); using the default kernels");
    return {};
  }
  // Every choice must still be a variant of its kernel, built as recorded.
  const VariantTable &variants = bundle.variants();
  KernelChoice choice;
  for (const auto &[kernel, tuned] : it->second.kernels) {
    auto v = variants.find(kernel);
    bool found = false;
    if (v != variants.end())
      for (const KernelVariant &b : v->second.builds)
        found |= b.symbol == tuned.symbol && b.config == tuned.config;
    if (!found) {
      tuneWarning("tune cache " + path + " is stale: '" + tuned.symbol +
                  "' is not a variant of '" + kernel + "' in " + bundle.path() +
                  "; using the default kernels");
      return {};
    }
    if (tuned.symbol != kernel)
      choice[kernel] = tuned.symbol;
  }
  if (gemms)
    *gemms = it->second.gemms;
  note = "using tuned kernels from " + path + " (" + std::to_string(choice.size()) +
         " of " + std::to_string(variants.size()) + " tunable kernels changed, " +
         std::to_string(it->second.gemms.size()) + " GEMM shapes)";
  return choice;
}

bool useTuning(Session &session, const TuneOptions &options) {
  std::string note;
  std::vector<TunedGemm> gemms;
  Json key = session.device().tuneKey();
  KernelChoice choice = loadKernelChoice(session.bundle(), key, options, note, &gemms);
  bool tuned = !note.empty();
  // A bundle specialized by fbtc --tuned carries its choices: its kernels
  // are the chosen builds, and its GEMM algorithms hold on that device only.
  if (!tuned && options.enabled && session.bundle().tuned()) {
    const TunedBuild &t = *session.bundle().tuned();
    tuned = true;
    if (t.device == key) {
      for (const auto &[shape, algorithm] : t.gemmAlgorithms)
        gemms.push_back({shape, algorithm, 1});
      note = "using the kernels and GEMM algorithms tuned on " + t.tunedAt +
             " that this bundle was compiled with";
    } else {
      note = "using the kernels this bundle was tuned with, on another device (" +
             dumpJson(t.device) + "); its GEMM algorithms are not used here";
    }
  }
  if (!tuned)
    return false;
  session.selectBuilds(std::move(choice), gemmAlgorithms(gemms));
  std::fprintf(stderr, "fbt: %s\n", note.c_str());
  return true;
}

} // namespace fbt
