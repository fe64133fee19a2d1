//===- Bindings.h - the parts of the fbt Python module ------------*- C++ -*-===//
//
// fbt._fbt, the extension the `fbt` package wraps: each part defines its
// functions and classes on the module (Module.cpp calls them in order).
// Errors cross as Python exceptions carrying the runtime's message:
// fbt.Error for the runtime's RuntimeError, fbt.CompileError for the
// driver's errors; bad arguments are TypeError or ValueError.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_PYTHON_BINDINGS_H
#define FBT_PYTHON_BINDINGS_H

#include "runtime/base/Json.h"

#include <pybind11/pybind11.h>

#include <stdexcept>
#include <string>

namespace fbt::python {

namespace py = pybind11;

/// A compilation's failure (driver::DriverError), raised as fbt.CompileError.
class CompileFailure : public std::runtime_error {
public:
  CompileFailure(bool badInput, const std::string &message)
      : std::runtime_error(message), badInput(badInput) {}
  bool badInput;
};

/// `value` as Python objects (dicts, lists, numbers, strings).
py::object toPython(const Json &value);

void defineCompile(py::module_ &m);
void defineSession(py::module_ &m);
void defineTrainer(py::module_ &m);

} // namespace fbt::python

#endif // FBT_PYTHON_BINDINGS_H
