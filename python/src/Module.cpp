//===- Module.cpp - fbt._fbt: the extension module -------------------------===//

#include "Bindings.h"

#include "runtime/base/Error.h"
#include "runtime/text/DefaultCorpus.h"

#include <pybind11/numpy.h>

namespace fbt::python {

py::object toPython(const Json &value) {
  // Through the json module: the runtime's JSON is the one definition of
  // each record (its keys, its numbers), so nothing is re-spelled here.
  return py::module_::import("json").attr("loads")(dumpJson(value));
}

namespace {

/// The embedded corpus's parts (train, validation, test) as int32 arrays.
py::dict defaultCorpus() {
  DataSplits splits = defaultCorpusSplits();
  py::dict parts;
  auto add = [&](const char *name, const TokenStream &s) {
    py::array_t<int32_t> a(s.size());
    if (s.size())
      s.copy(0, s.size(), a.mutable_data());
    parts[name] = a;
  };
  add("train", splits.train);
  add("validation", splits.validation);
  add("test", splits.test);
  return parts;
}

} // namespace

} // namespace fbt::python

PYBIND11_MODULE(_fbt, m) {
  namespace py = pybind11;
  using namespace fbt::python;
  m.doc() = "fbt's compiler and runtime (the `fbt` package wraps this module)";

  // Made once and never destroyed: a static's destructor would release its
  // Python object after the interpreter has finalized.
  static auto *error = new py::exception<fbt::RuntimeError>(m, "Error", PyExc_RuntimeError);
  static auto *compileError = new py::exception<CompileFailure>(m, "CompileError", error->ptr());
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p)
        std::rethrow_exception(p);
    } catch (const CompileFailure &e) {
      (*compileError)(e.what());
    } catch (const fbt::RuntimeError &e) {
      (*error)(e.what());
    }
  });

  m.def("_default_corpus", &defaultCorpus,
        "The embedded corpus's train, validation and test parts as int32 token arrays");
  defineCompile(m);
  defineSession(m);
  defineTrainer(m);
}
