//===- Driver.h - the compiler's pipeline, for every tool that compiles -*- C++ -*-===//
//
// What fbtc does, as a library that fbtc, fbt-opt and the tests share (as
// CIRCT's Firtool and IREE's compiler/Pipelines): a spec goes through
//
//   loadSpec          the spec, its recipe and inference forms, checked
//                     against the target
//   buildModule       the model-level fbt IR of every step
//   populate*Pipeline the training-graph passes, then the kernel passes
//   readTuned         the kernel configurations `fbt tune` chose
//   planSteps         the step plans
//   emitPtx / writeBundle   the kernels' PTX, or the bundle
//
// each reading only a CompileOptions: one field per fbtc flag, so a tool
// maps its flags onto it and nothing reads a global option. compile() runs
// them all, up to the options' stage. Failures are DriverErrors: bad input
// (a spec or options that cannot be compiled: fbtc's exit status 2) or a
// failure of the compiler itself (1).
//
//===----------------------------------------------------------------------===//

#ifndef FBT_DRIVER_DRIVER_H
#define FBT_DRIVER_DRIVER_H

#include "codegen/bundle/BundleAssembly.h"
#include "codegen/kernels/KernelConfig.h"
#include "codegen/plan/StepPlan.h"
#include "frontend/Spec.h"
#include "passes/Passes.h"
#include "runtime/format/BundleFormat.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fbt::driver {

/// Where a compilation stops: fbtc --emit.
enum class Stage { Fbt, Train, Kernels, Plan, Ptx, Bundle };
/// What it compiles for: fbtc --target.
enum class Target { None, Cpu, Sm80, Sm90, Simt };

/// Every option of a compilation, with fbtc's defaults.
struct CompileOptions {
  /// Where to stop; unset: the bundle with a target, the fbt IR without.
  std::optional<Stage> stage;
  Target target = Target::None;
  std::string cpu;            ///< Cpu: the LLVM CPU name ("" x86-64-v3, "native")
  bool cpuParallel = true;    ///< Cpu: kernels' loops on the runtime's threads
  std::string dumpLLVMIR;     ///< Cpu: also write the kernels' LLVM IR here
  std::string gpuStorage = "bf16"; ///< Nvptx, Simt: training activations, bf16 or f32
  /// Over the spec's inference section where set: f32|bf16|int8, f32|int8,
  /// f32|f16.
  std::string inferenceWeights, inferenceActivations, inferenceKvCache;
  mlir::fbt::TuneSpace tuneSpace = mlir::fbt::TuneSpace::None;
  std::string tunedCache;     ///< the configurations `fbt tune` chose, from here
  bool withStates = false;    ///< also prefill_states and prefill_fused_states
  std::optional<Recipe> recipe; ///< over the spec's own "recipe"
  bool fuseFeedbackGate = true;
  bool fuseProducts = true;   ///< Cpu: few-row products of one input as one call
};

/// A compilation's failure: bad input, or the compiler's own.
class DriverError : public llvm::ErrorInfo<DriverError> {
public:
  static char ID;
  DriverError(bool badInput, std::string message)
      : badInput_(badInput), message_(std::move(message)) {}
  bool badInput() const { return badInput_; }
  void log(llvm::raw_ostream &os) const override { os << message_; }
  std::error_code convertToErrorCode() const override { return llvm::inconvertibleErrorCode(); }

private:
  bool badInput_;
  std::string message_;
};
llvm::Error badInput(const llvm::Twine &message);
llvm::Error internalError(const llvm::Twine &message);

/// One value of an option with named values, its name and what it means:
/// the one list that fbtc's flags, the parse functions and the errors of
/// every tool (the Python module's too) read.
template <typename T> struct Choice {
  T value;
  const char *name;
  const char *help;
};
/// --target: "cpu", "sm_90", "sm_80", "simt".
llvm::ArrayRef<Choice<Target>> targetChoices();
/// --emit: "fbt", "train", "kernels", "plan", "ptx", "bundle".
llvm::ArrayRef<Choice<Stage>> stageChoices();
/// --tune-space: "none", "default", "wide".
llvm::ArrayRef<Choice<mlir::fbt::TuneSpace>> tuneSpaceChoices();

/// "a, b or c": the names of `choices` (those `keep` accepts), for errors.
template <typename T>
std::string choiceNames(llvm::ArrayRef<Choice<T>> choices, bool (*keep)(T) = nullptr) {
  std::vector<const char *> names;
  for (const Choice<T> &c : choices)
    if (!keep || keep(c.value))
      names.push_back(c.name);
  std::string out;
  for (size_t i = 0; i < names.size(); ++i)
    out += std::string(i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
  return out;
}
/// The value named `name`; nullopt for any other name.
template <typename T>
std::optional<T> parseChoice(llvm::ArrayRef<Choice<T>> choices, llvm::StringRef name) {
  for (const Choice<T> &c : choices)
    if (name == c.name)
      return c.value;
  return std::nullopt;
}

bool isNvidia(Target t);
/// Targets whose kernels are mapped to GPU blocks and threads.
bool mapsToGpu(Target t);
/// The stage `options` stop at.
Stage stageOf(const CompileOptions &options);
/// The options that do not fit together (a stage without its target,
/// --tuned with --tune-space, ...), as bad input.
llvm::Error checkOptions(const CompileOptions &options);

/// The spec at `path` (or, from parseSpecText, the JSON `text`), under the
/// options' recipe, with their inference forms over its own and those forms
/// checked against the target.
llvm::Expected<ModelSpec> loadSpec(llvm::StringRef path, const CompileOptions &options);
llvm::Expected<ModelSpec> parseSpecText(llvm::StringRef text, llvm::StringRef sourceName,
                                        const CompileOptions &options);

/// A context with every dialect the pipeline makes.
void prepareContext(mlir::MLIRContext &ctx);
/// The model-level fbt IR of every step, verified.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
buildModule(mlir::MLIRContext &ctx, const ModelSpec &spec, const CompileOptions &options);

/// The training pipeline's and the kernel pipeline's options for `spec`
/// (fbt-opt's --fbt-train-pipeline and --fbt-kernel-pipeline take the same).
void trainPipelineOptions(const ModelSpec &spec, const CompileOptions &options,
                          mlir::fbt::TrainPipelineOptions &out);
void kernelPipelineOptions(const ModelSpec &spec, const CompileOptions &options,
                           const std::vector<std::string> &tunedConfigs,
                           mlir::fbt::KernelPipelineOptions &out);
void populateTrainPipeline(mlir::OpPassManager &pm, const ModelSpec &spec,
                           const CompileOptions &options);
void populateKernelPipeline(mlir::OpPassManager &pm, const ModelSpec &spec,
                            const CompileOptions &options,
                            const std::vector<std::string> &tunedConfigs = {});

/// What --tuned gives: fbt-to-kernels' configs and the bundle's record.
struct Tuned {
  std::vector<std::string> configs;
  TunedBuild build;
};
/// The newest entry of the options' tune cache for this spec and target.
llvm::Expected<Tuned> readTuned(const ModelSpec &spec, const CompileOptions &options);

/// Every step function's plan, by name, and the largest arena.
struct Plans {
  std::map<std::string, StepPlan> steps;
  int64_t largestArena = 0;
};
llvm::Expected<Plans> planSteps(mlir::ModuleOp module);

/// The target's bundle build (what BundleAssembly compiles for).
mlir::fbt::BundleBuild bundleBuild(const CompileOptions &options);
/// The resolved spec as the bundle records it.
Json resolvedModel(const ModelSpec &spec);
/// The kernels' PTX (an NVIDIA target).
llvm::Expected<std::string> emitPtx(mlir::ModuleOp module, const CompileOptions &options);
/// Compiles the kernels and writes the bundle to `path`, whole or not at all.
llvm::Error writeBundle(const ModelSpec &spec, mlir::ModuleOp module, Plans plans,
                        const CompileOptions &options, const std::optional<Tuned> &tuned,
                        const std::string &path);

/// The passes from the model-level IR to the options' stage (none before
/// train): the training pipeline, then the kernel pipeline with the tuned
/// configurations where the options name a tune cache.
void populatePipeline(mlir::OpPassManager &pm, const ModelSpec &spec,
                      const CompileOptions &options, const std::optional<Tuned> &tuned);
/// Those passes as fbt-opt's --pass-pipeline takes them (fbtc
/// --print-pipeline): fbt-opt runs on fbtc --emit=fbt what fbtc compiles.
llvm::Expected<std::string> pipelineText(const ModelSpec &spec, const CompileOptions &options);

/// The whole pipeline up to the options' stage: the IR (fbt, train,
/// kernels), the plans' JSON or the PTX as text into `text`, or the bundle
/// written to `bundlePath`.
llvm::Error compile(const ModelSpec &spec, const CompileOptions &options,
                    const std::string &bundlePath, std::string &text);

} // namespace fbt::driver

#endif // FBT_DRIVER_DRIVER_H
