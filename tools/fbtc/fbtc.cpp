//===- fbtc.cpp - the fbt compiler driver ---------------------------------===//
//
//   fbtc SPEC --emit=fbt [-o FILE]     model-level fbt IR of every step
//   fbtc SPEC --emit=train [-o FILE]   after the training-graph passes
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
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace {
enum class Stage { Fbt, Train };

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
                                          "AdamW")),
                    cl::cat(category));
cl::opt<bool> describe("describe",
                       cl::desc("Print parameter counts, FLOPs, memory and "
                                "KV-cache figures instead of compiling"),
                       cl::cat(category));
cl::opt<bool> json("json", cl::desc("With --describe: one JSON object"),
                   cl::cat(category));

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
  o.maxGradNorm = spec.training.gradClip;
  o.keepGradientStep = true;
}
} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(
      argc, argv,
      "fbtc: compiles a Full-Bandwidth Transformer model spec (JSON)\n");

  Expected<fbt::ModelSpec> spec = fbt::loadSpec(specPath);
  if (!spec)
    return fail(kBadInput, toString(spec.takeError()));

  if (describe) {
    Expected<fbt::Description> d = fbt::describe(*spec);
    if (!d)
      return fail(kBadInput, toString(d.takeError()));
    return writeOutput([&](raw_ostream &os) {
      if (json)
        fbt::printDescriptionJson(*spec, *d, os);
      else
        fbt::printDescription(*spec, *d, os);
    });
  }

  mlir::MLIRContext ctx;
  ctx.loadDialect<mlir::fbt::FbtDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect>();
  mlir::OwningOpRef<mlir::ModuleOp> module = fbt::buildModel(ctx, *spec);
  if (failed(mlir::verify(*module)))
    return fail(kInternalError, "the generated IR does not verify (a bug in "
                                "fbtc; please report it with the spec)");
  if (emit >= Stage::Train) {
    mlir::PassManager pm(&ctx);
    mlir::fbt::TrainPipelineOptions options;
    setTrainOptions(*spec, options);
    mlir::fbt::buildTrainPipeline(pm, options);
    if (failed(pm.run(*module)))
      return fail(kInternalError, "the training-graph passes failed");
  }
  return writeOutput([&](raw_ostream &os) { module->print(os); });
}
