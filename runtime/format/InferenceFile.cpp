//===- InferenceFile.cpp - a checkpoint in its inference form, stored -----===//

#include "runtime/format/InferenceFile.h"

#include "runtime/base/Error.h"
#include "runtime/base/Hash.h"
#include "runtime/format/WeightNames.h"

#include <algorithm>
#include <cstring>

namespace fbt::inference_file {

std::string fingerprint(const std::vector<Tensor> &tensors) {
  std::vector<const Tensor *> sorted;
  for (const Tensor &t : tensors)
    sorted.push_back(&t);
  std::sort(sorted.begin(), sorted.end(),
            [](const Tensor *a, const Tensor *b) { return a->name < b->name; });
  uint64_t h = kFnvBasis;
  for (const Tensor *t : sorted) {
    h = fnvMix(h, t->name);
    h = fnvMix(h, dtypeName(t->dtype));
    h = fnvMix(h, shapeString(t->shape));
    h = fnv1a64(t->bytes.data(), t->bytes.size(), h);
  }
  return hexDigits(h);
}

std::vector<Tensor> tensorsOf(const std::string &param, const QuantizedMatrix &q) {
  std::vector<std::string> names = weights::inputsOf(q.form, param);
  if (names.empty())
    throw RuntimeError("'" + param + "' in form f32 is the parameter itself");
  std::vector<Tensor> out;
  auto add = [&](const std::string &name, DType dtype, std::vector<int64_t> shape,
                 bool scales) {
    Tensor t(name, dtype, std::move(shape));
    std::memcpy(t.bytes.data(), q.data(scales), q.bytes(scales));
    out.push_back(std::move(t));
  };
  if (q.form == WeightForm::Int8) {
    add(names[0], DType::I8, {q.rows, q.cols}, false);
    add(names[1], DType::F16, {q.rows, weights::groupsOf(q.cols)}, true);
  } else {
    add(names[0], DType::BF16, {q.rows, q.cols}, false);
  }
  return out;
}

void write(const std::string &path, WeightForm form, const std::vector<Tensor> &tensors,
           std::map<std::string, std::string> metadata) {
  metadata[kFormKey] = kindName(form);
  metadata[kHashKey] = fingerprint(tensors);
  writeSafetensorsAtomic(path, tensors, metadata);
}

std::optional<WeightForm> formOf(const SafetensorsFile &file) {
  auto it = file.metadata.find(kFormKey);
  if (it == file.metadata.end())
    return std::nullopt;
  std::optional<WeightForm> form = parseKind<WeightForm>(it->second);
  if (!form || *form == WeightForm::F32)
    throw RuntimeError(file.source + ": metadata " + kFormKey + " is '" + it->second +
                       "' (expected bf16 or int8)");
  return form;
}

void checkFingerprint(const SafetensorsFile &file) {
  auto it = file.metadata.find(kHashKey);
  if (it == file.metadata.end())
    throw RuntimeError(file.source + ": inference weights without metadata " + kHashKey +
                       "; write the file again with fbt quantize");
  std::string actual = fingerprint(file.tensors);
  if (actual != it->second)
    throw RuntimeError(file.source + ": the tensors' bytes do not match the file's " +
                       kHashKey + " (" + it->second + ", the bytes give " + actual +
                       "): the file changed after it was written");
}

QuantizedMatrix readMatrix(const SafetensorsFile &file, WeightForm form,
                           const std::string &param, int64_t rows, int64_t cols) {
  std::vector<std::string> names = weights::inputsOf(form, param);
  if (names.empty())
    throw RuntimeError("'" + param + "' in form f32 is the parameter itself");
  auto tensor = [&](size_t i, DType dtype, std::vector<int64_t> shape) -> const Tensor & {
    const Tensor &t = file.at(names[i]);
    if (t.dtype != dtype || t.shape != shape)
      throw RuntimeError(file.source + ": tensor '" + t.name + "' is " + dtypeName(t.dtype) +
                         " " + shapeString(t.shape) + ", the bundle's '" + param +
                         "' takes " + dtypeName(dtype) + " " + shapeString(shape));
    return t;
  };
  QuantizedMatrix q;
  q.form = form;
  q.rows = rows;
  q.cols = cols;
  const Tensor &values =
      tensor(0, form == WeightForm::Int8 ? DType::I8 : DType::BF16, {rows, cols});
  if (form == WeightForm::BF16) {
    q.halves.resize(size_t(rows * cols));
    std::memcpy(q.halves.data(), values.bytes.data(), values.bytes.size());
    return q;
  }
  const Tensor &scales = tensor(1, DType::F16, {rows, weights::groupsOf(cols)});
  q.values.resize(values.bytes.size());
  std::memcpy(q.values.data(), values.bytes.data(), values.bytes.size());
  q.halves.resize(size_t(scales.numElements()));
  std::memcpy(q.halves.data(), scales.bytes.data(), scales.bytes.size());
  checkScales(q, file.source + ": '" + scales.name + "'");
  return q;
}

} // namespace fbt::inference_file
