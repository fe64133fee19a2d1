//===- SimtCheck.cpp - the GPU's kernels against the CPU's, on the CPU ----===//
//
//   fbt-simt-check CPU.mlir GPU.mlir [--rtol R] [--atol A]
//
// CPU.mlir and GPU.mlir are one spec's `fbtc --emit=kernels` without and with
// an NVIDIA --target. Every kernel is compiled both ways (the CPU's as the
// CPU target builds it; the GPU's split into its launches, as the NVIDIA
// target does, then compiled for this CPU and run by the SIMT emulator), run
// on the same random inputs, and its outputs compared:
//   |gpu - cpu| <= atol + rtol * max |cpu|   for each output.
// The CPU kernels are the ones the end-to-end tests check against PyTorch,
// so this checks the GPU mapping itself: grids, block reductions, atomics,
// the attention launches. Exit status 1 if any kernel differs.
//
//===----------------------------------------------------------------------===//

#include "Emulator.h"

#include "codegen/CpuTarget.h"
#include "codegen/SimtTarget.h"
#include "dialect/FbtDialect.h"
#include "dialect/FbtOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Parser/Parser.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstring>
#include <dlfcn.h>
#include <random>

using namespace mlir;
using llvm::outs;

namespace {
llvm::cl::opt<std::string> cpuPath(llvm::cl::Positional, llvm::cl::Required,
                                   llvm::cl::desc("<cpu kernels .mlir>"));
llvm::cl::opt<std::string> gpuPath(llvm::cl::Positional, llvm::cl::Required,
                                   llvm::cl::desc("<gpu kernels .mlir>"));
llvm::cl::opt<double> relTol("rtol", llvm::cl::init(1e-4),
                           llvm::cl::desc("tolerance relative to max |cpu|"));
llvm::cl::opt<double> absTol("atol", llvm::cl::init(1e-6),
                           llvm::cl::desc("absolute tolerance"));

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
  llvm::sys::fs::remove(path);
  return lib;
}

/// One kernel argument: a flat buffer of `count` elements of 4 or 8 bytes.
struct Buffer {
  Type type;
  int64_t count = 0;
  std::vector<char> bytes;
};

/// Random inputs that every kernel accepts: floats in [0.25, 1.25) (logs,
/// square roots and divisions stay finite), 32-bit ids in [0, 4) (tokens,
/// targets and positions below every size), any 64-bit seed.
void fill(Buffer &b, std::mt19937_64 &rng) {
  b.bytes.assign(b.count * (b.type.isInteger(64) ? 8 : 4), 0);
  for (int64_t i = 0; i < b.count; ++i) {
    if (b.type.isF32()) {
      float v = 0.25f + std::uniform_real_distribution<float>(0, 1)(rng);
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

double value(const Buffer &b, int64_t i) {
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

std::vector<void *> pointers(std::vector<Buffer> &buffers) {
  std::vector<void *> p;
  for (Buffer &b : buffers)
    p.push_back(b.bytes.data());
  return p;
}
} // namespace

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::ParseCommandLineOptions(argc, argv,
                                    "the GPU's kernels against the CPU's\n");
  DialectRegistry registry;
  registry.insert<mlir::fbt::FbtDialect, func::FuncDialect, arith::ArithDialect,
                  scf::SCFDialect, memref::MemRefDialect, math::MathDialect,
                  gpu::GPUDialect>();
  MLIRContext ctx(registry);
  OwningOpRef<ModuleOp> cpu = parseSourceFile<ModuleOp>(cpuPath, &ctx);
  OwningOpRef<ModuleOp> gpu = parseSourceFile<ModuleOp>(gpuPath, &ctx);
  if (!cpu || !gpu)
    return 2;

  FailureOr<std::string> cpuLib = mlir::fbt::compileKernelsForCpu(*cpu, {});
  FailureOr<mlir::fbt::SimtBinary> gpuBin = mlir::fbt::compileKernelsForSimt(*gpu);
  if (failed(cpuLib) || failed(gpuBin))
    return 2;
  void *cpuSo = loadLibrary(*cpuLib), *gpuSo = loadLibrary(gpuBin->library);
  if (!cpuSo || !gpuSo)
    return 2;

  // Results per kernel: the call sites say how many trailing buffers are
  // outputs.
  llvm::StringMap<unsigned> numResults;
  cpu->walk([&](mlir::fbt::CallKernelOp call) {
    numResults[call.getKernel()] = call->getNumResults();
  });

  int kernels = 0, failures = 0;
  for (auto fn : cpu->getOps<func::FuncOp>()) {
    if (!fn->hasAttr("fbt.kernel"))
      continue;
    std::string name = fn.getSymName().str();
    auto launches = gpuBin->launches.find(name);
    if (launches == gpuBin->launches.end()) {
      outs() << name << ": no GPU kernel of that name\n";
      ++failures;
      continue;
    }
    std::mt19937_64 rng(std::hash<std::string>()(name));
    std::vector<Buffer> in;
    for (Type t : fn.getArgumentTypes()) {
      auto m = cast<MemRefType>(t);
      in.push_back({m.getElementType(), m.getNumElements(), {}});
      fill(in.back(), rng);
    }
    // Outputs start equal (and arbitrary) in both runs.
    std::vector<Buffer> onCpu = in, onGpu = in;
    ::fbt::simt::call(dlsym(cpuSo, name.c_str()), pointers(onCpu));
    std::vector<void *> args = pointers(onGpu);
    for (const mlir::fbt::GpuLaunch &l : launches->second)
      ::fbt::simt::launch(dlsym(gpuSo, l.entry.c_str()), args, l.grid, l.block,
                        l.cooperative);

    unsigned outputs = numResults.lookup(name);
    bool ok = true;
    std::string report;
    llvm::raw_string_ostream os(report);
    for (unsigned o = in.size() - outputs; o < in.size(); ++o) {
      double err = 0, ref = 0;
      for (int64_t i = 0; i < in[o].count; ++i) {
        double c = value(onCpu[o], i), g = value(onGpu[o], i);
        ref = std::max(ref, std::fabs(c));
        err = std::max(err, std::isnan(g) != std::isnan(c) ? INFINITY
                                                           : std::fabs(g - c));
      }
      bool good = err <= absTol + relTol * ref;
      ok &= good;
      os << llvm::format(" out%u err %.2e of %.2e", o, err, ref);
    }
    ++kernels;
    failures += !ok;
    outs() << name << ": " << launches->second.size() << " launch"
           << (launches->second.size() == 1 ? "" : "es") << report
           << (ok ? " ok" : " DIFFERS") << "\n";
  }
  outs() << kernels << " kernels, " << failures << " differ\n";
  return failures ? 1 : 0;
}
