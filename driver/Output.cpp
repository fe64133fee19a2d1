//===- Output.cpp - from the passes' module to plans, PTX and bundles ------===//

#include "driver/Driver.h"

#include "codegen/nvptx/NvptxTarget.h"
#include "frontend/Parameters.h"
#include "frontend/SpecJson.h"
#include "runtime/base/Error.h"
#include "runtime/format/TuneCache.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

namespace fbt::driver {

mlir::fbt::BundleBuild bundleBuild(const CompileOptions &o) {
  mlir::fbt::BundleBuild build;
  if (isNvidia(o.target)) {
    build.target = TargetKind::Nvptx;
    build.nvptx.chip = o.target == Target::Sm80 ? "sm_80" : "sm_90";
    build.storage = o.gpuStorage;
  } else if (o.target == Target::Simt) {
    build.target = TargetKind::Simt;
    build.storage = o.gpuStorage;
  } else {
    build.target = TargetKind::Cpu;
    build.cpu.cpu = o.cpu;
    build.cpu.parallel = o.cpuParallel;
    build.cpu.dumpLLVMIR = o.dumpLLVMIR;
  }
  return build;
}

Json resolvedModel(const ModelSpec &spec) {
  std::string model; // through its text: the frontend speaks llvm::json
  llvm::raw_string_ostream os(model);
  os << specToJson(spec);
  os.flush();
  return parseJson(model);
}

llvm::Expected<Tuned> readTuned(const ModelSpec &spec, const CompileOptions &o) {
  TuneCache cache;
  try {
    cache = readTuneCache(o.tunedCache);
  } catch (const RuntimeError &e) {
    return badInput(e.what());
  }
  std::string model = modelHash(resolvedModel(spec)),
              where = mlir::fbt::bundleTargetName(bundleBuild(o));
  const TuneEntry *newest = nullptr;
  for (const auto &[key, entry] : cache.entries)
    if (entry.model == model && entry.target == where &&
        (!newest || entry.tunedAt > newest->tunedAt))
      newest = &entry;
  if (!newest)
    return badInput("tune cache " + o.tunedCache + " has no entry for this spec on " + where +
                    " (run `fbt tune` on a bundle of it compiled with --tune-space)");
  Tuned out;
  out.build.device = cache.device;
  out.build.tunedAt = newest->tunedAt;
  for (const TunedGemm &g : newest->gemms)
    out.build.gemmAlgorithms[g.shape] = g.algorithm;
  for (const auto &[kernel, tuned] : newest->kernels) {
    mlir::fbt::KernelConfig config;
    for (const auto &[knob, value] : tuned.config) {
      std::optional<mlir::fbt::Knob> k = mlir::fbt::knobNamed(knob);
      if (!k)
        return badInput("tune cache " + o.tunedCache + ": kernel '" + kernel +
                        "' has an unknown knob '" + knob + "'");
      config[*k] = value;
    }
    out.configs.push_back(mlir::fbt::configOption(kernel, config));
  }
  return out;
}

llvm::Expected<Plans> planSteps(mlir::ModuleOp module) {
  Plans plans;
  for (auto fn : module.getOps<mlir::func::FuncOp>()) {
    if (!fn->hasAttr("fbt.step"))
      continue;
    mlir::FailureOr<mlir::fbt::StepPlan> plan = mlir::fbt::planStep(fn);
    if (mlir::failed(plan))
      return internalError("planning the steps failed");
    plans.largestArena = std::max(plans.largestArena, plan->arenaBytes);
    plans.steps[fn.getSymName().str()] = std::move(*plan);
  }
  return plans;
}

llvm::Expected<std::string> emitPtx(mlir::ModuleOp module, const CompileOptions &o) {
  mlir::FailureOr<mlir::fbt::NvptxBinary> bin =
      mlir::fbt::compileKernelsForNvptx(module, bundleBuild(o).nvptx);
  if (mlir::failed(bin))
    return internalError("compiling the kernels failed");
  return bin->ptx;
}

llvm::Error writeBundle(const ModelSpec &spec, mlir::ModuleOp module, Plans plans,
                        const CompileOptions &o, const std::optional<Tuned> &tuned,
                        const std::string &path) {
  mlir::fbt::BundleBuild build = bundleBuild(o);
  if (tuned)
    build.tuned = tuned->build;
  for (const ParameterInfo &p : parameterList(spec))
    build.params.push_back({p.name, p.shape, p.decay, p.feedback});
  build.model = resolvedModel(spec);
  build.int8Activations = spec.inference.weights == WeightForm::Int8 &&
                          spec.inference.activations == WeightForm::Int8;
  mlir::FailureOr<mlir::fbt::AssembledBundle> bundle = mlir::fbt::assembleBundle(
      module, std::move(plans.steps), plans.largestArena, build);
  if (mlir::failed(bundle))
    return internalError("compiling the kernels failed");
  if (build.target == TargetKind::Nvptx &&
      llvm::none_of(bundle->blobs, [](const auto &b) { return b.first == "kernels.cubin"; }))
    llvm::WithColor::warning(llvm::errs(), "fbtc")
        << "no ptxas found (PATH, $CUDA_HOME/bin, $FBT_PTXAS): the bundle holds PTX only, "
           "which the driver compiles at load\n";
  try {
    writeBundleFile(path, toJson(bundle->manifest), bundle->blobs);
  } catch (const RuntimeError &e) {
    return badInput(e.what());
  }
  return llvm::Error::success();
}

namespace {
/// `tuned` from the options' tune cache, where they name one.
llvm::Error readTunedIfNamed(const ModelSpec &spec, const CompileOptions &o,
                             std::optional<Tuned> &tuned) {
  if (o.tunedCache.empty())
    return llvm::Error::success();
  llvm::Expected<Tuned> t = readTuned(spec, o);
  if (!t)
    return t.takeError();
  tuned = std::move(*t);
  return llvm::Error::success();
}
} // namespace

void populatePipeline(mlir::OpPassManager &pm, const ModelSpec &spec, const CompileOptions &o,
                      const std::optional<Tuned> &tuned) {
  Stage stage = stageOf(o);
  if (stage >= Stage::Train)
    populateTrainPipeline(pm, spec, o);
  if (stage >= Stage::Kernels)
    populateKernelPipeline(pm, spec, o, tuned ? tuned->configs : std::vector<std::string>{});
}

llvm::Expected<std::string> pipelineText(const ModelSpec &spec, const CompileOptions &o) {
  if (llvm::Error e = checkOptions(o))
    return std::move(e);
  std::optional<Tuned> tuned;
  if (llvm::Error e = readTunedIfNamed(spec, o, tuned))
    return std::move(e);
  mlir::MLIRContext ctx;
  prepareContext(ctx);
  mlir::PassManager pm(&ctx);
  populatePipeline(pm, spec, o, tuned);
  std::string text;
  llvm::raw_string_ostream os(text);
  pm.printAsTextualPipeline(os);
  return text;
}

llvm::Error compile(const ModelSpec &spec, const CompileOptions &o,
                    const std::string &bundlePath, std::string &text) {
  if (llvm::Error e = checkOptions(o))
    return e;
  Stage stage = stageOf(o);
  mlir::MLIRContext ctx;
  prepareContext(ctx);
  llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>> module = buildModule(ctx, spec, o);
  if (!module)
    return module.takeError();
  std::optional<Tuned> tuned;
  if (llvm::Error e = readTunedIfNamed(spec, o, tuned))
    return e;
  if (stage >= Stage::Train) {
    mlir::PassManager pm(&ctx);
    populatePipeline(pm, spec, o, tuned);
    if (mlir::failed(pm.run(**module)))
      return internalError("the compiler passes failed");
  }
  if (stage <= Stage::Kernels) {
    llvm::raw_string_ostream os(text);
    (*module)->print(os);
    os << "\n"; // as mlir-opt ends its output
    return llvm::Error::success();
  }
  llvm::Expected<Plans> plans = planSteps(**module);
  if (!plans)
    return plans.takeError();
  if (stage == Stage::Plan) {
    Json json = Json::object();
    for (const auto &[name, plan] : plans->steps)
      json[name] = toJson(plan);
    text = dumpJson(json, 2) + "\n";
    return llvm::Error::success();
  }
  if (stage == Stage::Ptx) {
    llvm::Expected<std::string> ptx = emitPtx(**module, o);
    if (!ptx)
      return ptx.takeError();
    text = std::move(*ptx);
    return llvm::Error::success();
  }
  return writeBundle(spec, **module, std::move(*plans), o, tuned, bundlePath);
}

} // namespace fbt::driver
