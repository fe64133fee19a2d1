//===- BundleFormat.h - the .fbtb format, defined once ----------*- C++ -*-===//
//
// What a bundle holds (docs/bundle-format.md), as the compiler writes it and
// the runtime reads it: the step plans, kernel launches, parameters and
// target as structs, their JSON both ways, and the container (header,
// manifest, blobs, checksums). fbtc fills these structs and writes them
// through this file; the runtime's loader (Bundle.h) reads through it. No
// LLVM: the runtime-only build has it too.
//
// Reading validates as it goes: a missing key, a wrong kind, an unknown
// buffer kind or element type, a launch outside CUDA's limits, a reference
// outside the buffer it names, a checksum that does not match are
// RuntimeErrors saying which.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_FORMAT_BUNDLEFORMAT_H
#define FBT_RUNTIME_FORMAT_BUNDLEFORMAT_H

#include "runtime/base/DType.h"
#include "runtime/base/Json.h"
#include "runtime/format/Kinds.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fbt {

//===----------------------------------------------------------------------===//
// Step plans
//===----------------------------------------------------------------------===//

/// A byte range of one of a step's buffers.
struct BufferRef {
  enum class Kind { Input, Output, Const, Arena };
  Kind kind = Kind::Arena;
  int64_t index = 0;  ///< input/output/constant number (0 for the arena)
  int64_t offset = 0; ///< bytes into that buffer
  int64_t bytes = 0;
};

/// A step's input or output.
struct TensorSpec {
  std::string name;
  DType dtype = DType::F32; ///< F32, I32 or I64
  std::vector<int64_t> shape;
  int64_t bytes = 0;
  bool param = false;
  int64_t updates = -1; ///< outputs: the input written in place, or -1
};

/// A buffer filled with one value, which ops read.
struct ConstantSpec {
  DType dtype = DType::F32; ///< F32, I32 or I64
  int64_t count = 0;
  double value = 0;

  int64_t bytes() const { return count * (int64_t)dtypeSize(dtype); }
  /// Writes the constant's `count` elements to `out` (bytes() of them);
  /// RuntimeError naming `step` for a type a constant cannot have.
  void fill(void *out, const std::string &step) const;
};

/// One entry of a step's plan, told apart by `kind`: a kernel call, a
/// row-major GEMM result = lhs x rhs, a collective across the ranks of a
/// run, or the wait for one.
struct PlanOp {
  enum class Kind { Kernel, Gemm, Collective, Wait };
  Kind kind = Kind::Gemm;
  std::string kernel; ///< Kernel: its symbol
  /// ZeRO-1 (a kernel call): the parameter whose owner alone makes this
  /// call (runtime/format/ZeroShards.h); on the other ranks each result is
  /// its `tied` operand, copied where the two are apart. "": every rank.
  std::string shard;
  std::vector<int64_t> tied; ///< per result: its operand, or -1 (with `shard`)
  /// Collective: started here, args being operands then results, one per
  /// tensor:
  ///   AllReduce      each result the mean (or sum) over every rank and
  ///                  accumulated micro-batch of its operand;
  ///   ReduceScatter  the same on the rank owning the tensor's parameter
  ///                  (`shards`), unspecified elsewhere;
  ///   AllGather      each result, on every rank, the operand as the
  ///                  owner of its parameter holds it.
  /// Wait: collective `bucket`'s results are ready from here on (its
  /// operands stay untouched until then).
  CollectiveKind collective = CollectiveKind::AllReduce;
  Reduction reduction = Reduction::Mean; ///< AllReduce, ReduceScatter
  int64_t bucket = -1;                   ///< Collective, Wait
  /// A collective's operands by name: what the gradient-only step returns
  /// them as, which accumulated micro-batches add in ("" for a value of the
  /// step alone); an all_gather's are parameters.
  std::vector<std::string> names;
  std::vector<std::string> shards; ///< ReduceScatter, AllGather: each operand's parameter
  int64_t m = 0, n = 0, k = 0;
  bool transposeLhs = false, transposeRhs = false;
  /// A GEMM's element types: F32, or BF16 under bf16 storage (GPU).
  DType lhsType = DType::F32, rhsType = DType::F32, resultType = DType::F32;
  std::vector<BufferRef> args; ///< operands then results

  bool isKernel() const { return kind == Kind::Kernel; }
  bool isGemm() const { return kind == Kind::Gemm; }
  bool isCollective() const { return kind == Kind::Collective; }
  bool isWait() const { return kind == Kind::Wait; }
  /// A collective or its wait: what a step's collectives run.
  bool isCollectiveOrWait() const { return isCollective() || isWait(); }
  /// What traces and timings call it: the kernel's symbol, "gemm", the
  /// collective's name ("all_reduce"), or "wait".
  std::string label() const;
};

/// A GEMM's shape as the tune cache keys it: "m,n,k,ta,tb,lhs,rhs,result"
/// ("64,256,768,n,t,bf16,bf16,f32").
std::string gemmShapeKey(const PlanOp &op);

/// An output copied out of the arena once the ops have run.
struct OutputCopy {
  int64_t output = 0;
  BufferRef source;
};

struct StepPlan {
  std::string name;
  StepKind kind = StepKind::Train;
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

/// kernel -> the arguments it writes before it has last read its operands
/// (the manifest's "early_writes"; GPU attention's backward parks per-query
/// statistics in dq). Each call must keep those buffers apart from every
/// other argument's.
using EarlyWrites = std::map<std::string, std::vector<int64_t>>;

Json toJson(const StepPlan &plan);
/// Reads the plan of step `name`; checks every reference lies inside the
/// buffer it names, every kernel it calls is in `kernels`, and no early
/// write shares a byte with another argument of its call.
StepPlan stepPlanFromJson(const std::string &name, const Json &json,
                          const std::vector<std::string> &kernels,
                          const EarlyWrites &earlyWrites = {});

Json toJson(const EarlyWrites &earlyWrites);
EarlyWrites earlyWritesFromJson(const Json &json);

//===----------------------------------------------------------------------===//
// The rest of the manifest
//===----------------------------------------------------------------------===//

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
/// kernel -> its launches, in order.
using LaunchTable = std::map<std::string, std::vector<KernelLaunch>>;

Json toJson(const KernelLaunch &launch);
/// A kernel's launches, each within the limits every CUDA GPU shares.
std::vector<KernelLaunch> kernelLaunchesFromJson(const std::string &kernel,
                                                 const Json &json);

/// What a bundle was compiled for (the manifest's "target").
struct BundleTarget {
  TargetKind kind = TargetKind::Cpu; ///< simt: GPU kernels, emulated
  std::string chip;     ///< nvptx: "sm_90"; cpu: the LLVM CPU name
  std::string features; ///< nvptx: "+ptx80"; cpu: its vector extensions, "+avx2,+fma"
  std::string triple;   ///< cpu, simt: the triple compiled for
  std::string arch;     ///< cpu, simt: its architecture ("x86_64")
  std::string storage;  ///< nvptx, simt: training activations, "bf16" or "f32"
  /// cpu: how its int8 inference weights' bytes lie (WeightNames.h): the
  /// kernels read them so, and the runtime binds them so.
  Int8Layout int8Layout = Int8Layout::Rows;
  bool gpu() const { return kind == TargetKind::Nvptx; }
  /// The GPU's kernels and launches, compiled for this CPU (tests).
  bool emulated() const { return kind == TargetKind::Simt; }
};

Json toJson(const BundleTarget &target);
BundleTarget bundleTargetFromJson(const Json &json);

struct ParamSpec {
  std::string name;
  std::vector<int64_t> shape;
  bool decay = false;
  bool feedback = false;
};

Json toJson(const ParamSpec &param);
ParamSpec paramSpecFromJson(const Json &json);

/// One build of a kernel (fbtc --tune-space): its symbol and the knob
/// values it was built with (codegen/kernels/KernelConfig.h), e.g. {"grain": 8}.
/// Every variant of a kernel takes the same arguments as the kernel and
/// computes the same results (up to rounding), so the runtime may call any
/// of them where a plan calls the kernel.
struct KernelVariant {
  std::string symbol;
  std::map<std::string, int64_t> config;
  bool operator==(const KernelVariant &o) const {
    return symbol == o.symbol && config == o.config;
  }
};
/// A kernel built in several configurations: the element type of each of
/// its arguments (the tuner compares variants' results with a tolerance per
/// type) and its builds, the kernel itself (the default) first.
struct KernelVariants {
  std::vector<DType> args;
  std::vector<KernelVariant> builds;
  bool operator==(const KernelVariants &o) const {
    return args == o.args && builds == o.builds;
  }
};
/// kernel -> its variants. Only kernels built in more than one
/// configuration are listed.
using VariantTable = std::map<std::string, KernelVariants>;

Json toJson(const VariantTable &variants);
/// Checks every symbol is one of `kernels`, listed once, the kernel's own
/// first, and that a variant has the early writes of its kernel.
VariantTable variantTableFromJson(const Json &json,
                                  const std::vector<std::string> &kernels,
                                  const EarlyWrites &earlyWrites);

/// What a bundle compiled with fbtc --tuned was specialized from: the tune
/// cache entry's device and time, and the GEMM algorithms chosen there
/// (gemmShapeKey -> index into cuBLASLt's heuristic list).
struct TunedBuild {
  Json device;
  std::string tunedAt;
  std::map<std::string, int64_t> gemmAlgorithms;
};

Json toJson(const TunedBuild &tuned);
TunedBuild tunedBuildFromJson(const Json &json);

/// The manifest, whole: what fbtc fills and the loader reads.
struct BundleManifest {
  BundleTarget target;
  Json model; ///< the resolved spec (ModelConfig.h reads it)
  std::vector<ParamSpec> params;
  std::vector<std::string> kernels;
  int64_t largestArenaBytes = 0;
  std::map<std::string, StepPlan> steps;
  EarlyWrites earlyWrites;
  LaunchTable launches; ///< GPU and emulated targets: every kernel's
  VariantTable variants; ///< optional: kernels built in several configurations
  std::optional<TunedBuild> tuned; ///< optional: fbtc --tuned
};

/// "format": "fbt-bundle" and every part above; launches only for GPU and
/// emulated targets, early_writes, variants and tuned only when there are
/// any. The container
/// adds "blobs".
Json toJson(const BundleManifest &manifest);
/// Reads and checks every part (the container has checked "blobs").
BundleManifest bundleManifestFromJson(const Json &json);

//===----------------------------------------------------------------------===//
// The container
//===----------------------------------------------------------------------===//

/// "FBTB" then the format version "NDL2".
constexpr char kBundleMagic[8] = {'F', 'B', 'T', 'B', 'N', 'D', 'L', '2'};
/// Magic, manifest length, manifest checksum.
constexpr size_t kBundleHeaderBytes = 24;
using BundleBlobs = std::vector<std::pair<std::string, std::string>>;

/// The file's bytes: header, the manifest with the blobs' table added under
/// "blobs", padding, and the blobs at 64-byte aligned offsets.
std::string encodeBundle(Json manifest, const BundleBlobs &blobs);
/// encodeBundle, written atomically (FileIO.h).
void writeBundleFile(const std::string &path, Json manifest, const BundleBlobs &blobs);

struct DecodedBundle {
  Json manifest;
  std::map<std::string, std::string> blobs;
};
/// Checks the magic, the version, the lengths and every checksum, and parses
/// the manifest. Errors are "<path>: not a valid fbt bundle: ...".
DecodedBundle decodeBundle(const std::string &file, const std::string &path);

} // namespace fbt

#endif // FBT_RUNTIME_FORMAT_BUNDLEFORMAT_H
