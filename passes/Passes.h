//===- Passes.h - fbt passes ------------------------------------*- C++ -*-===//
#ifndef FBT_PASSES_PASSES_H
#define FBT_PASSES_PASSES_H

#include "codegen/kernels/KernelConfig.h"
#include "dialect/FbtDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::fbt {

/// How fbt-to-kernels stores a training step's activations.
enum class Storage { F32, BF16 };

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// Options of the named training pipeline (fbt-opt --fbt-train-pipeline).
struct TrainPipelineOptions
    : public PassPipelineOptions<TrainPipelineOptions> {
  Option<int64_t> passes{*this, "passes",
                         llvm::cl::desc("Expand every objective with this K "
                                        "(0: the K each step states)"),
                         llvm::cl::init(0)};
  Option<bool> fuseFeedbackGate{
      *this, "fuse-feedback-gate",
      llvm::cl::desc("Fold the GLU gate into the first layer's norm"),
      llvm::cl::init(true)};
  Option<bool> optimizer{*this, "optimizer",
                         llvm::cl::desc("Append clipping and AdamW"),
                         llvm::cl::init(true)};
  Option<double> beta1{*this, "beta1", llvm::cl::init(0.9)};
  Option<double> beta2{*this, "beta2", llvm::cl::init(0.95)};
  Option<double> epsilon{*this, "epsilon", llvm::cl::init(1e-8)};
  Option<double> weightDecay{*this, "weight-decay", llvm::cl::init(0.1)};
  Option<double> maxGradNorm{*this, "max-grad-norm", llvm::cl::init(1.0)};
  Option<bool> keepGradientStep{*this, "keep-gradient-step",
                                llvm::cl::init(false)};
  Option<int64_t> zero{*this, "zero",
                       llvm::cl::desc("ZeRO stage of the data-parallel step (0 or 1)"),
                       llvm::cl::init(0)};
};

/// expand-multipass, fuse-feedback-gate, autodiff, decompose, optimizer,
/// then cleanups.
void buildTrainPipeline(OpPassManager &pm, const TrainPipelineOptions &opts);

/// Options of the kernel pipeline (fbt-opt --fbt-kernel-pipeline): every
/// setting fbtc's kernel stage has (driver/Driver.h fills them from a
/// spec and fbtc's options), so the named pipeline is the one fbtc runs.
struct KernelPipelineOptions
    : public PassPipelineOptions<KernelPipelineOptions> {
  Option<KernelTarget> target{
      *this, "target", llvm::cl::desc("What the kernels' grids map to"),
      llvm::cl::init(KernelTarget::Cpu),
      llvm::cl::values(clEnumValN(KernelTarget::Cpu, "cpu", "CPU loops"),
                       clEnumValN(KernelTarget::Gpu, "gpu", "GPU threads and blocks"))};
  Option<Storage> storage{
      *this, "storage", llvm::cl::desc("Training activations (gpu: bf16 or f32)"),
      llvm::cl::init(Storage::F32),
      llvm::cl::values(clEnumValN(Storage::F32, "f32", "f32"),
                       clEnumValN(Storage::BF16, "bf16", "bf16 (target=gpu)"))};
  Option<TuneSpace> tuneSpace{
      *this, "tune-space", llvm::cl::desc("Also build each kernel's other configurations"),
      llvm::cl::init(TuneSpace::None),
      llvm::cl::values(clEnumValN(TuneSpace::None, "none", "the default only"),
                       clEnumValN(TuneSpace::Default, "default", "a few values per knob"),
                       clEnumValN(TuneSpace::Wide, "wide", "more values per knob"))};
  ListOption<std::string> configs{
      *this, "configs",
      llvm::cl::desc("Kernels in a given configuration, `<kernel>:<knob>=<value>:...`")};
  Option<std::string> weights{*this, "inference-weights",
                              llvm::cl::desc("'f32', 'bf16' or 'int8'"),
                              llvm::cl::init("f32")};
  Option<std::string> activations{*this, "inference-activations",
                                  llvm::cl::desc("'f32' or 'int8' (cpu, int8 weights)"),
                                  llvm::cl::init("f32")};
  Option<bool> fuseProducts{
      *this, "fuse-products",
      llvm::cl::desc("cpu: few-row products of one input as one kernel call"),
      llvm::cl::init(true)};
  Option<CpuVectors> cpuVectors{
      *this, "cpu-vectors", llvm::cl::desc("The vectors the CPU's products are written in"),
      llvm::cl::init(CpuVectors::Avx2),
      llvm::cl::values(clEnumValN(CpuVectors::Avx2, "avx2", "AVX2"),
                       clEnumValN(CpuVectors::Avx512, "avx512", "AVX-512BW"),
                       clEnumValN(CpuVectors::Avx512Vnni, "avx512-vnni", "AVX-512 VNNI"))};
};

/// From the training graph to library GEMMs and kernel calls:
/// gemms-to-library, inference-weights, fuse-products (cpu),
/// split-reductions, to-kernels.
void buildKernelPipeline(OpPassManager &pm, const KernelPipelineOptions &opts);

/// Registers every fbt pass and the named pipelines.
void registerFbtPassesAndPipelines();

} // namespace mlir::fbt

#endif // FBT_PASSES_PASSES_H
