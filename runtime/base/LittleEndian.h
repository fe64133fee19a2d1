//===- LittleEndian.h - integers as files hold them ---------------*- C++ -*-===//
//
// The bundle container, safetensors and GGUF all store integers
// little-endian. Written and read byte by byte, least significant first, so
// the files are the same whatever the host; one definition for the three.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_BASE_LITTLEENDIAN_H
#define FBT_RUNTIME_BASE_LITTLEENDIAN_H

#include <cstddef>
#include <string>
#include <type_traits>

namespace fbt {

/// Appends `value`'s sizeof(T) bytes to `out`, least significant first.
template <typename T> void appendLittleEndian(std::string &out, T value) {
  static_assert(std::is_integral_v<T>, "an integer");
  auto u = static_cast<std::make_unsigned_t<T>>(value);
  for (size_t i = 0; i < sizeof(T); ++i)
    out.push_back(static_cast<char>((u >> (8 * i)) & 0xff));
}

/// The T whose sizeof(T) bytes start at `bytes`, least significant first.
template <typename T> T readLittleEndian(const void *bytes) {
  static_assert(std::is_integral_v<T>, "an integer");
  const auto *b = static_cast<const unsigned char *>(bytes);
  std::make_unsigned_t<T> u = 0;
  for (size_t i = sizeof(T); i-- > 0;)
    u = static_cast<std::make_unsigned_t<T>>((u << 8) | b[i]);
  return static_cast<T>(u);
}

} // namespace fbt

#endif // FBT_RUNTIME_BASE_LITTLEENDIAN_H
