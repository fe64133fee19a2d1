//===- Arrays.h - NumPy arrays in and out of the runtime ---------*- C++ -*-===//
//
// Token ids come in as any integer array (a list too) and reach the runtime
// as int32: the caller's own buffer when it is int32 and C-contiguous, else
// a copy made after every value was checked to fit (a wider id never wraps
// into a valid one). Results go out as arrays that own the runtime's
// vectors, moved, not copied.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_PYTHON_ARRAYS_H
#define FBT_PYTHON_ARRAYS_H

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>
#include <vector>

namespace fbt::python {

namespace py = pybind11;

/// Int32 token ids of `ndim` dimensions (1 or 2) from `obj`, C-contiguous.
/// TypeError for a non-integer array, ValueError for another number of
/// dimensions or a value outside int32; `what` names the argument.
py::array_t<int32_t, py::array::c_style> tokenArray(const py::handle &obj, int ndim,
                                                    const char *what);

/// The array's rows as vectors (a 1-D array is one row).
std::vector<std::vector<int32_t>> tokenRows(const py::array_t<int32_t, py::array::c_style> &a);

/// ValueError unless the 2-D `a` is [rows, cols]; `what` names it.
void expectShape(const py::array_t<int32_t, py::array::c_style> &a, int64_t rows,
                 int64_t cols, const char *what);

/// An array of `shape` that owns `values` (moved).
template <typename T>
py::array_t<T> ownedArray(std::vector<T> &&values, std::vector<py::ssize_t> shape) {
  auto *owned = new std::vector<T>(std::move(values));
  py::capsule release(owned, [](void *p) { delete static_cast<std::vector<T> *>(p); });
  return py::array_t<T>(shape, owned->data(), release);
}

/// "[2, 65]", for messages.
std::string shapeText(const py::array &a);

} // namespace fbt::python

#endif // FBT_PYTHON_ARRAYS_H
