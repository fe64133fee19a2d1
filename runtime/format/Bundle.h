//===- Bundle.h - loading and validating a compiled bundle ------*- C++ -*-===//
//
// Reads the .fbtb format (runtime/format/BundleFormat.h, docs/bundle-format.md) and
// checks every part before anything runs: magic and version, manifest length
// and checksum, blob offsets and checksums, and that every buffer a plan
// touches lies inside the buffer it names. A truncated, corrupt or
// wrong-target bundle is a RuntimeError naming the file and what is wrong.
//
// Two targets: "cpu" bundles carry a shared library (kernels.so); "nvptx"
// bundles carry PTX (kernels.ptx), a cubin for their chip when the compiling
// machine had ptxas (kernels.cubin), and for every kernel the launches that
// run it (entry symbol, grid, block). Plans are the same for both.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_FORMAT_BUNDLE_H
#define FBT_RUNTIME_FORMAT_BUNDLE_H

#include "runtime/base/Json.h"
#include "runtime/format/BundleFormat.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fbt {

class Bundle {
public:
  /// Loads and validates `path`, a bundle for any target this runtime knows.
  static Bundle load(const std::string &path);

  const std::string &path() const { return path_; }
  /// The resolved spec (parseModelConfig reads it).
  const Json &model() const { return contents_.model; }
  /// The manifest as stored (fbt inspect --json).
  const Json &manifest() const { return manifestJson_; }
  const std::vector<ParamSpec> &params() const { return contents_.params; }
  /// Values in all the parameters.
  int64_t parameterCount() const;
  const BundleTarget &target() const { return contents_.target; }
  const std::vector<std::string> &kernels() const { return contents_.kernels; }
  /// A blob by name ("kernels.so", "kernels.ptx", "kernels.cubin"); null if
  /// the bundle has none of that name.
  const std::string *blob(const std::string &name) const;
  /// The CPU target's kernel library (kernels.so).
  const std::string &kernelLibrary() const;
  /// The GPU (or emulated GPU) target's launches of `kernel`, in order (at
  /// least one).
  const std::vector<KernelLaunch> &launches(const std::string &kernel) const;
  /// Kernels built in several configurations (fbtc --tune-space).
  const VariantTable &variants() const { return contents_.variants; }
  /// What fbtc --tuned specialized it from, if it did.
  const std::optional<TunedBuild> &tuned() const { return contents_.tuned; }
  bool hasStep(const std::string &name) const { return contents_.steps.count(name) != 0; }
  const StepPlan &step(const std::string &name) const;
  const std::map<std::string, StepPlan> &steps() const { return contents_.steps; }

private:
  std::string path_;
  Json manifestJson_;
  BundleManifest contents_;
  std::map<std::string, std::string> blobs_;
};

} // namespace fbt

#endif // FBT_RUNTIME_FORMAT_BUNDLE_H
