//===- Pipeline.cpp - a spec's passes: the training graph, then kernels ----===//

#include "driver/Driver.h"

#include "codegen/cpu/CpuTarget.h"

namespace fbt::driver {

void trainPipelineOptions(const ModelSpec &spec, const CompileOptions &o,
                          mlir::fbt::TrainPipelineOptions &out) {
  out.beta1 = spec.training.beta1;
  out.beta2 = spec.training.beta2;
  out.epsilon = spec.training.adamEpsilon;
  out.weightDecay = spec.training.weightDecay;
  // grad_clip 0 turns clipping off: a bound no norm reaches.
  out.maxGradNorm = spec.training.gradClip > 0 ? spec.training.gradClip : 1e30;
  out.keepGradientStep = true;
  out.fuseFeedbackGate = o.fuseFeedbackGate;
  out.zero = spec.training.zero;
}

void kernelPipelineOptions(const ModelSpec &spec, const CompileOptions &o,
                           const std::vector<std::string> &tunedConfigs,
                           mlir::fbt::KernelPipelineOptions &out) {
  bool gpu = mapsToGpu(o.target);
  out.target = gpu ? mlir::fbt::KernelTarget::Gpu : mlir::fbt::KernelTarget::Cpu;
  out.storage = gpu && o.gpuStorage == "bf16" ? mlir::fbt::Storage::BF16
                                              : mlir::fbt::Storage::F32;
  out.tuneSpace = o.tuneSpace;
  out.configs = tunedConfigs;
  out.weights = kindName(spec.inference.weights);
  out.activations = kindName(spec.inference.activations);
  out.fuseProducts = o.fuseProducts;
  out.cpuVectors = o.target == Target::Cpu ? mlir::fbt::cpuVectorsOf(bundleBuild(o).cpu)
                                           : mlir::fbt::CpuVectors::Avx2;
}

void populateTrainPipeline(mlir::OpPassManager &pm, const ModelSpec &spec,
                           const CompileOptions &o) {
  mlir::fbt::TrainPipelineOptions options;
  trainPipelineOptions(spec, o, options);
  mlir::fbt::buildTrainPipeline(pm, options);
}

void populateKernelPipeline(mlir::OpPassManager &pm, const ModelSpec &spec,
                            const CompileOptions &o,
                            const std::vector<std::string> &tunedConfigs) {
  mlir::fbt::KernelPipelineOptions options;
  kernelPipelineOptions(spec, o, tunedConfigs, options);
  mlir::fbt::buildKernelPipeline(pm, options);
}

} // namespace fbt::driver
