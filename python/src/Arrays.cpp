//===- Arrays.cpp - NumPy arrays in and out of the runtime ----------------===//

#include "Arrays.h"

#include <limits>

namespace fbt::python {

using Int32Array = py::array_t<int32_t, py::array::c_style>;

std::string shapeText(const py::array &a) {
  std::string s = "[";
  for (py::ssize_t i = 0; i < a.ndim(); ++i)
    s += (i ? ", " : "") + std::to_string(a.shape(i));
  return s + "]";
}

Int32Array tokenArray(const py::handle &obj, int ndim, const char *what) {
  py::array any = py::array::ensure(obj);
  if (!any)
    throw py::type_error(std::string(what) + ": expected an integer array of token ids");
  char kind = any.dtype().kind();
  if (kind != 'i' && kind != 'u')
    throw py::type_error(std::string(what) + ": expected integer token ids, got dtype " +
                         std::string(py::str(any.dtype())));
  if (any.ndim() != ndim)
    throw py::value_error(std::string(what) + ": expected " + std::to_string(ndim) +
                          " dimension" + (ndim == 1 ? "" : "s") + ", got shape " +
                          shapeText(any));
  if (py::isinstance<Int32Array>(any) && (any.flags() & py::array::c_style))
    return py::reinterpret_borrow<Int32Array>(any); // the caller's buffer itself
  // Wider or unsigned ids: checked to fit before they are narrowed.
  auto wide = py::array_t<int64_t, py::array::c_style | py::array::forcecast>::ensure(any);
  if (kind == 'u' && any.dtype().itemsize() == 8) {
    auto u = py::array_t<uint64_t, py::array::c_style>::ensure(any);
    for (py::ssize_t i = 0; i < u.size(); ++i)
      if (u.data()[i] > (uint64_t)std::numeric_limits<int32_t>::max())
        throw py::value_error(std::string(what) + ": token id " + std::to_string(u.data()[i]) +
                              " at flat index " + std::to_string(i) + " is out of range");
  }
  std::vector<py::ssize_t> shape(any.shape(), any.shape() + any.ndim());
  Int32Array out(shape);
  int32_t *to = out.mutable_data();
  for (py::ssize_t i = 0; i < wide.size(); ++i) {
    int64_t v = wide.data()[i];
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
      throw py::value_error(std::string(what) + ": token id " + std::to_string(v) +
                            " at flat index " + std::to_string(i) + " is out of range");
    to[i] = int32_t(v);
  }
  return out;
}

std::vector<std::vector<int32_t>> tokenRows(const Int32Array &a) {
  std::vector<std::vector<int32_t>> rows;
  int64_t n = a.ndim() == 1 ? 1 : a.shape(0);
  int64_t len = a.ndim() == 1 ? a.shape(0) : a.shape(1);
  for (int64_t r = 0; r < n; ++r)
    rows.emplace_back(a.data() + r * len, a.data() + (r + 1) * len);
  return rows;
}

void expectShape(const Int32Array &a, int64_t rows, int64_t cols, const char *what) {
  if (a.shape(0) != rows || a.shape(1) != cols)
    throw py::value_error(std::string(what) + ": expected shape [" + std::to_string(rows) +
                          ", " + std::to_string(cols) + "] (the compiled batch), got " +
                          shapeText(a));
}

} // namespace fbt::python
