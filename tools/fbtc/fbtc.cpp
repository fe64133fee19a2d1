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
//   fbtc SPEC --emit=kernels --print-pipeline   the passes, for fbt-opt
//
// Exit status: 0 on success, 2 on bad input (spec, options), 1 on an internal
// error. Output files are written whole or not at all (temp file + rename).
// The pipeline is driver/Driver.h's: this file only maps its flags onto a
// driver::CompileOptions.
//
//===----------------------------------------------------------------------===//

#include "driver/Driver.h"
#include "frontend/Describe.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/WithColor.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace {
using fbt::driver::Stage;
using fbt::driver::Target;

cl::OptionCategory category("fbtc options");
cl::opt<std::string> specPath(cl::Positional, cl::desc("<model spec .json>"),
                              cl::Required, cl::cat(category));
cl::opt<std::string> outputPath("o", cl::desc("Output file ('-' for stdout)"),
                                cl::value_desc("file"), cl::init("-"),
                                cl::cat(category));
// The named values of --emit, --target and --tune-space are the driver's
// (addChoices, before the flags are parsed).
cl::opt<Stage> emit("emit", cl::desc("What to produce"), cl::init(Stage::Fbt),
                    cl::cat(category));
cl::opt<Target> target("target", cl::desc("Compile for"), cl::init(Target::None),
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
cl::opt<bool> printPipeline(
    "print-pipeline",
    cl::desc("Print the passes --emit runs after the fbt IR, as fbt-opt's --pass-pipeline "
             "takes them (fbtc --emit=fbt | fbt-opt --pass-pipeline=... compiles the same)"),
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

/// A driver failure's message and exit status.
int failed(Error e) {
  int status = kInternalError;
  std::string message;
  handleAllErrors(std::move(e), [&](const fbt::driver::DriverError &d) {
    status = d.badInput() ? kBadInput : kInternalError;
    raw_string_ostream os(message);
    d.log(os);
  });
  return fail(status, message);
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

/// `flag`'s values, as the driver names them.
template <typename T>
void addChoices(cl::opt<T> &flag, ArrayRef<fbt::driver::Choice<T>> choices) {
  for (const fbt::driver::Choice<T> &c : choices)
    flag.getParser().addLiteralOption(c.name, c.value, c.help);
}

/// The flags, as the driver's options.
Expected<fbt::driver::CompileOptions> compileOptions() {
  fbt::driver::CompileOptions o;
  if (emit.getNumOccurrences())
    o.stage = emit;
  o.target = target;
  o.cpu = cpuName;
  o.cpuParallel = cpuParallel;
  o.dumpLLVMIR = dumpLLVMIR;
  o.gpuStorage = gpuStorage;
  o.inferenceWeights = inferenceWeights;
  o.inferenceActivations = inferenceActivations;
  o.inferenceKvCache = inferenceKvCache;
  o.tuneSpace = tuneSpace;
  o.tunedCache = tunedCache;
  o.withStates = withStates;
  o.fuseFeedbackGate = fuseGate;
  o.fuseProducts = fuseProducts;
  if (recipeName.getNumOccurrences()) {
    o.recipe = fbt::parseRecipe(recipeName);
    if (!o.recipe)
      return fbt::driver::badInput("--recipe: expected fbt or paper, got '" + recipeName + "'");
  }
  return o;
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
} // namespace

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  addChoices(emit, fbt::driver::stageChoices());
  addChoices(target, fbt::driver::targetChoices());
  addChoices(tuneSpace, fbt::driver::tuneSpaceChoices());
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv,
                              "fbtc: compiles a Full-Bandwidth Transformer model spec (JSON)\n");
  Expected<fbt::driver::CompileOptions> options = compileOptions();
  if (!options)
    return failed(options.takeError());
  Expected<fbt::ModelSpec> spec = fbt::driver::loadSpec(specPath, *options);
  if (!spec)
    return failed(spec.takeError());
  if (describe)
    return runDescribe(*spec);
  if (printPipeline) {
    Expected<std::string> text = fbt::driver::pipelineText(*spec, *options);
    if (!text)
      return failed(text.takeError());
    return writeOutput([&](raw_ostream &os) { os << *text << "\n"; });
  }
  std::string text;
  std::string bundle = outputPath == "-" ? spec->name + ".fbtb" : std::string(outputPath);
  if (Error e = fbt::driver::compile(*spec, *options, bundle, text))
    return failed(std::move(e));
  if (fbt::driver::stageOf(*options) == Stage::Bundle)
    return 0;
  return writeOutput([&](raw_ostream &os) { os << text; });
}
