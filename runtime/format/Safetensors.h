//===- Safetensors.h - Reading and writing .safetensors files ---*- C++ -*-===//
//
// Checkpoints are safetensors (https://github.com/huggingface/safetensors),
// so standard tools can load them:
//   [8 bytes: N, little-endian u64] [N bytes: JSON header] [data]
// The header maps each tensor name to {"dtype", "shape", "data_offsets":
// [begin, end]} (offsets relative to the start of the data), plus an
// optional "__metadata__" object of string -> string.
//
// Reading validates everything before trusting it, as the reference
// implementation does: the header must be a JSON object inside the file,
// every dtype known, every tensor's byte span exactly shape * dtype size,
// and the spans must tile the data with no gap, no overlap and no trailing
// bytes. A truncated or corrupt file gives a RuntimeError naming the file and
// the tensor, never a crash or a silently wrong tensor.
//
// Writing goes through writeFileAtomic (FileIO.h): a crash mid-write leaves
// the previous file intact.
//
// Bytes are little-endian on disk and in memory: the runtime supports
// little-endian hosts only.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_FORMAT_SAFETENSORS_H
#define FBT_RUNTIME_FORMAT_SAFETENSORS_H

#include "runtime/base/DType.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fbt {

/// Element count of a shape (1 for a scalar, shape {}); throws on a negative
/// dimension or an overflow of int64.
int64_t shapeElements(const std::vector<int64_t> &shape);
/// "[2, 3]".
std::string shapeString(const std::vector<int64_t> &shape);

struct Tensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  /// numElements() * dtypeSize(dtype) bytes, little-endian, row-major.
  std::vector<uint8_t> bytes;

  Tensor() = default;
  /// Zero-filled.
  Tensor(std::string name, DType dtype, std::vector<int64_t> shape);
  /// An F32 tensor holding `values` (values.size() must match the shape).
  static Tensor fromF32(std::string name, std::vector<int64_t> shape,
                        const std::vector<float> &values);

  int64_t numElements() const { return shapeElements(shape); }

  /// Typed views of `bytes`. T must match the dtype: float for F32, int32_t
  /// for I32, int64_t for I64, uint8_t for U8, uint16_t (raw bits) for BF16
  /// and F16; anything else throws. The storage comes from operator new, so
  /// it is aligned for every T.
  template <typename T> T *data();
  template <typename T> const T *data() const;

  /// The values as floats (F32 copied, BF16 and F16 widened exactly); throws
  /// for integer dtypes.
  std::vector<float> toF32() const;
};

struct SafetensorsFile {
  /// The path (or name) it was read from, for messages.
  std::string source;
  /// In file order (ascending data offsets).
  std::vector<Tensor> tensors;
  std::map<std::string, std::string> metadata;

  /// The tensor named `name`, or nullptr.
  const Tensor *find(std::string_view name) const;
  /// The tensor named `name`; otherwise throws naming the file and the
  /// tensors it does hold.
  const Tensor &at(std::string_view name) const;
};

/// Reads and validates a whole file. Errors look like
/// "ckpt.safetensors: tensor 'w': data_offsets [0, 12] hold 12 bytes but
/// F32 [2, 3] needs 24".
SafetensorsFile readSafetensors(const std::string &path);
/// The header alone, validated the same way: names, types, shapes and
/// metadata, every tensor's bytes left empty (a checkpoint can be gigabytes).
SafetensorsFile readSafetensorsHeader(const std::string &path);

/// Which tensors' bytes to read, by name.
using TensorFilter = std::function<bool(std::string_view name)>;
/// The header, validated the same way, and the bytes of only the tensors
/// `wanted` accepts (the others' left empty): a checkpoint's weights
/// without its optimizer state, which is twice their size.
SafetensorsFile readSafetensorsSome(const std::string &path,
                                    const TensorFilter &wanted);

/// Parses an in-memory file image; `sourceName` prefixes errors.
SafetensorsFile parseSafetensors(std::string_view image,
                                 const std::string &sourceName);

/// The start of the file writeSafetensorsAtomic writes: the 8-byte length
/// and the JSON header. The header is padded with spaces so the data starts
/// 8-byte aligned; the tensors follow, wider dtypes first (in the given order
/// among equals), so each starts aligned to its element size. Names must be
/// unique, non-empty and not "__metadata__", and each tensor's byte count must
/// match its shape.
std::string
serializeSafetensorsHeader(const std::vector<Tensor> &tensors,
                           const std::map<std::string, std::string> &metadata);

/// Writes `path` atomically: "<path>.tmp.<pid>", fsync, rename over `path`,
/// fsync the directory. On failure `path` keeps its old contents. For files
/// that Hugging Face tools load, pass metadata {"format": "pt"}.
void writeSafetensorsAtomic(
    const std::string &path, const std::vector<Tensor> &tensors,
    const std::map<std::string, std::string> &metadata = {});

// f16 conversions (round to nearest even; NaN stays NaN). bf16's are in
// runtime/base/Bf16.h.
float f16ToF32(uint16_t bits);
uint16_t f32ToF16(float value);

} // namespace fbt

#endif // FBT_RUNTIME_FORMAT_SAFETENSORS_H
