//===- GgmlTypes.cpp - ggml's tensor types: F32, F16, BF16, Q8_0 ----------===//

#include "runtime/format/GgmlTypes.h"

#include "runtime/base/Error.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace fbt::ggml {

const char *typeName(TensorType t) {
  switch (t) {
  case TensorType::F32:
    return "f32";
  case TensorType::F16:
    return "f16";
  case TensorType::BF16:
    return "bf16";
  case TensorType::Q8_0:
    return "q8_0";
  }
  return "?";
}

TensorType parseType(const std::string &name) {
  for (TensorType t : {TensorType::F32, TensorType::F16, TensorType::BF16, TensorType::Q8_0})
    if (name == typeName(t))
      return t;
  throw RuntimeError("unknown GGUF tensor type '" + name + "' (f32, f16, bf16 or q8_0)");
}

// The compiler's half type converts with IEEE rounding (to nearest even,
// overflow to infinity, subnormals kept).
uint16_t halfFromFloat(float x) {
  _Float16 h = (_Float16)x;
  uint16_t bits;
  std::memcpy(&bits, &h, 2);
  return bits;
}

float floatFromHalf(uint16_t bits) {
  _Float16 h;
  std::memcpy(&h, &bits, 2);
  return (float)h;
}

uint16_t bf16FromFloat(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if (std::isnan(x))
    return (uint16_t)((bits >> 16) | 0x0040); // quiet, sign kept
  bits += 0x7fff + ((bits >> 16) & 1);        // to nearest even
  return (uint16_t)(bits >> 16);
}

float floatFromBf16(uint16_t b) {
  uint32_t bits = (uint32_t)b << 16;
  float x;
  std::memcpy(&x, &bits, 4);
  return x;
}

namespace {
void put16(std::string &out, uint16_t v) {
  out.push_back((char)(v & 0xff));
  out.push_back((char)(v >> 8));
}
uint16_t get16(std::string_view in, size_t at) {
  return (uint16_t)((uint8_t)in[at] | ((uint8_t)in[at + 1] << 8));
}

/// One Q8_0 block of 32 values.
void quantizeBlock(const float *x, std::string &out) {
  int8_t q[kQ8Block];
  put16(out, quantizeQ8Block(x, kQ8Block, q));
  out.append(reinterpret_cast<const char *>(q), kQ8Block);
}
} // namespace

uint16_t quantizeQ8Block(const float *x, int64_t n, int8_t *q) {
  float amax = 0;
  for (int64_t i = 0; i < n; ++i)
    amax = std::max(amax, std::fabs(x[i]));
  const float d = amax / 127.0f;
  const float id = d != 0 ? 1.0f / d : 0.0f;
  for (int64_t i = 0; i < n; ++i)
    q[i] = (int8_t)std::lround(x[i] * id);
  return halfFromFloat(d);
}

std::string encode(TensorType t, const std::vector<float> &values, int64_t cols) {
  std::string out;
  switch (t) {
  case TensorType::F32:
    out.resize(values.size() * 4);
    std::memcpy(out.data(), values.data(), out.size()); // little-endian hosts only
    return out;
  case TensorType::F16:
  case TensorType::BF16:
    out.reserve(values.size() * 2);
    for (float v : values)
      put16(out, t == TensorType::F16 ? halfFromFloat(v) : bf16FromFloat(v));
    return out;
  case TensorType::Q8_0:
    if (cols % kQ8Block != 0)
      throw RuntimeError("Q8_0 quantizes rows in blocks of 32; these rows have " +
                         std::to_string(cols) + " values");
    out.reserve(values.size() / kQ8Block * (2 + kQ8Block));
    for (size_t at = 0; at < values.size(); at += kQ8Block)
      quantizeBlock(values.data() + at, out);
    return out;
  }
  return out;
}

std::vector<float> decode(TensorType t, std::string_view bytes, int64_t count) {
  std::vector<float> out(count);
  switch (t) {
  case TensorType::F32:
    std::memcpy(out.data(), bytes.data(), count * 4);
    break;
  case TensorType::F16:
  case TensorType::BF16:
    for (int64_t i = 0; i < count; ++i)
      out[i] = t == TensorType::F16 ? floatFromHalf(get16(bytes, 2 * i))
                                    : floatFromBf16(get16(bytes, 2 * i));
    break;
  case TensorType::Q8_0:
    for (int64_t b = 0; b < count / kQ8Block; ++b) {
      size_t at = b * (2 + kQ8Block);
      float d = floatFromHalf(get16(bytes, at));
      for (int64_t i = 0; i < kQ8Block; ++i)
        out[b * kQ8Block + i] = d * (float)(int8_t)bytes[at + 2 + i];
    }
    break;
  }
  return out;
}

} // namespace fbt::ggml
