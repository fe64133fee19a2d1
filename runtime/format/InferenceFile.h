//===- InferenceFile.h - a checkpoint in its inference form, stored -*- C++ -*-===//
//
// `fbt quantize BUNDLE --ckpt C -o OUT.safetensors` stores a checkpoint's weights as
// a bundle compiled with bf16 or int8 inference weights reads them: one
// safetensors file holding each narrow weight matrix under its step input
// names (WeightNames.h: I8 values with F16 scales, or BF16) and every other
// parameter F32, written atomically. Its metadata names the form
// ("fbt.inference_weights") and a fingerprint of every tensor's name, dtype,
// shape and bytes ("fbt.weights_hash", FNV-1a): a file whose bytes changed
// after it was written is refused before anything is loaded from it, as is
// an int8 scale that is NaN, infinite or negative, or a tensor whose size
// does not match its matrix.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_FORMAT_INFERENCEFILE_H
#define FBT_RUNTIME_FORMAT_INFERENCEFILE_H

#include "runtime/format/Kinds.h"
#include "runtime/format/QuantizedWeights.h"
#include "runtime/format/Safetensors.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fbt::inference_file {

constexpr char kFormKey[] = "fbt.inference_weights";
constexpr char kHashKey[] = "fbt.weights_hash";

/// The fingerprint of `tensors`, whatever their order: FNV-1a over each
/// one's name, dtype, shape and bytes, in name order.
std::string fingerprint(const std::vector<Tensor> &tensors);

/// `matrix` as the tensors its step inputs name (param's in q's form).
std::vector<Tensor> tensorsOf(const std::string &param, const QuantizedMatrix &q);

/// Writes `tensors` to `path` atomically, with `metadata` and the form and
/// fingerprint keys.
void write(const std::string &path, WeightForm form, const std::vector<Tensor> &tensors,
           std::map<std::string, std::string> metadata);

/// The form a file read as safetensors stores, or nullopt for a plain
/// checkpoint. Throws for a form that is not bf16 or int8.
std::optional<WeightForm> formOf(const SafetensorsFile &file);

/// Checks `file`'s fingerprint against its tensors; throws naming the file
/// when they differ or it has none.
void checkFingerprint(const SafetensorsFile &file);

/// Parameter `param`'s matrix ([rows, cols]) in `form`, read from `file`
/// and checked: its tensors present, of the form's dtypes and shapes, its
/// scales finite and not negative.
QuantizedMatrix readMatrix(const SafetensorsFile &file, WeightForm form,
                           const std::string &param, int64_t rows, int64_t cols);

} // namespace fbt::inference_file

#endif // FBT_RUNTIME_FORMAT_INFERENCEFILE_H
