//===- SimtCheck.cpp - the GPU's kernels against the CPU's, on the CPU ----===//
//
//   fbt-simt-check CPU.mlir GPU.mlir [--rtol R] [--atol A]
//
// CPU.mlir and GPU.mlir are one spec's `fbtc --emit=kernels` without and with
// an NVIDIA --target. Kernels pair up through their call sites (the steps
// call them in the same order; the GPU's f32 -> bf16 copies for GEMMs have no
// twin and are checked against rounding). Each pair is compiled both ways
// (the CPU's as the CPU target builds it; the GPU's split into its launches,
// as the NVIDIA target does, then compiled for this CPU and run by the SIMT
// emulator), run on the same random inputs (rounded to bf16 where the GPU
// stores bf16), and its outputs compared:
//   |gpu - cpu| <= atol + rtol * max |cpu|   for each output.
// The CPU kernels are the ones the end-to-end tests check against PyTorch,
// so this checks the GPU mapping itself: grids, block reductions, atomics,
// the attention launches. Kernel variants (fbtc --tune-space) are checked
// too: a GPU one against its kernel's CPU twin, a CPU one against the CPU
// kernel it stands in for. The inference weights' kernels (fbtc
// --inference-weights: int8 with f16 scales, or bf16) are also checked on
// the CPU against a reference GEMV computed here from the ops' definition,
// at the call's shapes. Exit status 1 if any kernel differs.
//
//===----------------------------------------------------------------------===//

#include "runtime/base/Bf16.h"
#include "runtime/format/QuantizedWeights.h"
#include "runtime/format/Safetensors.h"
#include "runtime/format/WeightNames.h"
#include "runtime/hal/cpu/CpuTeam.h"
#include "runtime/hal/simt/Emulator.h"

#include "codegen/cpu/CpuTarget.h"
#include "codegen/simt/SimtTarget.h"
#include "dialect/FbtDialect.h"
#include "dialect/FbtOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Parser/Parser.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <random>
#include <set>

using namespace mlir;
using llvm::outs;

namespace {
llvm::cl::opt<std::string> cpuPath(llvm::cl::Positional, llvm::cl::Required,
                                   llvm::cl::desc("<cpu kernels .mlir>"));
llvm::cl::opt<std::string> gpuPath(llvm::cl::Positional,
                                   llvm::cl::desc("<gpu kernels .mlir>"));
llvm::cl::opt<bool> referenceOnly(
    "reference-only",
    llvm::cl::desc("no GPU kernels: check the CPU's inference-weight kernels "
                   "against the reference alone (int8 activations have no GPU twin)"));
llvm::cl::opt<double> relTol("rtol", llvm::cl::init(1e-4),
                           llvm::cl::desc("tolerance relative to max |cpu|"));
llvm::cl::opt<double> bf16Tol("bf16-rtol", llvm::cl::init(1e-2),
                              llvm::cl::desc("relative tolerance for kernels "
                                             "with bf16 buffers"));
llvm::cl::opt<double> absTol("atol", llvm::cl::init(1e-6),
                           llvm::cl::desc("absolute tolerance"));
llvm::cl::opt<std::string> cpuName(
    "cpu", llvm::cl::desc("the LLVM CPU to compile the CPU kernels for (default x86-64-v3; "
                          "the kernels fbtc --cpu built for it, as its AVX-512 int8 dot)"));

/// The CPU kernels' target options: --cpu's CPU.
mlir::fbt::CpuTargetOptions cpuOptions() {
  mlir::fbt::CpuTargetOptions options;
  options.cpu = cpuName;
  return options;
}

/// A shared library loaded from its bytes (written to a temporary file).
void *loadLibrary(const std::string &bytes) {
  llvm::SmallString<128> path;
  if (llvm::sys::fs::createTemporaryFile("fbt-simt", "so", path))
    return nullptr;
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    os << bytes;
  }
  void *lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!lib)
    llvm::errs() << "dlopen: " << dlerror() << "\n";
  else
    ::fbt::attachKernelThreads(lib); // the CPU kernels' parallel loops
  llvm::sys::fs::remove(path);
  return lib;
}

/// One kernel argument: a flat buffer of `count` elements of 4 or 8 bytes.
struct Buffer {
  Type type;
  int64_t count = 0;
  std::vector<char> bytes;
};

int64_t elementBytes(Type t) {
  return t.isInteger(64) ? 8 : t.isBF16() || t.isF16() ? 2 : t.isInteger(8) ? 1 : 4;
}

/// Random inputs that every kernel accepts: floats in [0.25, 1.25) (logs,
/// square roots and divisions stay finite), 32-bit ids in [0, 4) (tokens,
/// targets and positions below every size), any 64-bit seed; inference
/// weights' int8 values in [-127, 127] and f16 scales as the floats.
/// `roundBf16` makes the floats bf16 values, for a twin that stores them in
/// bf16.
void fill(Buffer &b, std::mt19937_64 &rng, bool roundBf16) {
  b.bytes.assign(b.count * elementBytes(b.type), 0);
  for (int64_t i = 0; i < b.count; ++i) {
    if (b.type.isInteger(8)) {
      b.bytes[i] = (char)(int8_t)(int(rng() % 255) - 127);
    } else if (b.type.isF16() || b.type.isBF16()) {
      float v = 0.25f + std::uniform_real_distribution<float>(0, 1)(rng);
      uint16_t h = b.type.isF16() ? ::fbt::f32ToF16(v) : ::fbt::floatToBf16(v);
      std::memcpy(&b.bytes[2 * i], &h, 2);
    } else if (b.type.isF32()) {
      float v = 0.25f + std::uniform_real_distribution<float>(0, 1)(rng);
      if (roundBf16)
        v = ::fbt::bf16ToFloat(::fbt::floatToBf16(v));
      std::memcpy(&b.bytes[4 * i], &v, 4);
    } else if (b.type.isInteger(32)) {
      int32_t v = (int32_t)(rng() % 4);
      std::memcpy(&b.bytes[4 * i], &v, 4);
    } else {
      uint64_t v = rng();
      std::memcpy(&b.bytes[8 * i], &v, 8);
    }
  }
}

/// `from`'s contents in `to`'s element type (f32 <-> bf16, else a copy).
void convert(const Buffer &from, Buffer &to) {
  to.bytes.assign(to.count * elementBytes(to.type), 0);
  if (from.type == to.type) {
    to.bytes = from.bytes;
    return;
  }
  for (int64_t i = 0; i < to.count; ++i) {
    if (to.type.isBF16()) {
      float f;
      std::memcpy(&f, &from.bytes[4 * i], 4);
      uint16_t h = ::fbt::floatToBf16(f);
      std::memcpy(&to.bytes[2 * i], &h, 2);
    } else {
      uint16_t h;
      std::memcpy(&h, &from.bytes[2 * i], 2);
      float f = ::fbt::bf16ToFloat(h);
      std::memcpy(&to.bytes[4 * i], &f, 4);
    }
  }
}

double value(const Buffer &b, int64_t i) {
  if (b.type.isInteger(8))
    return (int8_t)b.bytes[i];
  if (b.type.isF16()) {
    uint16_t h;
    std::memcpy(&h, &b.bytes[2 * i], 2);
    return ::fbt::f16ToF32(h);
  }
  if (b.type.isBF16()) {
    uint16_t h;
    std::memcpy(&h, &b.bytes[2 * i], 2);
    return ::fbt::bf16ToFloat(h);
  }
  if (b.type.isF32()) {
    float v;
    std::memcpy(&v, &b.bytes[4 * i], 4);
    return v;
  }
  if (b.type.isInteger(32)) {
    int32_t v;
    std::memcpy(&v, &b.bytes[4 * i], 4);
    return v;
  }
  int64_t v;
  std::memcpy(&v, &b.bytes[8 * i], 8);
  return (double)v;
}

/// What an inference-weight kernel (`stem` quantized_matmul or dequantize)
/// computes from its inputs `in`, by the ops' definitions (FbtOps.td), in
/// double: y[m, n] = sum_k x[m, k] * W[n, k], or W itself, where W[n, k] is
/// the bf16 value or int8 value times its group's scale. `weight` is the
/// weight operand's type at the call ([N, K]); the result as an f32 buffer.
Buffer reference(llvm::StringRef stem, RankedTensorType weight, const std::vector<Buffer> &in) {
  int64_t n = weight.getDimSize(0), k = weight.getDimSize(1);
  int64_t groups = ::fbt::weights::groupsOf(k);
  bool matmul = stem.starts_with("quantized_matmul");
  // W as doubles, read once: the bf16 value, or the int8 value times its
  // group's scale.
  const Buffer &w = in[matmul ? 1 : 0];
  const Buffer *scales = w.type.isInteger(8) ? &in[matmul ? 2 : 1] : nullptr;
  std::vector<double> wd(n * k);
  for (int64_t r = 0; r < n; ++r)
    for (int64_t c = 0; c < k; ++c) {
      double v = value(w, r * k + c);
      wd[r * k + c] =
          scales ? v * value(*scales, r * groups + c / ::fbt::weights::kGroup) : v;
    }
  std::vector<float> y;
  if (!matmul) {
    for (double v : wd)
      y.push_back((float)v);
  } else {
    // x as doubles; for quantized_matmul_a8 its rows quantized per group of
    // 32 first (FbtOps.td: d = max|x| / 127 in f32, x / d rounded to
    // nearest even), in f32 as the op defines it.
    int64_t rows = in[0].count / k;
    std::vector<double> xd(rows * k);
    for (int64_t i = 0; i < rows * k; ++i)
      xd[i] = value(in[0], i);
    if (stem == "quantized_matmul_a8")
      for (int64_t m = 0; m < rows; ++m)
        for (int64_t from = 0; from < k; from += ::fbt::weights::kGroup) {
          int64_t to = std::min(k, from + ::fbt::weights::kGroup);
          float amax = 0;
          for (int64_t i = from; i < to; ++i)
            amax = std::max(amax, std::fabs((float)xd[m * k + i]));
          float d = amax / 127.0f, inv = amax > 0 ? 1.0f / d : 0.0f;
          for (int64_t i = from; i < to; ++i)
            xd[m * k + i] = (double)std::nearbyint((float)xd[m * k + i] * inv) * d;
        }
    for (int64_t m = 0; m < rows; ++m)
      for (int64_t r = 0; r < n; ++r) {
        double sum = 0;
        for (int64_t c = 0; c < k; ++c)
          sum += xd[m * k + c] * wd[r * k + c];
        y.push_back((float)sum);
      }
  }
  Buffer out{Float32Type::get(weight.getContext()), 0, {}};
  out.count = (int64_t)y.size();
  out.bytes.resize(y.size() * 4);
  std::memcpy(out.bytes.data(), y.data(), out.bytes.size());
  return out;
}

/// The op a kernel named k<i>_<stem> was built for.
llvm::StringRef stemOf(llvm::StringRef kernel) { return kernel.split('_').second; }

std::vector<void *> pointers(std::vector<Buffer> &buffers) {
  std::vector<void *> p;
  for (Buffer &b : buffers)
    p.push_back(b.bytes.data());
  return p;
}

::fbt::KernelFn symbol(void *lib, const std::string &name) {
  return reinterpret_cast<::fbt::KernelFn>(dlsym(lib, name.c_str()));
}

/// The largest |got - want| over a buffer, and the largest |want|.
struct Deviation {
  double err = 0, ref = 0;
  bool within(double rtol) const { return err <= absTol + rtol * ref; }
};

Deviation deviation(const Buffer &want, const Buffer &got) {
  Deviation d;
  for (int64_t i = 0; i < want.count; ++i) {
    double c = value(want, i), g = value(got, i);
    d.ref = std::max(d.ref, std::fabs(c));
    d.err = std::max(d.err, std::isnan(g) != std::isnan(c) ? INFINITY : std::fabs(g - c));
  }
  return d;
}

/// The comparisons made so far, each printed as it is made.
struct Tally {
  int kernels = 0, failures = 0;

  /// The last `outputs` buffers of `got` against `want`'s, as one kernel
  /// run in `numLaunches` launches.
  void compare(const std::string &name, size_t numLaunches, const std::vector<Buffer> &want,
               const std::vector<Buffer> &got, unsigned outputs, double rtol) {
    bool ok = true;
    std::string report;
    llvm::raw_string_ostream os(report);
    for (unsigned o = want.size() - outputs; o < want.size(); ++o) {
      Deviation d = deviation(want[o], got[o]);
      ok &= d.within(rtol);
      os << llvm::format(" out%u err %.2e of %.2e", o, d.err, d.ref);
    }
    count(ok);
    outs() << name << ": " << numLaunches << " launch" << (numLaunches == 1 ? "" : "es")
           << report << (ok ? " ok" : " DIFFERS") << "\n";
  }
  /// One output against the reference (--reference-only).
  void compareOne(const std::string &name, const Buffer &want, const Buffer &got) {
    Deviation d = deviation(want, got);
    count(d.within(relTol));
    outs() << name << ":" << llvm::format(" err %.2e of %.2e", d.err, d.ref)
           << (d.within(relTol) ? " ok" : " DIFFERS") << "\n";
  }
  void count(bool ok) {
    ++kernels;
    failures += !ok;
  }
  /// The summary line; the exit status.
  int finish() const {
    outs() << kernels << " kernels, " << failures << " differ\n";
    return failures ? 1 : 0;
  }
};

/// Random inputs for `fn`'s arguments (seeded by `seed`).
std::vector<Buffer> randomArguments(func::FuncOp fn, const std::string &seed) {
  std::mt19937_64 rng(std::hash<std::string>()(seed));
  std::vector<Buffer> bufs;
  for (Type t : fn.getArgumentTypes()) {
    auto m = cast<MemRefType>(t);
    bufs.push_back({m.getElementType(), m.getNumElements(), {}});
    fill(bufs.back(), rng, false);
  }
  return bufs;
}

/// `bufs` as the kernel (a call `call` of op `stem`) reads them: where the
/// CPU target interleaves int8 weights (int8 activations:
/// runtime/format/WeightNames.h), each weight and its scales in that layout,
/// as the runtime binds them; reference() reads the rows.
std::vector<Buffer> asBound(mlir::fbt::CallKernelOp call, llvm::StringRef stem,
                            const std::vector<Buffer> &bufs) {
  std::vector<Buffer> out = bufs;
  if (!stem.ends_with("_a8") || !mlir::fbt::interleavesInt8(true))
    return out;
  size_t count = stem.starts_with("quantized_matmuls") ? call->getNumResults() : 1;
  for (size_t i = 0; i < count; ++i) {
    auto t = cast<RankedTensorType>(call->getOperand(1 + i).getType());
    Buffer &w = out[1 + i], &s = out[1 + count + i];
    ::fbt::QuantizedMatrix q;
    q.form = ::fbt::WeightForm::Int8;
    q.rows = t.getDimSize(0);
    q.cols = t.getDimSize(1);
    q.values.resize(w.count);
    q.halves.resize(s.count);
    std::memcpy(q.values.data(), w.bytes.data(), w.count);
    std::memcpy(q.halves.data(), s.bytes.data(), 2 * s.count);
    ::fbt::QuantizedMatrix p = ::fbt::interleaveRows(q);
    std::memcpy(w.bytes.data(), p.values.data(), w.count);
    std::memcpy(s.bytes.data(), p.halves.data(), 2 * s.count);
  }
  return out;
}

/// Whether a kernel of op `stem` is an inference-weight kernel reference()
/// knows.
bool hasReference(llvm::StringRef stem) {
  return stem.starts_with("quantized_matmul") || stem == "dequantize";
}

/// The weight operand's type at `call`, a call of a kernel of op `stem`.
RankedTensorType weightAt(mlir::fbt::CallKernelOp call, llvm::StringRef stem) {
  return cast<RankedTensorType>(call->getOperand(stem == "dequantize" ? 0 : 1).getType());
}

/// Each kernel the steps of `m` call, by its step, in call order.
using CallsByStep = std::map<std::string, std::vector<mlir::fbt::CallKernelOp>>;
CallsByStep callsOf(ModuleOp m, bool skipCasts) {
  CallsByStep byStep;
  for (auto fn : m.getOps<func::FuncOp>())
    if (fn->hasAttr("fbt.step"))
      fn.walk([&](mlir::fbt::CallKernelOp c) {
        if (!skipCasts || !c.getKernel().ends_with("_to_bf16"))
          byStep[fn.getSymName().str()].push_back(c);
      });
  return byStep;
}

/// --reference-only: every inference-weight kernel the steps of `cpu` call,
/// on random inputs, against reference(). Exit status 1 if any differs.
int checkAgainstReference(ModuleOp cpu) {
  FailureOr<std::string> lib = mlir::fbt::compileKernelsForCpu(cpu, cpuOptions());
  if (failed(lib))
    return 2;
  void *so = loadLibrary(*lib);
  if (!so)
    return 2;
  std::map<std::string, mlir::fbt::CallKernelOp> calls;
  for (auto &[step, list] : callsOf(cpu, false))
    for (mlir::fbt::CallKernelOp c : list)
      calls.emplace(c.getKernel().str(), c);
  Tally tally;
  for (auto &[name, call] : calls) {
    llvm::StringRef stem = stemOf(name);
    if (!hasReference(stem))
      continue;
    std::vector<Buffer> bufs = randomArguments(cpu.lookupSymbol<func::FuncOp>(name), name);
    // Inputs of both signs, so that groups' largest magnitudes and the
    // rounding of negative values are exercised.
    if (stem.starts_with("quantized_matmul"))
      for (int64_t i = 0; i < bufs[0].count; ++i) {
        float v;
        std::memcpy(&v, &bufs[0].bytes[4 * i], 4);
        v = i % 3 == 0 ? -v : v;
        std::memcpy(&bufs[0].bytes[4 * i], &v, 4);
      }
    std::vector<Buffer> bound = asBound(call, stem, bufs);
    std::vector<void *> args = pointers(bound);
    ::fbt::callKernel(symbol(so, name), args.data(), args.size());
    if (!stem.starts_with("quantized_matmuls")) {
      tally.compareOne(name + " (reference)", reference(stem, weightAt(call, stem), bufs),
                       bound.back());
      continue;
    }
    // Fused: each result is the product by its own weight (and scales).
    size_t count = call->getNumResults(), perWeight = (bufs.size() - 1) / count - 1;
    std::string single = stem.ends_with("_a8") ? "quantized_matmul_a8" : "quantized_matmul";
    for (size_t i = 0; i < count; ++i) {
      std::vector<Buffer> one{bufs[0], bufs[1 + i]};
      if (perWeight == 2)
        one.push_back(bufs[1 + count + i]);
      tally.compareOne(name + " #" + std::to_string(i) + " (reference)",
                       reference(single, cast<RankedTensorType>(call->getOperand(1 + i).getType()),
                                 one),
                       bound[bound.size() - count + i]);
    }
  }
  return tally.finish();
}

/// The GPU kernels paired with their CPU twins through the steps' call
/// sites (the steps call them in the same order), in the order to check
/// them; variants (fbtc --tune-space, no call sites) with their kernel's
/// twin.
struct Pairing {
  CallsByStep cpuCalls;
  std::map<std::string, std::string> twin;                  ///< GPU kernel -> CPU kernel
  std::map<std::string, mlir::fbt::CallKernelOp> cpuCallOf; ///< a call of each CPU kernel
  llvm::StringMap<unsigned> numResults;                     ///< GPU kernel -> outputs
  std::vector<std::string> order;                           ///< GPU kernels
};

/// The variants of `m`'s kernels: (variant, kernel).
std::vector<std::pair<std::string, std::string>> variantsOf(ModuleOp m) {
  std::vector<std::pair<std::string, std::string>> list;
  for (auto fn : m.getOps<func::FuncOp>())
    if (auto of = fn->getAttrOfType<FlatSymbolRefAttr>("fbt.variant_of"))
      list.push_back({fn.getSymName().str(), of.getValue().str()});
  return list;
}

/// Pairs `cpu`'s and `gpu`'s kernels; fails (saying where) when a step
/// calls a different number of kernels on each.
FailureOr<Pairing> pairKernels(ModuleOp cpu, ModuleOp gpu) {
  Pairing p;
  p.cpuCalls = callsOf(cpu, false);
  // The CPU's products by f32 weights are the GPU's library GEMMs, and its
  // fused products (fbt-fuse-products) several GPU kernels: no twin
  // (--reference-only checks them).
  for (auto &[step, list] : p.cpuCalls)
    llvm::erase_if(list, [](mlir::fbt::CallKernelOp c) {
      llvm::StringRef stem = stemOf(c.getKernel());
      return stem.starts_with("quantized_matmuls") ||
             (stem.starts_with("quantized_matmul") &&
              cast<RankedTensorType>(c->getOperand(1).getType()).getElementType().isF32());
    });
  CallsByStep gpuCalls = callsOf(gpu, true);
  for (auto &[step, list] : p.cpuCalls)
    for (mlir::fbt::CallKernelOp c : list)
      p.cpuCallOf.emplace(c.getKernel().str(), c);
  for (auto &[step, list] : p.cpuCalls) {
    auto &other = gpuCalls[step];
    if (other.size() != list.size()) {
      outs() << step << ": " << list.size() << " kernel calls on the CPU, " << other.size()
             << " on the GPU\n";
      return failure();
    }
    for (size_t i = 0; i < list.size(); ++i) {
      std::string g = other[i].getKernel().str();
      if (p.twin.emplace(g, list[i].getKernel().str()).second) {
        p.order.push_back(g);
        p.numResults[g] = other[i]->getNumResults();
      }
    }
  }
  for (auto &[variant, kernel] : variantsOf(gpu))
    if (p.twin.count(kernel) && p.twin.emplace(variant, p.twin[kernel]).second) {
      p.order.push_back(variant);
      p.numResults[variant] = p.numResults.lookup(kernel);
    }
  return p;
}

/// The checks of a CPU module against a GPU one, both compiled and loaded.
struct Checker {
  ModuleOp cpu, gpu;
  void *cpuSo, *gpuSo;
  const mlir::fbt::SimtBinary &gpuBin;
  Pairing pairs;
  Tally tally;
  std::set<std::string> referenced; ///< CPU kernels checked against reference()

  void runGpu(const std::string &name, std::vector<Buffer> &bufs) {
    std::vector<void *> args = pointers(bufs);
    for (const ::fbt::KernelLaunch &l : gpuBin.launches.at(name))
      ::fbt::simt::launch(symbol(gpuSo, l.entry), args.data(), args.size(), l.grid[0],
                          l.block[0], l.cooperative);
  }

  /// The f32 -> bf16 copies: exactly round to nearest even.
  void checkCasts() {
    for (auto fn : gpu.getOps<func::FuncOp>()) {
      if (!fn.getSymName().ends_with("_to_bf16"))
        continue;
      std::string name = fn.getSymName().str();
      std::mt19937_64 rng(std::hash<std::string>()(name));
      std::vector<Buffer> in, want;
      for (Type t : fn.getArgumentTypes()) {
        auto m = cast<MemRefType>(t);
        in.push_back({m.getElementType(), m.getNumElements(), {}});
      }
      fill(in[0], rng, false);
      in[1].bytes.assign(in[1].count * 2, 0);
      want = in;
      convert(in[0], want[1]);
      runGpu(name, in);
      tally.compare(name, gpuBin.launches.at(name).size(), want, in, 1, 0.0);
    }
  }

  /// GPU kernel `name` against its CPU twin on the same random inputs
  /// (rounded to bf16 where the GPU stores bf16); an inference-weight
  /// twin against reference() too, once.
  void checkPair(const std::string &name) {
    const std::string &cpuName = pairs.twin[name];
    func::FuncOp g = gpu.lookupSymbol<func::FuncOp>(name);
    func::FuncOp c = cpu.lookupSymbol<func::FuncOp>(cpuName);
    if (!g || !c || !gpuBin.launches.count(name)) {
      outs() << name << ": no kernel of that name\n";
      ++tally.failures; // a failure, though nothing was compared
      return;
    }
    std::mt19937_64 rng(std::hash<std::string>()(name));
    std::vector<Buffer> onCpu, onGpu;
    bool narrow = false;
    for (auto [ct, gt] : llvm::zip(c.getArgumentTypes(), g.getArgumentTypes())) {
      auto cm = cast<MemRefType>(ct), gm = cast<MemRefType>(gt);
      onCpu.push_back({cm.getElementType(), cm.getNumElements(), {}});
      onGpu.push_back({gm.getElementType(), gm.getNumElements(), {}});
      narrow |= gm.getElementType() != cm.getElementType();
      // Outputs start equal (and arbitrary) in both runs.
      fill(onCpu.back(), rng, gm.getElementType().isBF16());
      convert(onCpu.back(), onGpu.back());
    }
    std::vector<void *> cpuArgs = pointers(onCpu);
    ::fbt::callKernel(symbol(cpuSo, cpuName), cpuArgs.data(), cpuArgs.size());
    llvm::StringRef stem = stemOf(cpuName);
    if (hasReference(stem) && referenced.insert(cpuName).second) {
      std::vector<Buffer> want = onCpu;
      want.back() = reference(stem, weightAt(pairs.cpuCallOf.at(cpuName), stem), onCpu);
      tally.compare(cpuName + " (reference)", 0, want, onCpu, 1, relTol);
    }
    runGpu(name, onGpu);
    // bf16 storage rounds each stored value by up to 2^-9 relative; sums
    // over rows of rounded inputs add a little more.
    tally.compare(name + (cpuName != name ? " (cpu " + cpuName + ")" : ""),
                  gpuBin.launches.at(name).size(), onCpu, onGpu, pairs.numResults.lookup(name),
                  narrow ? bf16Tol : relTol);
  }

  /// The CPU's own variants, against its default build of the kernel.
  void checkCpuVariants() {
    for (auto &[variant, kernel] : variantsOf(cpu)) {
      unsigned outputs = 0;
      for (auto &[step, list] : pairs.cpuCalls)
        for (mlir::fbt::CallKernelOp call : list)
          if (call.getKernel() == kernel)
            outputs = call->getNumResults();
      std::vector<Buffer> want = randomArguments(cpu.lookupSymbol<func::FuncOp>(kernel), kernel);
      std::vector<Buffer> got = want;
      std::vector<void *> wantArgs = pointers(want), gotArgs = pointers(got);
      ::fbt::callKernel(symbol(cpuSo, kernel), wantArgs.data(), wantArgs.size());
      ::fbt::callKernel(symbol(cpuSo, variant), gotArgs.data(), gotArgs.size());
      tally.compare(variant + " (cpu " + kernel + ")", 0, want, got, outputs, relTol);
    }
  }
};

/// The GPU's kernels against the CPU's: pairs them, compiles both, runs
/// every check. Exit status 1 if any kernel differs, 2 if they do not build.
int checkAgainstCpu(ModuleOp cpu, ModuleOp gpu) {
  FailureOr<std::string> cpuLib = mlir::fbt::compileKernelsForCpu(cpu, cpuOptions());
  FailureOr<mlir::fbt::SimtBinary> gpuBin = mlir::fbt::compileKernelsForSimt(gpu);
  if (failed(cpuLib) || failed(gpuBin))
    return 2;
  void *cpuSo = loadLibrary(*cpuLib), *gpuSo = loadLibrary(gpuBin->library);
  if (!cpuSo || !gpuSo)
    return 2;
  FailureOr<Pairing> pairs = pairKernels(cpu, gpu);
  if (failed(pairs))
    return 1;
  Checker check{cpu, gpu, cpuSo, gpuSo, *gpuBin, std::move(*pairs), {}, {}};
  check.checkCasts();
  for (const std::string &name : check.pairs.order)
    check.checkPair(name);
  check.checkCpuVariants();
  return check.tally.finish();
}

} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::ParseCommandLineOptions(argc, argv, "the GPU's kernels against the CPU's\n");
  DialectRegistry registry;
  registry.insert<mlir::fbt::FbtDialect, func::FuncDialect, arith::ArithDialect,
                  scf::SCFDialect, memref::MemRefDialect, math::MathDialect,
                  gpu::GPUDialect, vector::VectorDialect, LLVM::LLVMDialect>();
  MLIRContext ctx(registry);
  OwningOpRef<ModuleOp> cpu = parseSourceFile<ModuleOp>(cpuPath, &ctx);
  if (!cpu)
    return 2;
  if (referenceOnly)
    return checkAgainstReference(*cpu);
  if (gpuPath.empty()) {
    llvm::errs() << "fbt-simt-check: the GPU kernels are required (or --reference-only)\n";
    return 2;
  }
  OwningOpRef<ModuleOp> gpu = parseSourceFile<ModuleOp>(gpuPath, &ctx);
  return gpu ? checkAgainstCpu(*cpu, *gpu) : 2;
}
