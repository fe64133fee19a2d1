//===- fbtc.cpp - the fbt compiler driver ---------------------------------===//
//
//   fbtc SPEC --emit=fbt [-o FILE]     model-level fbt IR of every step
//   fbtc SPEC --emit=train [-o FILE]   after the training-graph passes
//   fbtc SPEC --emit=kernels|plan      after fbt-to-kernels; the step plans
//   fbtc SPEC --target=cpu -o M.fbtb   the runtime bundle (CPU)
//   fbtc SPEC --target=sm_90 -o M.fbtb the runtime bundle (NVIDIA; also sm_80)
//   fbtc SPEC --target=sm_90 --emit=ptx   the kernels' PTX
//   fbtc SPEC --target=simt -o M.fbtb  the GPU's kernels emulated on the CPU
//   fbtc SPEC --describe [--json]      the figures a user plans with
//
// Exit status: 0 on success, 2 on bad input (spec, options), 1 on an internal
// error. Output files are written whole or not at all (temp file + rename).
//
//===----------------------------------------------------------------------===//

#include "dialect/FbtDialect.h"
#include "frontend/Describe.h"
#include "frontend/ModelBuilder.h"
#include "frontend/Spec.h"
#include "frontend/SpecJson.h"
#include "codegen/bundle/BundleAssembly.h"
#include "codegen/cpu/CpuTarget.h"
#include "codegen/kernels/Kernels.h"
#include "codegen/nvptx/NvptxTarget.h"
#include "codegen/simt/SimtTarget.h"
#include "codegen/plan/StepPlan.h"
#include "passes/Passes.h"
#include "runtime/format/BundleFormat.h"
#include "runtime/base/Error.h"
#include "runtime/format/TuneCache.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace {
enum class Stage { Fbt, Train, Kernels, Plan, Ptx, Bundle };
enum class Target { None, Cpu, Sm80, Sm90, Simt };

cl::OptionCategory category("fbtc options");
cl::opt<std::string> specPath(cl::Positional, cl::desc("<model spec .json>"),
                              cl::Required, cl::cat(category));
cl::opt<std::string> outputPath("o", cl::desc("Output file ('-' for stdout)"),
                                cl::value_desc("file"), cl::init("-"),
                                cl::cat(category));
cl::opt<Stage> emit("emit", cl::desc("What to produce"), cl::init(Stage::Fbt),
                    cl::values(clEnumValN(Stage::Fbt, "fbt",
                                          "model-level fbt IR: train_k<K> for "
                                          "each scheduled K, prefill, "
                                          "decode_step"),
                               clEnumValN(Stage::Train, "train",
                                          "after the training-graph passes: "
                                          "expanded, differentiated, with "
                                          "AdamW"),
                               clEnumValN(Stage::Kernels, "kernels",
                                          "after fbt-to-kernels: library "
                                          "GEMMs and generated kernels"),
                               clEnumValN(Stage::Plan, "plan",
                                          "the step plans (JSON): buffers, "
                                          "arena sizes, calls"),
                               clEnumValN(Stage::Ptx, "ptx",
                                          "the kernels' PTX (with an "
                                          "NVIDIA --target)"),
                               clEnumValN(Stage::Bundle, "bundle",
                                          "the runtime bundle (.fbtb); the "
                                          "default with --target")),
                    cl::cat(category));
cl::opt<Target> target("target", cl::desc("Compile for"),
                       cl::init(Target::None),
                       cl::values(clEnumValN(Target::Cpu, "cpu",
                                             "this machine's CPU: kernels "
                                             "through LLVM, GEMMs on BLAS"),
                                  clEnumValN(Target::Sm90, "sm_90",
                                             "NVIDIA Hopper (H100, H200): "
                                             "PTX 8.0 + cubin, GEMMs on "
                                             "cuBLASLt"),
                                  clEnumValN(Target::Sm80, "sm_80",
                                             "NVIDIA Ampere (A100): PTX 8.0 "
                                             "+ cubin"),
                                  clEnumValN(Target::Simt, "simt",
                                             "the GPU's kernels and launches, "
                                             "emulated on this CPU thread by "
                                             "thread (for tests)")),
                       cl::cat(category));
cl::opt<std::string> cpuName("cpu",
                             cl::desc("LLVM CPU name for --target=cpu "
                                      "(default x86-64-v3; 'native' for "
                                      "this machine's CPU and the features it "
                                      "reports: with AVX-512, the products use "
                                      "its 512-bit vectors)"),
                             cl::cat(category));
cl::opt<bool> cpuParallel(
    "cpu-parallel",
    cl::desc("With --target=cpu: run the kernels' parallel loops on the "
             "runtime's team of threads, which also runs the GEMMs (fbt --threads or "
             "OMP_NUM_THREADS sets how many); =false for serial kernels"),
    cl::init(true), cl::cat(category));
cl::opt<std::string> dumpLLVMIR(
    "dump-llvm-ir",
    cl::desc("With --target=cpu: also write the kernels' optimized LLVM IR to "
             "this file (to check what vectorized)"),
    cl::value_desc("file"), cl::cat(category));
cl::opt<std::string> gpuStorage(
    "gpu-storage",
    cl::desc("With an NVIDIA (or simt) --target: store training activations "
             "in 'bf16' (default) or 'f32'; arithmetic and accumulation are "
             "f32 either way"),
    cl::init("bf16"), cl::cat(category));
cl::opt<std::string> inferenceWeights(
    "inference-weights",
    cl::desc("How the inference steps (eval, prefill, decode) read the weight "
             "matrices: 'f32', 'bf16' or 'int8' (an f16 scale per group of 32 "
             "along a row); overrides the spec's inference.weights. Training "
             "keeps f32 weights either way"),
    cl::value_desc("form"), cl::cat(category));
cl::opt<std::string> inferenceActivations(
    "inference-activations",
    cl::desc("With int8 inference weights on the CPU: 'int8' quantizes the "
             "input rows of every product by a weight (prompts and decode steps) "
             "per group of 32 too and multiplies in integers (int8 dot products, "
             "as llama.cpp's Q8_0), "
             "'f32' (default) multiplies the f32 rows; overrides the spec's "
             "inference.activations"),
    cl::value_desc("form"), cl::cat(category));
cl::opt<std::string> inferenceKvCache(
    "inference-kv-cache",
    cl::desc("How the inference steps store the KV cache: 'f32' (default) or "
             "'f16' (half the bytes, the keys and values rounded as written, "
             "llama.cpp's default); overrides the spec's inference.kv_cache"),
    cl::value_desc("form"), cl::cat(category));
cl::opt<mlir::fbt::TuneSpace> tuneSpace(
    "tune-space",
    cl::desc("Also compile each kernel in other configurations of its knobs "
             "(threads per block, elements per thread, attention tiles, the "
             "CPU's loop grain, threading and prefetching), for `fbt tune` to choose from"),
    cl::init(mlir::fbt::TuneSpace::None),
    cl::values(clEnumValN(mlir::fbt::TuneSpace::None, "none",
                          "one configuration per kernel (default)"),
               clEnumValN(mlir::fbt::TuneSpace::Default, "default",
                          "a few values per knob"),
               clEnumValN(mlir::fbt::TuneSpace::Wide, "wide",
                          "more values per knob (slower to compile)")),
    cl::cat(category));
cl::opt<std::string> tunedCache(
    "tuned",
    cl::desc("Compile each kernel only in the configuration `fbt tune` chose "
             "for this spec and target, read from this tune cache"),
    cl::value_desc("cache"), cl::cat(category));
cl::opt<bool> withStates(
    "with-states",
    cl::desc("Also compile prefill_states (and prefill_fused_states): the "
             "prefills that return every layer's residual stream, for `fbt "
             "probe`"),
    cl::cat(category));
cl::opt<std::string> recipeName(
    "recipe",
    cl::desc("The defaults the spec's feedback and training sections start from, "
             "in place of its own \"recipe\": fbt (the measured default) or paper "
             "(the method as its paper states it); the spec's keys still override"),
    cl::value_desc("fbt|paper"), cl::cat(category));
cl::opt<bool> describe("describe",
                       cl::desc("Print parameter counts, FLOPs, memory and "
                                "KV-cache figures instead of compiling"),
                       cl::cat(category));
cl::opt<bool> fuseGate("fuse-feedback-gate",
                       cl::desc("Fold the GLU gate into the first layer's norm "
                                "(default on)"),
                       cl::init(true), cl::cat(category));
cl::opt<bool> fuseProducts(
    "fuse-products",
    cl::desc("On the CPU, run the few-row products of one input (a layer's q, k and v; gate "
             "and up) as one kernel call (default on; off gives the GPU's kernel structure, "
             "for comparing the two)"),
    cl::init(true), cl::cat(category));
cl::opt<bool> jsonOutput("json", cl::desc("With --describe: one JSON object"),
                   cl::cat(category));
cl::list<int64_t> describeRanks(
    "ranks",
    cl::desc("With --describe: the data-parallel world sizes to show the "
             "communication and optimizer memory per rank for (default 8,64)"),
    cl::value_desc("N,..."), cl::CommaSeparated, cl::cat(category));

constexpr int kBadInput = 2;
constexpr int kInternalError = 1;

int fail(int status, const Twine &msg) {
  WithColor::error(errs(), "fbtc") << msg << "\n";
  return status;
}

/// Writes what `print` produces to outputPath, atomically.
int writeOutput(function_ref<void(raw_ostream &)> print) {
  if (Error e = writeToOutput(outputPath, [&](raw_ostream &os) {
        print(os);
        return Error::success();
      }))
    return fail(kBadInput, toString(std::move(e)));
  return 0;
}

/// The pipeline's settings from the spec's training section.
void setTrainOptions(const fbt::ModelSpec &spec,
                     mlir::fbt::TrainPipelineOptions &o) {
  o.beta1 = spec.training.beta1;
  o.beta2 = spec.training.beta2;
  o.epsilon = spec.training.adamEpsilon;
  o.weightDecay = spec.training.weightDecay;
  // grad_clip 0 turns clipping off: a bound no norm reaches.
  o.maxGradNorm = spec.training.gradClip > 0 ? spec.training.gradClip : 1e30;
  o.keepGradientStep = true;
  o.fuseFeedbackGate = fuseGate;
  o.zero = spec.training.zero;
}
/// The plan of every step function, by name, and the largest arena.
LogicalResult planSteps(mlir::ModuleOp module, std::map<std::string, ::fbt::StepPlan> &steps,
                        int64_t &largestArena) {
  for (auto fn : module.getOps<mlir::func::FuncOp>()) {
    if (!fn->hasAttr("fbt.step"))
      continue;
    FailureOr<mlir::fbt::StepPlan> plan = mlir::fbt::planStep(fn);
    if (failed(plan))
      return failure();
    largestArena = std::max(largestArena, plan->arenaBytes);
    steps[fn.getSymName().str()] = std::move(*plan);
  }
  return success();
}

bool isNvidia(Target t) { return t == Target::Sm80 || t == Target::Sm90; }
/// Targets whose kernels are mapped to GPU blocks and threads.
bool mapsToGpu(Target t) { return isNvidia(t) || t == Target::Simt; }

mlir::fbt::NvptxTargetOptions nvptxOptions() {
  mlir::fbt::NvptxTargetOptions o;
  o.chip = target == Target::Sm80 ? "sm_80" : "sm_90";
  return o;
}

/// What the bundle is built for, from the command line.
mlir::fbt::BundleBuild bundleBuild() {
  mlir::fbt::BundleBuild build;
  if (isNvidia(target)) {
    build.target = ::fbt::TargetKind::Nvptx;
    build.nvptx = nvptxOptions();
    build.storage = gpuStorage.getValue();
  } else if (target == Target::Simt) {
    build.target = ::fbt::TargetKind::Simt;
    build.storage = gpuStorage.getValue();
  } else {
    build.target = ::fbt::TargetKind::Cpu;
    build.cpu.cpu = cpuName;
    build.cpu.parallel = cpuParallel;
    build.cpu.dumpLLVMIR = dumpLLVMIR;
  }
  return build;
}

/// The resolved spec as the bundle records it (its "model").
::fbt::Json resolvedModel(const fbt::ModelSpec &spec) {
  std::string model; // through its text: the frontend speaks llvm::json
  raw_string_ostream os(model);
  os << fbt::specToJson(spec);
  os.flush();
  return ::fbt::parseJson(model);
}

/// --tuned: the configurations `fbt tune` chose for this spec on this
/// target (the newest such entry of the cache), as fbt-to-kernels' configs.
int readTunedConfigs(const fbt::ModelSpec &spec, std::vector<std::string> &configs,
                     ::fbt::TunedBuild &build) {
  ::fbt::TuneCache cache;
  try {
    cache = ::fbt::readTuneCache(tunedCache);
  } catch (const ::fbt::RuntimeError &e) {
    return fail(kBadInput, e.what());
  }
  std::string model = ::fbt::modelHash(resolvedModel(spec)),
              where = mlir::fbt::bundleTargetName(bundleBuild());
  const ::fbt::TuneEntry *newest = nullptr;
  for (const auto &[key, entry] : cache.entries)
    if (entry.model == model && entry.target == where &&
        (!newest || entry.tunedAt > newest->tunedAt))
      newest = &entry;
  if (!newest)
    return fail(kBadInput, "tune cache " + tunedCache + " has no entry for this spec on " +
                               where + " (run `fbt tune` on a bundle of it compiled "
                               "with --tune-space)");
  build.device = cache.device;
  build.tunedAt = newest->tunedAt;
  for (const ::fbt::TunedGemm &g : newest->gemms)
    build.gemmAlgorithms[g.shape] = g.algorithm;
  for (const auto &[kernel, tuned] : newest->kernels) {
    mlir::fbt::KernelConfig config;
    for (const auto &[knob, value] : tuned.config) {
      std::optional<mlir::fbt::Knob> k = mlir::fbt::knobNamed(knob);
      if (!k)
        return fail(kBadInput, "tune cache " + tunedCache + ": kernel '" + kernel +
                                   "' has an unknown knob '" + knob + "'");
      config[*k] = value;
    }
    configs.push_back(mlir::fbt::configOption(kernel, config));
  }
  return 0;
}

/// Compiles the kernels for the target and writes the bundle: the manifest
/// (target, resolved spec, parameters, kernels, plans) and the binaries.
int writeBundle(const fbt::ModelSpec &spec, mlir::ModuleOp module,
                std::map<std::string, ::fbt::StepPlan> steps, int64_t largestArena,
                const std::optional<::fbt::TunedBuild> &tuned) {
  mlir::fbt::BundleBuild build = bundleBuild();
  build.tuned = tuned;
  for (const fbt::ParameterInfo &p : fbt::parameterList(spec))
    build.params.push_back({p.name, p.shape, p.decay, p.feedback});
  build.model = resolvedModel(spec);
  build.int8Activations = spec.inference.weights == ::fbt::WeightForm::Int8 &&
                          spec.inference.activations == ::fbt::WeightForm::Int8;
  FailureOr<mlir::fbt::AssembledBundle> bundle =
      mlir::fbt::assembleBundle(module, std::move(steps), largestArena, build);
  if (failed(bundle))
    return fail(kInternalError, "compiling the kernels failed");
  if (build.target == ::fbt::TargetKind::Nvptx &&
      llvm::none_of(bundle->blobs, [](const auto &b) { return b.first == "kernels.cubin"; }))
    WithColor::warning(errs(), "fbtc")
        << "no ptxas found (PATH, $CUDA_HOME/bin, $FBT_PTXAS): the bundle "
           "holds PTX only, which the driver compiles at load\n";
  std::string out = outputPath == "-" ? spec.name + ".fbtb" : outputPath;
  try {
    ::fbt::writeBundleFile(out, ::fbt::toJson(bundle->manifest), bundle->blobs);
  } catch (const ::fbt::RuntimeError &e) {
    return fail(kBadInput, e.what());
  }
  return 0;
}
/// --describe: the figures, as text or JSON.
int runDescribe(const fbt::ModelSpec &spec) {
  Expected<fbt::Description> d = fbt::describe(spec);
  if (!d)
    return fail(kBadInput, toString(d.takeError()));
  if (!describeRanks.empty()) {
    for (int64_t n : describeRanks)
      if (n < 1)
        return fail(kBadInput, "--ranks: each world size must be at least 1, got " + Twine(n));
    d->dataParallel = fbt::describeRanks(*d, {describeRanks.begin(), describeRanks.end()});
  }
  return writeOutput([&](raw_ostream &os) {
    if (jsonOutput)
      fbt::printDescriptionJson(spec, *d, os);
    else
      fbt::printDescription(spec, *d, os);
  });
}

/// The stage to stop after, from --emit and --target; kBadInput where the
/// options do not fit together.
int resolveStage(Stage &stage) {
  stage = emit;
  if (target != Target::None && emit.getNumOccurrences() == 0)
    stage = Stage::Bundle;
  if (stage == Stage::Bundle && target == Target::None)
    return fail(kBadInput, "--emit=bundle needs a --target (cpu, sm_90, sm_80)");
  if (gpuStorage != "bf16" && gpuStorage != "f32")
    return fail(kBadInput, "--gpu-storage must be bf16 or f32, not '" + gpuStorage + "'");
  if (stage == Stage::Ptx && !isNvidia(target))
    return fail(kBadInput, "--emit=ptx needs an NVIDIA --target (sm_90, sm_80)");
  return 0;
}

/// The training-graph passes, then (from --emit=kernels on) the kernel
/// passes for the target.
int runPasses(mlir::MLIRContext &ctx, mlir::ModuleOp module, const fbt::ModelSpec &spec,
              Stage stage, const std::vector<std::string> &tunedConfigs) {
  mlir::PassManager pm(&ctx);
  mlir::fbt::TrainPipelineOptions options;
  setTrainOptions(spec, options);
  mlir::fbt::buildTrainPipeline(pm, options);
  if (stage >= Stage::Kernels)
    mlir::fbt::buildKernelPipeline(
        pm, mapsToGpu(target) ? mlir::fbt::KernelTarget::Gpu : mlir::fbt::KernelTarget::Cpu,
        mapsToGpu(target) && gpuStorage == "bf16" ? mlir::fbt::Storage::BF16
                                                  : mlir::fbt::Storage::F32,
        tuneSpace, tunedConfigs, ::fbt::kindName(spec.inference.weights),
        ::fbt::kindName(spec.inference.activations), fuseProducts,
        target == Target::Cpu ? mlir::fbt::cpuVectorsOf(bundleBuild().cpu) : mlir::fbt::CpuVectors::Avx2);
  if (failed(pm.run(module)))
    return fail(kInternalError, "the compiler passes failed");
  return 0;
}

/// From the planned steps on: the plans, the PTX, or the bundle.
int emitPlanned(const fbt::ModelSpec &spec, mlir::ModuleOp module, Stage stage,
                const std::optional<::fbt::TunedBuild> &tunedBuild) {
  std::map<std::string, ::fbt::StepPlan> steps;
  int64_t largestArena = 0;
  if (failed(planSteps(module, steps, largestArena)))
    return fail(kInternalError, "planning the steps failed");
  if (stage == Stage::Plan)
    return writeOutput([&](raw_ostream &os) {
      ::fbt::Json plans = ::fbt::Json::object();
      for (const auto &[name, plan] : steps)
        plans[name] = ::fbt::toJson(plan);
      os << ::fbt::dumpJson(plans, 2) << "\n";
    });
  if (stage == Stage::Ptx) {
    FailureOr<mlir::fbt::NvptxBinary> bin = mlir::fbt::compileKernelsForNvptx(module, nvptxOptions());
    if (failed(bin))
      return fail(kInternalError, "compiling the kernels failed");
    return writeOutput([&](raw_ostream &os) { os << bin->ptx; });
  }
  return writeBundle(spec, module, std::move(steps), largestArena, tunedBuild);
}
} // namespace

/// `option`, where given, over the spec's `field`: one of `allowed`
/// (named `names` in the error).
template <class Kind>
int overrideForm(const cl::opt<std::string> &option, std::vector<Kind> allowed,
                 const char *names, Kind &field) {
  if (!option.getNumOccurrences())
    return 0;
  std::optional<Kind> form = ::fbt::parseKind<Kind>(option.getValue());
  if (!form || !llvm::is_contained(allowed, *form))
    return fail(kBadInput, "--" + option.ArgStr + " must be " + names + ", not '" +
                               option.getValue() + "'");
  field = *form;
  return 0;
}

/// --inference-weights, --inference-activations and --inference-kv-cache
/// over the spec's inference section, then their combination checked
/// against the target.
int applyInferenceOptions(fbt::ModelSpec &spec) {
  using ::fbt::WeightForm;
  using ::fbt::CacheForm;
  if (int status = overrideForm(inferenceKvCache, {CacheForm::F32, CacheForm::F16},
                                "f32 or f16", spec.inference.kvCache))
    return status;
  if (int status = overrideForm(inferenceWeights,
                                {WeightForm::F32, WeightForm::BF16, WeightForm::Int8},
                                "f32, bf16 or int8", spec.inference.weights))
    return status;
  if (int status = overrideForm(inferenceActivations, {WeightForm::F32, WeightForm::Int8},
                                "f32 or int8", spec.inference.activations))
    return status;
  if (spec.inference.activations != WeightForm::Int8)
    return 0;
  if (spec.inference.weights != WeightForm::Int8)
    return fail(kBadInput, "int8 inference activations need int8 inference weights "
                           "(--inference-weights=int8), not " +
                               std::string(::fbt::kindName(spec.inference.weights)));
  if (mapsToGpu(target))
    return fail(kBadInput, "int8 inference activations are for the CPU target: GPU "
                           "kernels read int8 weights with f32 activations (compile "
                           "with --inference-activations=f32)");
  if (target == Target::Cpu && !mlir::fbt::cpuHasAvx2(bundleBuild().cpu))
    return fail(kBadInput, "int8 inference activations need an x86 CPU with AVX2; --cpu=" +
                               mlir::fbt::resolvedCpu(bundleBuild().cpu) +
                               " has none (compile with --inference-activations=f32)");
  return 0;
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "fbtc: compiles a Full-Bandwidth Transformer model spec (JSON)\n");

  std::optional<fbt::Recipe> recipe;
  if (recipeName.getNumOccurrences()) {
    recipe = fbt::parseRecipe(recipeName);
    if (!recipe)
      return fail(kBadInput, "--recipe: expected fbt or paper, got '" + recipeName + "'");
  }
  Expected<fbt::ModelSpec> spec = fbt::loadSpec(specPath, recipe);
  if (!spec)
    return fail(kBadInput, toString(spec.takeError()));
  if (int status = applyInferenceOptions(*spec))
    return status;
  if (describe)
    return runDescribe(*spec);

  mlir::DialectRegistry registry;
  mlir::fbt::registerNvptxTarget(registry);
  mlir::MLIRContext ctx(registry);
  ctx.loadDialect<mlir::fbt::FbtDialect, mlir::func::FuncDialect, mlir::arith::ArithDialect>();
  mlir::OwningOpRef<mlir::ModuleOp> module =
      fbt::buildModel(ctx, *spec, fbt::BuildOptions{withStates});
  if (failed(mlir::verify(*module)))
    return fail(kInternalError, "the generated IR does not verify (a bug in "
                                "fbtc; please report it with the spec)");
  Stage stage;
  if (int status = resolveStage(stage))
    return status;
  std::vector<std::string> tunedConfigs;
  std::optional<::fbt::TunedBuild> tunedBuild;
  if (!tunedCache.empty()) {
    if (tuneSpace != mlir::fbt::TuneSpace::None)
      return fail(kBadInput, "--tuned and --tune-space exclude each other: a "
                             "tuned bundle holds the chosen configurations only");
    if (target == Target::None || stage < Stage::Kernels)
      return fail(kBadInput, "--tuned needs a --target (the one `fbt tune` ran "
                             "a bundle of) and kernels to build");
    if (int status = readTunedConfigs(*spec, tunedConfigs, tunedBuild.emplace()))
      return status;
  }
  if (stage >= Stage::Train)
    if (int status = runPasses(ctx, *module, *spec, stage, tunedConfigs))
      return status;
  if (stage <= Stage::Kernels)
    return writeOutput([&](raw_ostream &os) { module->print(os); });
  return emitPlanned(*spec, *module, stage, tunedBuild);
}
