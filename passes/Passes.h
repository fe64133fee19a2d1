//===- Passes.h - fbt passes ------------------------------------*- C++ -*-===//
#ifndef FBT_PASSES_PASSES_H
#define FBT_PASSES_PASSES_H

#include "codegen/kernels/KernelBuilder.h"
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

/// Options of the kernel pipeline (fbt-opt --fbt-kernel-pipeline).
struct KernelPipelineOptions
    : public PassPipelineOptions<KernelPipelineOptions> {
  Option<std::string> target{*this, "target",
                             llvm::cl::desc("'cpu' or 'gpu'"),
                             llvm::cl::init("cpu")};
  Option<std::string> storage{*this, "storage",
                              llvm::cl::desc("'f32' or 'bf16' (gpu)"),
                              llvm::cl::init("f32")};
  Option<std::string> weights{*this, "inference-weights",
                              llvm::cl::desc("'f32', 'bf16' or 'int8'"),
                              llvm::cl::init("f32")};
  Option<std::string> activations{*this, "inference-activations",
                                  llvm::cl::desc("'f32' or 'int8' (cpu, int8 weights)"),
                                  llvm::cl::init("f32")};
};

/// From the training graph to library GEMMs and kernel calls:
/// gemms-to-library, inference-weights, split-reductions, to-kernels.
/// `weights` and `activations` are fbt-inference-weights' forms ("f32",
/// "bf16", "int8"; "f32", "int8"), `space` and `configs` are
/// fbt-to-kernels' tune-space and configs.
void buildKernelPipeline(OpPassManager &pm, KernelTarget target,
                         Storage storage, TuneSpace space = TuneSpace::None,
                         ArrayRef<std::string> configs = {},
                         StringRef weights = "f32", StringRef activations = "f32",
                         bool fuseProducts = true, CpuVectors cpuVectors = CpuVectors::Avx2);

/// Registers every fbt pass and the named pipelines.
void registerFbtPassesAndPipelines();

} // namespace mlir::fbt

#endif // FBT_PASSES_PASSES_H
