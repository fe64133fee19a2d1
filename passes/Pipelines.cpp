//===- Pipelines.cpp - named fbt pipelines --------------------------------===//

#include "passes/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void fbt::buildTrainPipeline(OpPassManager &pm,
                             const TrainPipelineOptions &opts) {
  FbtExpandMultipassOptions expand;
  expand.passes = opts.passes;
  pm.addPass(createFbtExpandMultipass(expand));
  // Before autodiff: the fused op's gradient rule fuses the backward too.
  if (opts.fuseFeedbackGate)
    pm.addPass(createFbtFuseFeedbackGate());
  pm.addPass(createFbtAutodiff());
  pm.addPass(createFbtDecompose());
  if (opts.optimizer) {
    FbtOptimizerOptions adam;
    adam.beta1 = opts.beta1;
    adam.beta2 = opts.beta2;
    adam.epsilon = opts.epsilon;
    adam.weightDecay = opts.weightDecay;
    adam.maxGradNorm = opts.maxGradNorm;
    adam.keepGradientStep = opts.keepGradientStep;
    pm.addPass(createFbtOptimizer(adam));
    FbtDataParallelOptions dp;
    dp.zero = opts.zero;
    pm.addPass(createFbtDataParallel(dp));
  }
  // CSE merges the recomputed and pass-independent GEMMs (W_G e is shared by
  // every fused pass); canonicalize drops gradients nobody returns.
  pm.addPass(createCSEPass());
  pm.addPass(createCanonicalizerPass());
}

void fbt::buildKernelPipeline(OpPassManager &pm, const KernelPipelineOptions &opts) {
  pm.addPass(createFbtGemmsToLibrary());
  FbtInferenceWeightsOptions narrow;
  narrow.weights = opts.weights;
  narrow.activations = opts.activations;
  narrow.f32Products = opts.target == KernelTarget::Cpu;
  pm.addPass(createFbtInferenceWeights(narrow));
  if (opts.target == KernelTarget::Cpu && opts.fuseProducts)
    pm.addPass(createFbtFuseProducts());
  pm.addPass(createFbtSplitReductions());
  FbtToKernelsOptions lower;
  lower.target = opts.target;
  lower.storage = opts.storage;
  lower.tuneSpace = opts.tuneSpace;
  lower.configs = llvm::to_vector(opts.configs);
  lower.cpuVectors = opts.cpuVectors;
  pm.addPass(createFbtToKernels(lower));
}

void fbt::registerFbtPassesAndPipelines() {
  registerFbtPasses();
  PassPipelineRegistration<TrainPipelineOptions>(
      "fbt-train-pipeline",
      "The training-graph pipeline: expand the K-pass objective, fuse the "
      "feedback gate, differentiate, decompose, add AdamW, clean up",
      buildTrainPipeline);
  PassPipelineRegistration<KernelPipelineOptions>(
      "fbt-kernel-pipeline",
      "From the training graph to library GEMMs and generated kernels: "
      "gemms-to-library, inference-weights, fuse-products, split-reductions, to-kernels",
      buildKernelPipeline);
}
