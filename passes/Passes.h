//===- Passes.h - fbt passes ------------------------------------*- C++ -*-===//
#ifndef FBT_PASSES_PASSES_H
#define FBT_PASSES_PASSES_H

#include "dialect/FbtDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::fbt {

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
};

/// expand-multipass, autodiff, then cleanups.
void buildTrainPipeline(OpPassManager &pm, const TrainPipelineOptions &opts);

/// Registers every fbt pass and the named pipelines.
void registerFbtPassesAndPipelines();

} // namespace mlir::fbt

#endif // FBT_PASSES_PASSES_H
