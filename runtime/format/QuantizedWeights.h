//===- QuantizedWeights.h - weight matrices in their inference forms --*- C++ -*-===//
//
// What an inference step reads for a weight matrix compiled narrow
// (WeightNames.h): a row-major [rows, cols] f32 matrix rounded to bf16, or
// quantized to int8 by Q8_0's rule (ggml's, GgmlTypes.h) in groups of 32
// along each row, the last group of a row as long as the row leaves it. The
// one definition of that rounding on the host: the runtime makes the copies
// it binds with it, the tests compare the kernels against its dequantized
// values, and stored copies are checked against it.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_FORMAT_QUANTIZEDWEIGHTS_H
#define FBT_RUNTIME_FORMAT_QUANTIZEDWEIGHTS_H

#include "runtime/format/Kinds.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fbt {

struct QuantizedMatrix {
  WeightForm form = WeightForm::F32;
  int64_t rows = 0, cols = 0;
  std::vector<int8_t> values;  ///< int8: rows x cols
  /// int8: the scales, rows x groupsOf(cols), as f16 bits; bf16: the
  /// weights, rows x cols, as bf16 bits.
  std::vector<uint16_t> halves;

  /// The bytes the step input `scales` (or else the values) takes.
  const void *data(bool scales) const;
  size_t bytes(bool scales) const;
};

/// `w` (rows x cols, row-major) in `form` (bf16 or int8).
QuantizedMatrix quantizeMatrix(WeightForm form, const float *w, int64_t rows, int64_t cols);

/// `q` (int8, row layout) in the interleaved16 layout (WeightNames.h): what
/// a CPU bundle whose target says so binds.
QuantizedMatrix interleaveRows(const QuantizedMatrix &q);

/// The f32 values `q` stands for: what the kernels multiply by.
std::vector<float> dequantizeMatrix(const QuantizedMatrix &q);

/// Checks an int8 matrix's scales are finite and not negative; a
/// RuntimeError naming `what` and the first bad scale's row and group.
void checkScales(const QuantizedMatrix &q, const std::string &what);

} // namespace fbt

#endif // FBT_RUNTIME_FORMAT_QUANTIZEDWEIGHTS_H
