//===- Gguf.cpp - Writing GGUF files (llama.cpp's model format) -----------===//

#include "runtime/interop/Gguf.h"

#include "runtime/base/Error.h"
#include "runtime/base/FileIO.h"
#include "runtime/base/LittleEndian.h"

#include <cstring>
#include <type_traits>

namespace fbt {

namespace {

// The file is little-endian whatever the host (LittleEndian.h).
template <typename T> void putInt(std::string &out, T value) {
  appendLittleEndian(out, value);
}

void putF32(std::string &out, float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  putInt(out, bits);
}

void putString(std::string &out, std::string_view s) {
  putInt<uint64_t>(out, s.size());
  out.append(s.data(), s.size());
}

uint64_t padTo(uint64_t n, uint64_t alignment) {
  return (n + alignment - 1) / alignment * alignment;
}

} // namespace

GgufWriter::GgufWriter(uint32_t alignment)
    : alignment_(alignment), zeros_(alignment, '\0') {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0)
    throw RuntimeError("GGUF alignment " + std::to_string(alignment) +
                       " is not a power of two");
  addU32("general.alignment", alignment);
}

void GgufWriter::beginKey(const std::string &key, GgufType type) {
  if (key.empty())
    throw RuntimeError("GGUF: empty metadata key");
  if (!keys_.insert(key).second)
    throw RuntimeError("GGUF: metadata key '" + key + "' given twice");
  putString(metadata_, key);
  putInt(metadata_, static_cast<uint32_t>(type));
  ++keyCount_;
}

void GgufWriter::addU32(const std::string &key, uint32_t value) {
  beginKey(key, GgufType::U32);
  putInt(metadata_, value);
}

void GgufWriter::addI32(const std::string &key, int32_t value) {
  beginKey(key, GgufType::I32);
  putInt(metadata_, value);
}

void GgufWriter::addU64(const std::string &key, uint64_t value) {
  beginKey(key, GgufType::U64);
  putInt(metadata_, value);
}

void GgufWriter::addF32(const std::string &key, float value) {
  beginKey(key, GgufType::F32);
  putF32(metadata_, value);
}

void GgufWriter::addBool(const std::string &key, bool value) {
  beginKey(key, GgufType::Bool);
  metadata_.push_back(value ? 1 : 0);
}

void GgufWriter::addString(const std::string &key, std::string_view value) {
  beginKey(key, GgufType::String);
  putString(metadata_, value);
}

void GgufWriter::addStringArray(const std::string &key,
                                const std::vector<std::string> &values) {
  beginKey(key, GgufType::Array);
  putInt(metadata_, static_cast<uint32_t>(GgufType::String));
  putInt<uint64_t>(metadata_, values.size());
  for (const std::string &v : values)
    putString(metadata_, v);
}

void GgufWriter::addI32Array(const std::string &key,
                             const std::vector<int32_t> &values) {
  beginKey(key, GgufType::Array);
  putInt(metadata_, static_cast<uint32_t>(GgufType::I32));
  putInt<uint64_t>(metadata_, values.size());
  for (int32_t v : values)
    putInt(metadata_, v);
}

void GgufWriter::addF32Array(const std::string &key,
                             const std::vector<float> &values) {
  beginKey(key, GgufType::Array);
  putInt(metadata_, static_cast<uint32_t>(GgufType::F32));
  putInt<uint64_t>(metadata_, values.size());
  for (float v : values)
    putF32(metadata_, v);
}

void GgufWriter::addTensor(const std::string &name,
                           const std::vector<int64_t> &shape,
                           const std::vector<float> &values, ggml::TensorType type) {
  if (name.empty() || name.size() > kMaxTensorName)
    throw RuntimeError("GGUF: tensor name '" + name + "' must have 1 to " +
                       std::to_string(kMaxTensorName) + " bytes");
  if (shape.empty() || shape.size() > 4)
    throw RuntimeError("GGUF: tensor '" + name + "' has " +
                       std::to_string(shape.size()) +
                       " dimensions; ggml holds 1 to 4");
  uint64_t elements = 1;
  for (int64_t d : shape) {
    if (d < 1)
      throw RuntimeError("GGUF: tensor '" + name + "' has a dimension < 1");
    elements *= static_cast<uint64_t>(d);
  }
  if (elements != values.size())
    throw RuntimeError("GGUF: tensor '" + name + "' has " +
                       std::to_string(values.size()) + " values, its shape " +
                       std::to_string(elements));
  if (tensorNames_.count(name))
    throw RuntimeError("GGUF: tensor '" + name + "' given twice");
  TensorEntry t;
  t.name = name;
  t.dims.assign(shape.rbegin(), shape.rend());
  t.type = type;
  try {
    t.bytes = ggml::encode(type, values, shape.back());
  } catch (const RuntimeError &e) {
    throw RuntimeError("GGUF: tensor '" + name + "' as " + ggml::typeName(type) + ": " +
                       e.what());
  }
  tensorNames_.insert(name);
  t.offset = dataBytes_;
  dataBytes_ = padTo(dataBytes_ + t.bytes.size(), alignment_);
  tensors_.push_back(std::move(t));
}

std::string GgufWriter::serializeHeader() const {
  std::string out = "GGUF";
  putInt(out, kVersion);
  putInt<uint64_t>(out, tensors_.size());
  putInt<uint64_t>(out, keyCount_);
  out += metadata_;
  for (const TensorEntry &t : tensors_) {
    putString(out, t.name);
    putInt(out, static_cast<uint32_t>(t.dims.size()));
    for (uint64_t d : t.dims)
      putInt(out, d);
    putInt(out, static_cast<uint32_t>(t.type));
    putInt(out, t.offset);
  }
  out.resize(padTo(out.size(), alignment_), '\0');
  return out;
}

std::vector<std::string_view> GgufWriter::dataPieces() const {
  std::vector<std::string_view> pieces;
  for (const TensorEntry &t : tensors_) {
    size_t bytes = t.bytes.size();
    pieces.emplace_back(t.bytes);
    size_t pad = padTo(bytes, alignment_) - bytes;
    if (pad)
      pieces.emplace_back(zeros_.data(), pad);
  }
  return pieces;
}

std::string GgufWriter::serialize() const {
  std::string out = serializeHeader();
  for (std::string_view piece : dataPieces())
    out.append(piece.data(), piece.size());
  return out;
}

void GgufWriter::writeAtomic(const std::string &path) const {
  std::string header = serializeHeader();
  std::vector<std::string_view> pieces = {header};
  std::vector<std::string_view> data = dataPieces();
  pieces.insert(pieces.end(), data.begin(), data.end());
  writeFileAtomic(path, pieces);
}

} // namespace fbt
