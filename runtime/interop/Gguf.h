//===- Gguf.h - Writing GGUF files (llama.cpp's model format) ---*- C++ -*-===//
//
// `fbt export --gguf` writes the standard (K=1) model as GGUF, the format
// llama.cpp and the tools around it load. A GGUF file, version 3, is
// (little-endian throughout):
//
//   "GGUF" u32 version=3  u64 tensor_count  u64 kv_count
//   kv_count x   [string key] [u32 value type] [value]
//   tensor_count x [string name] [u32 n_dims] [u64 dims[n_dims]]
//                  [u32 ggml type] [u64 offset into the data section]
//   zero padding to the alignment
//   data section: each tensor's bytes, each padded with zeros to the
//                 alignment
//
// A string is a u64 byte count and the bytes (UTF-8, no terminator); an
// array value is [u32 element type] [u64 count] and the elements. The
// alignment is the u32 "general.alignment" (32 when absent); llama.cpp's
// reader wants each tensor's offset to be exactly the padded end of the one
// before it, so the tensors are laid out in the order they were added.
//
// Dimensions are written innermost first (ggml's ne[0] is the contiguous
// one): a row-major [rows, cols] matrix, as safetensors and PyTorch state it,
// is dims {cols, rows}. addTensor takes the row-major shape and reverses it.
//
// This writer holds what fbt exports needs: scalar keys of the common types,
// arrays of strings, i32 and f32, and tensors of F32, F16, BF16 and Q8_0
// (GgmlTypes.h). It refuses what a reader
// would refuse (a key or tensor name given twice, a tensor name over 63
// bytes, more than 4 dimensions) when the value is added, so a mistake is
// an error naming it rather than a file llama.cpp rejects with a log line.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_INTEROP_GGUF_H
#define FBT_RUNTIME_INTEROP_GGUF_H

#include "runtime/format/GgmlTypes.h"

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace fbt {

/// GGUF's value types (the u32 written before each value).
enum class GgufType : uint32_t {
  U8 = 0,
  I8 = 1,
  U16 = 2,
  I16 = 3,
  U32 = 4,
  I32 = 5,
  F32 = 6,
  Bool = 7,
  String = 8,
  Array = 9,
  U64 = 10,
  I64 = 11,
  F64 = 12,
};

class GgufWriter {
public:
  static constexpr uint32_t kVersion = 3;
  /// ggml's longest tensor name, less its terminator (GGML_MAX_NAME - 1).
  static constexpr size_t kMaxTensorName = 63;

  /// `alignment` (a power of two) is stored as "general.alignment", the
  /// first key.
  explicit GgufWriter(uint32_t alignment = 32);

  // Metadata, in the order added. A key given twice throws.
  void addU32(const std::string &key, uint32_t value);
  void addI32(const std::string &key, int32_t value);
  void addU64(const std::string &key, uint64_t value);
  void addF32(const std::string &key, float value);
  void addBool(const std::string &key, bool value);
  void addString(const std::string &key, std::string_view value);
  void addStringArray(const std::string &key,
                      const std::vector<std::string> &values);
  void addI32Array(const std::string &key, const std::vector<int32_t> &values);
  void addF32Array(const std::string &key, const std::vector<float> &values);

  /// A tensor of row-major `shape` (outermost first, as safetensors states
  /// it; 1 to 4 dimensions, each >= 1) holding `values`, stored as `type`
  /// (Q8_0: the innermost dimension a multiple of 32, else a RuntimeError
  /// naming the tensor).
  void addTensor(const std::string &name, const std::vector<int64_t> &shape,
                 const std::vector<float> &values,
                 ggml::TensorType type = ggml::TensorType::F32);

  size_t tensorCount() const { return tensors_.size(); }
  size_t keyCount() const { return keyCount_; }
  uint32_t alignment() const { return alignment_; }

  /// Everything before the data section: header, metadata, tensor infos and
  /// the padding up to the alignment.
  std::string serializeHeader() const;
  /// The whole file, in memory (tests; small models).
  std::string serialize() const;
  /// Writes `path` atomically (writeFileAtomic: a temporary file, fsync,
  /// rename), the tensors straight from their buffers.
  void writeAtomic(const std::string &path) const;

private:
  struct TensorEntry {
    std::string name;
    std::vector<uint64_t> dims; ///< innermost first
    ggml::TensorType type;
    std::string bytes;
    uint64_t offset = 0; ///< into the data section
  };

  /// Starts a key: checks it is new, writes the key and `type`.
  void beginKey(const std::string &key, GgufType type);
  /// The data section's pieces (tensor bytes and their padding), in order.
  std::vector<std::string_view> dataPieces() const;

  uint32_t alignment_;
  std::string metadata_; ///< the serialized key-value pairs
  size_t keyCount_ = 0;
  std::set<std::string> keys_;
  std::vector<TensorEntry> tensors_;
  std::set<std::string> tensorNames_;
  uint64_t dataBytes_ = 0; ///< the data section so far, padded
  std::string zeros_;      ///< alignment_ zero bytes, the padding's source
};

} // namespace fbt

#endif // FBT_RUNTIME_INTEROP_GGUF_H
