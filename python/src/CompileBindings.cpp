//===- CompileBindings.cpp - fbt.compile and fbt.describe on the driver ---===//
//
// The compiler's driver (driver/Driver.h) from Python: the options are
// keyword arguments named as fbtc's flags are (with underscores), mapped
// onto one CompileOptions, so fbt.compile runs exactly fbtc's pipeline. The
// Python layer (fbt/__init__.py) turns a path, a dict or JSON text into
// the spec's text before it comes here.
//
//===----------------------------------------------------------------------===//

#include "Bindings.h"

#include "driver/Driver.h"
#include "frontend/Describe.h"
#include "runtime/base/Json.h"
#include "runtime/format/Bundle.h"

#include "llvm/Support/raw_ostream.h"

#include <pybind11/stl.h>

namespace fbt::python {

namespace {

using driver::CompileOptions;

/// The option names fbt.compile takes, for the error naming a wrong one.
constexpr const char *kOptionNames =
    "target, emit, cpu, cpu_parallel, dump_llvm_ir, gpu_storage, inference_weights, "
    "inference_activations, inference_kv_cache, tune_space, tuned, with_states, recipe, "
    "fuse_feedback_gate, fuse_products";

std::string textOption(const py::handle &v, const std::string &key) {
  if (!py::isinstance<py::str>(v))
    throw py::type_error("compile option " + key + ": expected a string, got " +
                         std::string(py::str(py::type::of(v).attr("__name__"))));
  return v.cast<std::string>();
}

/// One of `choices`, by name; ValueError listing them otherwise.
template <typename T>
T choiceOption(const py::handle &v, const std::string &key,
               llvm::ArrayRef<driver::Choice<T>> choices) {
  std::string name = textOption(v, key);
  std::optional<T> value = driver::parseChoice(choices, name);
  if (!value)
    throw py::value_error(key + ": expected " + driver::choiceNames(choices) + ", got '" + name +
                          "'");
  return *value;
}

bool flagOption(const py::handle &v, const std::string &key) {
  if (!py::isinstance<py::bool_>(v))
    throw py::type_error("compile option " + key + ": expected True or False");
  return v.cast<bool>();
}

/// The keyword arguments as the driver's options; ValueError or TypeError
/// naming the option that is wrong.
CompileOptions compileOptions(const py::dict &kwargs) {
  CompileOptions o;
  for (auto [k, v] : kwargs) {
    std::string key = k.cast<std::string>();
    if (v.is_none())
      continue;
    if (key == "target") {
      o.target = choiceOption(v, key, driver::targetChoices());
    } else if (key == "emit") {
      o.stage = choiceOption(v, key, driver::stageChoices());
    } else if (key == "tune_space") {
      o.tuneSpace = choiceOption(v, key, driver::tuneSpaceChoices());
    } else if (key == "recipe") {
      std::string name = textOption(v, key);
      o.recipe = parseRecipe(name);
      if (!o.recipe)
        throw py::value_error("recipe: expected fbt or paper, got '" + name + "'");
    } else if (key == "cpu") {
      o.cpu = textOption(v, key);
    } else if (key == "dump_llvm_ir") {
      o.dumpLLVMIR = textOption(v, key);
    } else if (key == "gpu_storage") {
      o.gpuStorage = textOption(v, key);
    } else if (key == "inference_weights") {
      o.inferenceWeights = textOption(v, key);
    } else if (key == "inference_activations") {
      o.inferenceActivations = textOption(v, key);
    } else if (key == "inference_kv_cache") {
      o.inferenceKvCache = textOption(v, key);
    } else if (key == "tuned") {
      o.tunedCache = textOption(v, key);
    } else if (key == "cpu_parallel") {
      o.cpuParallel = flagOption(v, key);
    } else if (key == "with_states") {
      o.withStates = flagOption(v, key);
    } else if (key == "fuse_feedback_gate") {
      o.fuseFeedbackGate = flagOption(v, key);
    } else if (key == "fuse_products") {
      o.fuseProducts = flagOption(v, key);
    } else {
      throw py::type_error("compile() got an unknown option '" + key + "' (options: " +
                           kOptionNames + ")");
    }
  }
  return o;
}

/// The driver's error as fbt.CompileError (bad input) or fbt.Error.
[[noreturn]] void raise(llvm::Error e) {
  bool bad = true;
  std::string message;
  llvm::handleAllErrors(std::move(e),
                        [&](const driver::DriverError &d) {
                          bad = d.badInput();
                          llvm::raw_string_ostream os(message);
                          d.log(os);
                        },
                        [&](const llvm::ErrorInfoBase &other) { message = other.message(); });
  throw CompileFailure(bad, message);
}

template <typename T> T take(llvm::Expected<T> value) {
  if (!value)
    raise(value.takeError());
  return std::move(*value);
}

ModelSpec specOf(const std::string &text, const std::string &source,
                 const CompileOptions &options) {
  if (llvm::Error e = driver::checkOptions(options))
    raise(std::move(e));
  return take(driver::parseSpecText(text, source, options));
}

/// fbtc's whole pipeline: the bundle written to `output`, or the text of an
/// earlier stage returned.
std::string compile(const std::string &text, const std::string &source,
                    const std::string &output, const py::dict &kwargs) {
  CompileOptions options = compileOptions(kwargs);
  py::gil_scoped_release unlocked;
  ModelSpec spec = specOf(text, source, options);
  std::string out;
  if (llvm::Error e = driver::compile(spec, options, output, out))
    raise(std::move(e));
  return out;
}

/// fbtc --describe --json: the figures a user plans with.
std::string describeSpec(const std::string &text, const std::string &source,
                         const std::vector<int64_t> &ranks, const py::dict &kwargs) {
  CompileOptions options = compileOptions(kwargs);
  ModelSpec spec = specOf(text, source, options);
  Description d = take(tryDescribe(spec));
  for (int64_t n : ranks)
    if (n < 1)
      throw py::value_error("ranks: each world size must be at least 1, got " +
                            std::to_string(n));
  if (!ranks.empty())
    d.dataParallel = describeRanks(d, ranks);
  std::string json;
  llvm::raw_string_ostream os(json);
  printDescriptionJson(spec, d, os);
  return json;
}

/// A bundle's resolved spec and manifest, as JSON text.
std::pair<std::string, std::string> bundleJson(const std::string &path) {
  Bundle b = Bundle::load(path);
  return {dumpJson(b.model()), dumpJson(b.manifest())};
}

} // namespace

void defineCompile(py::module_ &m) {
  m.def("_compile", &compile, py::arg("spec_text"), py::arg("source"), py::arg("output"),
        py::arg("options"));
  m.def("_describe", &describeSpec, py::arg("spec_text"), py::arg("source"),
        py::arg("ranks"), py::arg("options"));
  m.def("_bundle_json", &bundleJson, py::arg("path"));
}

} // namespace fbt::python
