//===- GgufReader.h - a minimal GGUF reader for tests ------------*- C++ -*-===//
//
// Written from the format's description (Gguf.h), so tests check the bytes a
// writer produced, not the writer against itself: the header, keys in order
// with their types, tensor infos with dimensions innermost first, and the
// data where the offsets say.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_TEST_RUNTIME_INTEROP_GGUFREADER_H
#define FBT_TEST_RUNTIME_INTEROP_GGUFREADER_H

#include "runtime/interop/Gguf.h"

#include <gtest/gtest.h>

#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace fbt::test {

/// Reads little-endian values from a file image.
struct Reader {
  const std::string &bytes;
  size_t at = 0;

  template <typename T> T get() {
    if (at + sizeof(T) > bytes.size())
      throw std::runtime_error("read past the end");
    T v;
    std::memcpy(&v, bytes.data() + at, sizeof v); // little-endian host
    at += sizeof v;
    return v;
  }
  std::string string() {
    uint64_t n = get<uint64_t>();
    std::string s = bytes.substr(at, n);
    at += n;
    return s;
  }
};

struct Value {
  GgufType type;
  uint64_t u = 0;
  double f = 0;
  std::string s;
  GgufType elementType = GgufType::U8;
  std::vector<std::string> strings;
  std::vector<int64_t> ints;
  std::vector<float> floats;
};

struct TensorInfo {
  std::string name;
  std::vector<uint64_t> dims;
  uint32_t type;
  uint64_t offset;
};

struct Parsed {
  uint32_t version;
  std::vector<std::pair<std::string, Value>> keys;
  std::vector<TensorInfo> tensors;
  size_t dataStart;
};

inline Parsed parse(const std::string &bytes, size_t alignment) {
  Reader r{bytes};
  EXPECT_EQ(bytes.substr(0, 4), "GGUF");
  r.at = 4;
  Parsed p;
  p.version = r.get<uint32_t>();
  uint64_t tensors = r.get<uint64_t>(), keys = r.get<uint64_t>();
  for (uint64_t i = 0; i < keys; ++i) {
    std::string key = r.string();
    Value v;
    v.type = static_cast<GgufType>(r.get<uint32_t>());
    switch (v.type) {
    case GgufType::U32: v.u = r.get<uint32_t>(); break;
    case GgufType::I32: v.u = (uint64_t)(int64_t)r.get<int32_t>(); break;
    case GgufType::U64: v.u = r.get<uint64_t>(); break;
    case GgufType::F32: v.f = r.get<float>(); break;
    case GgufType::Bool: v.u = r.get<uint8_t>(); break;
    case GgufType::String: v.s = r.string(); break;
    case GgufType::Array: {
      v.elementType = static_cast<GgufType>(r.get<uint32_t>());
      uint64_t n = r.get<uint64_t>();
      for (uint64_t j = 0; j < n; ++j) {
        if (v.elementType == GgufType::String)
          v.strings.push_back(r.string());
        else if (v.elementType == GgufType::I32)
          v.ints.push_back(r.get<int32_t>());
        else if (v.elementType == GgufType::F32)
          v.floats.push_back(r.get<float>());
        else
          throw std::runtime_error("unexpected array type");
      }
      break;
    }
    default:
      throw std::runtime_error("unexpected type");
    }
    p.keys.emplace_back(key, v);
  }
  for (uint64_t i = 0; i < tensors; ++i) {
    TensorInfo t;
    t.name = r.string();
    uint32_t n = r.get<uint32_t>();
    for (uint32_t j = 0; j < n; ++j)
      t.dims.push_back(r.get<uint64_t>());
    t.type = r.get<uint32_t>();
    t.offset = r.get<uint64_t>();
    p.tensors.push_back(t);
  }
  p.dataStart = (r.at + alignment - 1) / alignment * alignment;
  // The padding is zeros.
  for (size_t i = r.at; i < p.dataStart; ++i)
    EXPECT_EQ(bytes[i], '\0') << "at " << i;
  return p;
}

inline std::vector<float> floatsAt(const std::string &bytes, size_t at, size_t n) {
  std::vector<float> out(n);
  std::memcpy(out.data(), bytes.data() + at, n * sizeof(float));
  return out;
}

/// The key called `name`, or null.
inline const Value *keyOf(const Parsed &p, const std::string &name) {
  for (const auto &[key, value] : p.keys)
    if (key == name)
      return &value;
  return nullptr;
}

/// The tensor called `name`'s values (F32), or empty.
inline std::vector<float> tensorOf(const std::string &bytes, const Parsed &p,
                                   const std::string &name) {
  for (const TensorInfo &t : p.tensors)
    if (t.name == name) {
      size_t n = 1;
      for (uint64_t d : t.dims)
        n *= d;
      return floatsAt(bytes, p.dataStart + t.offset, n);
    }
  return {};
}

} // namespace fbt::test

#endif // FBT_TEST_RUNTIME_INTEROP_GGUFREADER_H
