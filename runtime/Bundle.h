//===- Bundle.h - loading and validating a compiled bundle ------*- C++ -*-===//
//
// Reads the .fbtb format written by codegen/BundleWriter.h and checks every
// part before anything runs: magic and version, manifest length and
// checksum, blob offsets and checksums, and that every buffer a plan touches
// lies inside the buffer it names. A truncated, corrupt or wrong-target
// bundle is a RuntimeError naming the file and what is wrong.
//
// Two targets: "cpu" bundles carry a shared library (kernels.so); "nvptx"
// bundles carry PTX (kernels.ptx), a cubin for their chip when the compiling
// machine had ptxas (kernels.cubin), and for every kernel the launches that
// run it (entry symbol, grid, block). Plans are the same for both.
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
  /// A GEMM's element types: "f32", or "bf16" under bf16 storage (GPU).
  std::string lhsType = "f32", rhsType = "f32", resultType = "f32";
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

/// One launch of a GPU kernel. Every launch of a kernel takes the kernel's
/// full argument list (PlanOp::args), one device pointer each.
struct KernelLaunch {
  std::string entry; ///< the PTX .entry symbol
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  /// The static shared memory it declares (its PTX's .shared arrays): the
  /// launch passes no dynamic shared memory.
  uint32_t sharedBytes = 0;
  /// Its threads meet at barriers (the SIMT emulator runs them as coroutines).
  bool cooperative = false;
};

/// What a bundle was compiled for (the manifest's "target").
struct BundleTarget {
  std::string kind;     ///< "cpu", "nvptx", or "simt" (GPU kernels emulated)
  std::string chip;     ///< nvptx: "sm_90"; cpu: the LLVM CPU name
  std::string features; ///< nvptx: "+ptx80"
  bool gpu() const { return kind == "nvptx"; }
  /// The GPU's kernels and launches, compiled for this CPU (tests).
  bool emulated() const { return kind == "simt"; }
};

struct ParamSpec {
  std::string name;
  std::vector<int64_t> shape;
  bool decay = false;
  bool feedback = false;
};

class Bundle {
public:
  /// Loads and validates `path`, a bundle for any target this runtime knows.
  static Bundle load(const std::string &path);

  const std::string &path() const { return path_; }
  const Json &model() const { return jsonAt(manifest_, "model"); }
  const Json &manifest() const { return manifest_; }
  const std::vector<ParamSpec> &params() const { return params_; }
  /// Values in all the parameters.
  int64_t parameterCount() const;
  const BundleTarget &target() const { return target_; }
  const std::vector<std::string> &kernels() const { return kernels_; }
  /// A blob by name ("kernels.so", "kernels.ptx", "kernels.cubin"); null if
  /// the bundle has none of that name.
  const std::string *blob(const std::string &name) const;
  /// The CPU target's kernel library (kernels.so).
  const std::string &kernelLibrary() const;
  /// The GPU (or emulated GPU) target's launches of `kernel`, in order (at
  /// least one).
  const std::vector<KernelLaunch> &launches(const std::string &kernel) const;
  bool hasStep(const std::string &name) const { return steps_.count(name) != 0; }
  const StepPlan &step(const std::string &name) const;
  const std::map<std::string, StepPlan> &steps() const { return steps_; }

private:
  std::string path_;
  Json manifest_;
  BundleTarget target_;
  std::vector<ParamSpec> params_;
  std::vector<std::string> kernels_;
  std::map<std::string, StepPlan> steps_;
  std::map<std::string, std::string> blobs_;
  std::map<std::string, std::vector<KernelLaunch>> launches_;
};

uint64_t fnv1a64(const void *data, size_t size);

} // namespace fbt

#endif // FBT_RUNTIME_BUNDLE_H
