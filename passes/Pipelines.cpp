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

void fbt::buildKernelPipeline(OpPassManager &pm, KernelTarget target,
                              Storage storage, TuneSpace space,
                              ArrayRef<std::string> configs, StringRef weights,
                              StringRef activations, bool fuseProducts,
                              CpuVectors cpuVectors) {
  pm.addPass(createFbtGemmsToLibrary());
  FbtInferenceWeightsOptions narrow;
  narrow.weights = weights.str();
  narrow.activations = activations.str();
  narrow.f32Products = target == KernelTarget::Cpu;
  pm.addPass(createFbtInferenceWeights(narrow));
  if (target == KernelTarget::Cpu && fuseProducts)
    pm.addPass(createFbtFuseProducts());
  pm.addPass(createFbtSplitReductions());
  FbtToKernelsOptions lower;
  lower.target = target;
  lower.storage = storage;
  lower.tuneSpace = space;
  lower.configs = llvm::to_vector(configs);
  lower.cpuVectors = cpuVectors;
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
      "gemms-to-library, inference-weights, split-reductions, to-kernels",
      [](OpPassManager &pm, const KernelPipelineOptions &opts) {
        buildKernelPipeline(
            pm, opts.target == "gpu" ? KernelTarget::Gpu : KernelTarget::Cpu,
            opts.storage == "bf16" ? Storage::BF16 : Storage::F32, TuneSpace::None, {},
            opts.weights, opts.activations);
      });
}
