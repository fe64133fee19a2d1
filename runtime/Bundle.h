//===- Bundle.h - loading and validating a compiled bundle ------*- C++ -*-===//
//
// Reads the .fbtb format written by codegen/BundleWriter.h and checks every
// part before anything runs: magic and version, manifest length and
// checksum, blob offsets and checksums, and that every buffer a plan touches
// lies inside the buffer it names. A truncated, corrupt or wrong-target
// bundle is a RuntimeError naming the file and what is wrong.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_BUNDLE_H
#define FBT_RUNTIME_BUNDLE_H

#include "runtime/Json.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fbt {

struct BufferRef {
  enum class Kind { Input, Output, Const, Arena };
  Kind kind = Kind::Arena;
  int64_t index = 0;
  int64_t offset = 0;
  int64_t bytes = 0;
};

struct TensorSpec {
  std::string name;
  std::string dtype; ///< "f32", "i32", "i64"
  std::vector<int64_t> shape;
  int64_t bytes = 0;
  bool param = false;
  int64_t updates = -1;
};

struct ConstantSpec {
  std::string dtype; ///< "f32", "i32" or "i64"
  int64_t count = 0;
  double value = 0;

  int64_t bytes() const { return count * (dtype == "i64" ? 8 : 4); }
};

struct PlanOp {
  std::string kernel; ///< empty for a GEMM
  int64_t m = 0, n = 0, k = 0;
  bool transposeLhs = false, transposeRhs = false;
  std::vector<BufferRef> args;
};

struct OutputCopy {
  int64_t output = 0;
  BufferRef source;
};

struct StepPlan {
  std::string name, kind;
  int64_t passes = 0;
  int64_t arenaBytes = 0;
  std::vector<TensorSpec> inputs, outputs;
  std::vector<ConstantSpec> constants;
  std::vector<PlanOp> ops;
  std::vector<OutputCopy> copies;

  /// Index of the input or output called `name`, or -1.
  int64_t inputIndex(const std::string &name) const;
  int64_t outputIndex(const std::string &name) const;
};

struct ParamSpec {
  std::string name;
  std::vector<int64_t> shape;
  bool decay = false;
  bool feedback = false;
};

class Bundle {
public:
  /// Loads and validates `path`; `expectedTarget` ("cpu") must match.
  static Bundle load(const std::string &path, const std::string &expectedTarget);

  const std::string &path() const { return path_; }
  const Json &model() const { return manifest_.at("model"); }
  const Json &manifest() const { return manifest_; }
  const std::vector<ParamSpec> &params() const { return params_; }
  const std::vector<std::string> &kernels() const { return kernels_; }
  const std::string &kernelLibrary() const { return library_; }
  bool hasStep(const std::string &name) const { return steps_.count(name) != 0; }
  const StepPlan &step(const std::string &name) const;
  const std::map<std::string, StepPlan> &steps() const { return steps_; }

private:
  std::string path_;
  Json manifest_;
  std::vector<ParamSpec> params_;
  std::vector<std::string> kernels_;
  std::map<std::string, StepPlan> steps_;
  std::string library_;
};

uint64_t fnv1a64(const void *data, size_t size);

} // namespace fbt

#endif // FBT_RUNTIME_BUNDLE_H
