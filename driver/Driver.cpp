//===- Driver.cpp - the options and the spec of a compilation -------------===//

#include "driver/Driver.h"

#include "codegen/cpu/CpuTarget.h"
#include "codegen/nvptx/NvptxTarget.h"
#include "dialect/FbtDialect.h"
#include "frontend/LoadSpec.h"
#include "frontend/ModelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/STLExtras.h"

namespace fbt::driver {

char DriverError::ID;

llvm::Error badInput(const llvm::Twine &message) {
  return llvm::make_error<DriverError>(true, message.str());
}
llvm::Error internalError(const llvm::Twine &message) {
  return llvm::make_error<DriverError>(false, message.str());
}

llvm::ArrayRef<Choice<Target>> targetChoices() {
  static const Choice<Target> choices[] = {
      {Target::Cpu, "cpu", "this machine's CPU: kernels through LLVM, GEMMs on BLAS"},
      {Target::Sm90, "sm_90", "NVIDIA Hopper (H100, H200): PTX 8.0 + cubin, GEMMs on cuBLASLt"},
      {Target::Sm80, "sm_80", "NVIDIA Ampere (A100): PTX 8.0 + cubin"},
      {Target::Simt, "simt",
       "the GPU's kernels and launches, emulated on this CPU thread by thread (for tests)"}};
  return choices;
}

llvm::ArrayRef<Choice<Stage>> stageChoices() {
  static const Choice<Stage> choices[] = {
      {Stage::Fbt, "fbt", "model-level fbt IR: train_k<K> for each scheduled K, prefill, "
                          "decode_step"},
      {Stage::Train, "train", "after the training-graph passes: expanded, differentiated, "
                              "with AdamW"},
      {Stage::Kernels, "kernels", "after fbt-to-kernels: library GEMMs and generated kernels"},
      {Stage::Plan, "plan", "the step plans (JSON): buffers, arena sizes, calls"},
      {Stage::Ptx, "ptx", "the kernels' PTX (with an NVIDIA --target)"},
      {Stage::Bundle, "bundle", "the runtime bundle (.fbtb); the default with --target"}};
  return choices;
}

llvm::ArrayRef<Choice<mlir::fbt::TuneSpace>> tuneSpaceChoices() {
  using mlir::fbt::TuneSpace;
  static const Choice<TuneSpace> choices[] = {
      {TuneSpace::None, "none", "one configuration per kernel (default)"},
      {TuneSpace::Default, "default", "a few values per knob"},
      {TuneSpace::Wide, "wide", "more values per knob (slower to compile)"}};
  return choices;
}

bool isNvidia(Target t) { return t == Target::Sm80 || t == Target::Sm90; }
bool mapsToGpu(Target t) { return isNvidia(t) || t == Target::Simt; }

Stage stageOf(const CompileOptions &o) {
  if (o.stage)
    return *o.stage;
  return o.target != Target::None ? Stage::Bundle : Stage::Fbt;
}

llvm::Error checkOptions(const CompileOptions &o) {
  Stage stage = stageOf(o);
  if (stage == Stage::Bundle && o.target == Target::None)
    return badInput("--emit=bundle needs a --target (" + choiceNames(targetChoices()) + ")");
  if (o.gpuStorage != "bf16" && o.gpuStorage != "f32")
    return badInput("--gpu-storage must be bf16 or f32, not '" + o.gpuStorage + "'");
  if (stage == Stage::Ptx && !isNvidia(o.target))
    return badInput("--emit=ptx needs an NVIDIA --target (" +
                    choiceNames(targetChoices(), isNvidia) + ")");
  if (!o.tunedCache.empty()) {
    if (o.tuneSpace != mlir::fbt::TuneSpace::None)
      return badInput("--tuned and --tune-space exclude each other: a tuned bundle holds "
                      "the chosen configurations only");
    if (o.target == Target::None || stage < Stage::Kernels)
      return badInput("--tuned needs a --target (the one `fbt tune` ran a bundle of) and "
                      "kernels to build");
  }
  return llvm::Error::success();
}

namespace {
/// `given`, where set, over the spec's `field`: one of `allowed` (named
/// `names` in the error, as the option `flag`).
template <class Kind>
llvm::Error overrideForm(const std::string &given, const char *flag, std::vector<Kind> allowed,
                         const char *names, Kind &field) {
  if (given.empty())
    return llvm::Error::success();
  std::optional<Kind> form = parseKind<Kind>(given);
  if (!form || !llvm::is_contained(allowed, *form))
    return badInput(llvm::Twine("--") + flag + " must be " + names + ", not '" + given + "'");
  field = *form;
  return llvm::Error::success();
}

/// The options' inference forms over the spec's, then their combination
/// checked against the target.
llvm::Error applyInferenceOptions(ModelSpec &spec, const CompileOptions &o) {
  if (llvm::Error e = overrideForm(o.inferenceKvCache, "inference-kv-cache",
                                   {CacheForm::F32, CacheForm::F16}, "f32 or f16",
                                   spec.inference.kvCache))
    return e;
  if (llvm::Error e = overrideForm(o.inferenceWeights, "inference-weights",
                                   {WeightForm::F32, WeightForm::BF16, WeightForm::Int8},
                                   "f32, bf16 or int8", spec.inference.weights))
    return e;
  if (llvm::Error e = overrideForm(o.inferenceActivations, "inference-activations",
                                   {WeightForm::F32, WeightForm::Int8}, "f32 or int8",
                                   spec.inference.activations))
    return e;
  if (spec.inference.activations != WeightForm::Int8)
    return llvm::Error::success();
  if (spec.inference.weights != WeightForm::Int8)
    return badInput("int8 inference activations need int8 inference weights "
                    "(--inference-weights=int8), not " +
                    std::string(kindName(spec.inference.weights)));
  if (mapsToGpu(o.target))
    return badInput("int8 inference activations are for the CPU target: GPU kernels read "
                    "int8 weights with f32 activations (compile with "
                    "--inference-activations=f32)");
  if (o.target == Target::Cpu && !mlir::fbt::cpuHasAvx2(bundleBuild(o).cpu))
    return badInput("int8 inference activations need an x86 CPU with AVX2; --cpu=" +
                    mlir::fbt::resolvedCpu(bundleBuild(o).cpu) +
                    " has none (compile with --inference-activations=f32)");
  return llvm::Error::success();
}

llvm::Expected<ModelSpec> checked(llvm::Expected<ModelSpec> spec, const CompileOptions &o) {
  if (!spec)
    return badInput(llvm::toString(spec.takeError()));
  if (llvm::Error e = applyInferenceOptions(*spec, o))
    return std::move(e);
  return spec;
}
} // namespace

llvm::Expected<ModelSpec> loadSpec(llvm::StringRef path, const CompileOptions &o) {
  return checked(fbt::loadSpec(path, o.recipe), o);
}

llvm::Expected<ModelSpec> parseSpecText(llvm::StringRef text, llvm::StringRef sourceName,
                                        const CompileOptions &o) {
  return checked(fbt::parseSpec(text, sourceName, o.recipe), o);
}

void prepareContext(mlir::MLIRContext &ctx) {
  mlir::DialectRegistry registry;
  mlir::fbt::registerNvptxTarget(registry);
  ctx.appendDialectRegistry(registry);
  ctx.loadDialect<mlir::fbt::FbtDialect, mlir::func::FuncDialect, mlir::arith::ArithDialect>();
}

llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
buildModule(mlir::MLIRContext &ctx, const ModelSpec &spec, const CompileOptions &o) {
  mlir::OwningOpRef<mlir::ModuleOp> module = buildModel(ctx, spec, BuildOptions{o.withStates});
  if (failed(mlir::verify(*module)))
    return internalError("the generated IR does not verify (a bug in fbtc; please report it "
                         "with the spec)");
  return std::move(module);
}

} // namespace fbt::driver
