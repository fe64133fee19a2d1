//===- WeightNames.h - the step inputs of inference weights -------*- C++ -*-===//
//
// A bundle compiled with inference weights other than f32 (DESIGN.md §8,
// fbtc --inference-weights) has inference steps that read each weight
// matrix a GEMM multiplies by in that form, as inputs of their own beside
// the f32 parameters (which the embedding lookup and training still read):
//
//   int8.<param>          int8 [N, K], the values q
//   int8_scales.<param>   f16 [N, ceil(K / 32)], one scale d per group of
//                         32 along a row (the last group of a row may be
//                         shorter): the weight is d * q
//   bf16.<param>          bf16 [N, K]
//
// The compiler names the inputs (fbt-inference-weights); the runtime makes
// their contents from the parameters (QuantizedWeights.h) and binds them.
//
// Where a CPU bundle's int8 layout is interleaved16 (Kinds.h: int8
// activations, codegen/kernels/KernelConfig.h's interleavesInt8), the first interleavedRows(N, K) rows of an int8
// weight lie in blocks of kInterleave rows: block b's 4-byte column chunk c
// (columns [4c, 4c + 4)) of its 16 rows, row after row, is the 64 bytes at
// (b * K / 4 + c) * 64, each value stored as q + 128 (unsigned); its
// scales are the block's 16 rows' scale of group g at (b * groups + g) * 16.
// 4 values of x broadcast then multiply 4 columns of 16 rows at once (one
// VNNI vpdpbusd), and a group's sums land in the 16 rows' lanes with no
// lane to add across. The
// rows after them (N % 16) stay as in the row layout, at the same offsets.
// Header-only, on Kinds.h alone, so the compiler can include it.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_FORMAT_WEIGHTNAMES_H
#define FBT_RUNTIME_FORMAT_WEIGHTNAMES_H

#include "runtime/format/Kinds.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace fbt::weights {

/// int8 weights share a scale per this many consecutive values of a row.
constexpr int64_t kGroup = 32;
/// Groups of a row of `k` values.
inline int64_t groupsOf(int64_t k) { return (k + kGroup - 1) / kGroup; }

/// Rows per block of the interleaved16 layout.
constexpr int64_t kInterleave = 16;
/// The rows of an [rows, cols] int8 weight that the interleaved16 layout
/// interleaves: its whole blocks, where a row is whole 4-byte chunks (else
/// none: the weight keeps the row layout).
inline int64_t interleavedRows(int64_t rows, int64_t cols) {
  return cols % 4 == 0 ? rows / kInterleave * kInterleave : 0;
}

constexpr char kInt8Prefix[] = "int8.";
constexpr char kScalesPrefix[] = "int8_scales.";
constexpr char kBf16Prefix[] = "bf16.";

/// The step inputs holding parameter `param` in `form`: int8, its values
/// then its scales; bf16, one; f32, none (the parameter itself).
inline std::vector<std::string> inputsOf(WeightForm form, const std::string &param) {
  switch (form) {
  case WeightForm::Int8:
    return {kInt8Prefix + param, kScalesPrefix + param};
  case WeightForm::BF16:
    return {kBf16Prefix + param};
  case WeightForm::F32:
    break;
  }
  return {};
}

/// What a step input of inference weights holds: parameter `param` in
/// `form`, its scales where `scales`.
struct WeightInput {
  WeightForm form = WeightForm::F32;
  bool scales = false;
  std::string param;
};

/// The inference-weight input `name` is, or nullopt for any other name.
inline std::optional<WeightInput> parseInput(const std::string &name) {
  auto after = [&](const char *prefix) -> std::optional<std::string> {
    std::string p = prefix;
    if (name.size() > p.size() && name.compare(0, p.size(), p) == 0)
      return name.substr(p.size());
    return std::nullopt;
  };
  if (auto p = after(kScalesPrefix))
    return WeightInput{WeightForm::Int8, true, *p};
  if (auto p = after(kInt8Prefix))
    return WeightInput{WeightForm::Int8, false, *p};
  if (auto p = after(kBf16Prefix))
    return WeightInput{WeightForm::BF16, false, *p};
  return std::nullopt;
}

} // namespace fbt::weights

#endif // FBT_RUNTIME_FORMAT_WEIGHTNAMES_H
