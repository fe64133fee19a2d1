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
  pm.addPass(createFbtAutodiff());
  pm.addPass(createCSEPass());
  pm.addPass(createCanonicalizerPass());
}

void fbt::registerFbtPassesAndPipelines() {
  registerFbtPasses();
  PassPipelineRegistration<TrainPipelineOptions>(
      "fbt-train-pipeline",
      "The training-graph pipeline: expand the K-pass objective, "
      "differentiate it, clean up",
      buildTrainPipeline);
}
