//===- GgmlTypes.h - ggml's tensor types: F32, F16, BF16, Q8_0 ----*- C++ -*-===//
//
// The element types fbt export writes into GGUF files, as ggml lays them
// out (little-endian):
//   F32   (0)   4 bytes a value
//   F16   (1)   IEEE 754 half precision, rounded to nearest even
//   BF16  (30)  the float's upper 16 bits, rounded to nearest even (NaN kept
//               a quiet NaN)
//   Q8_0  (8)   blocks of 32 consecutive values of a row: a half-precision
//               scale d = max|x| / 127, then 32 int8 q = round(x / d) (half
//               away from zero; d = 0 gives zeros): 34 bytes a block. A row's
//               length must be a multiple of 32, as llama.cpp's reader
//               requires.
// Rows are ggml's ne[0], the contiguous dimension: a row-major [rows, cols]
// matrix has rows of `cols`.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_FORMAT_GGMLTYPES_H
#define FBT_RUNTIME_FORMAT_GGMLTYPES_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fbt::ggml {

enum class TensorType : uint32_t { F32 = 0, F16 = 1, Q8_0 = 8, BF16 = 30 };

constexpr int64_t kQ8Block = 32;

/// "f32", "f16", "bf16", "q8_0".
const char *typeName(TensorType t);
/// The inverse; a RuntimeError naming the choices for anything else.
TensorType parseType(const std::string &name);

uint16_t halfFromFloat(float x);
float floatFromHalf(uint16_t h);
uint16_t bf16FromFloat(float x);
float floatFromBf16(uint16_t b);

/// Q8_0's rule on `n` (at most 32) values: the scale d = max|x| / 127 as
/// half bits, and q[i] = round(x[i] / d). The one definition, for Q8_0
/// blocks and the runtime's int8 inference weights (whose last group of a
/// row may be shorter).
uint16_t quantizeQ8Block(const float *x, int64_t n, int8_t *q);

/// The bytes of `values` (rows of `cols` each) stored as `t`. Q8_0 with
/// `cols` not a multiple of 32 is a RuntimeError.
std::string encode(TensorType t, const std::vector<float> &values, int64_t cols);
/// The values `bytes` holds (`count` of them): what a reader dequantizes.
std::vector<float> decode(TensorType t, std::string_view bytes, int64_t count);

} // namespace fbt::ggml

#endif // FBT_RUNTIME_FORMAT_GGMLTYPES_H
