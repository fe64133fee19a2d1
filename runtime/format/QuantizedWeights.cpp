//===- QuantizedWeights.cpp - weight matrices in their inference forms ----===//

#include "runtime/format/QuantizedWeights.h"

#include "runtime/base/Bf16.h"
#include "runtime/base/Error.h"
#include "runtime/format/GgmlTypes.h"
#include "runtime/format/WeightNames.h"

#include <algorithm>
#include <cmath>

namespace fbt {

const void *QuantizedMatrix::data(bool scales) const {
  if (form == WeightForm::Int8 && !scales)
    return values.data();
  return halves.data();
}

size_t QuantizedMatrix::bytes(bool scales) const {
  if (form == WeightForm::Int8 && !scales)
    return values.size();
  return halves.size() * sizeof(uint16_t);
}

QuantizedMatrix quantizeMatrix(WeightForm form, const float *w, int64_t rows,
                               int64_t cols) {
  QuantizedMatrix q;
  q.form = form;
  q.rows = rows;
  q.cols = cols;
  if (form == WeightForm::BF16) {
    q.halves.resize(size_t(rows * cols));
    for (size_t i = 0; i < q.halves.size(); ++i)
      q.halves[i] = floatToBf16(w[i]);
    return q;
  }
  if (form != WeightForm::Int8)
    throw RuntimeError(std::string("weights in form '") + kindName(form) +
                       "' are the parameters themselves, not a quantized copy");
  int64_t groups = weights::groupsOf(cols);
  q.values.resize(size_t(rows * cols));
  q.halves.resize(size_t(rows * groups));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t g = 0; g < groups; ++g) {
      int64_t at = r * cols + g * weights::kGroup;
      int64_t n = std::min(weights::kGroup, cols - g * weights::kGroup);
      q.halves[size_t(r * groups + g)] = ggml::quantizeQ8Block(w + at, n, q.values.data() + at);
    }
  return q;
}

QuantizedMatrix interleaveRows(const QuantizedMatrix &q) {
  if (q.form != WeightForm::Int8)
    throw RuntimeError(std::string("only int8 weights interleave their rows, not ") +
                       kindName(q.form));
  QuantizedMatrix out = q;
  int64_t packed = weights::interleavedRows(q.rows, q.cols), groups = weights::groupsOf(q.cols);
  const int64_t n = weights::kInterleave, chunks = q.cols / 4;
  for (int64_t r = 0; r < packed; ++r) {
    int64_t block = r / n, lane = r % n;
    for (int64_t c = 0; c < chunks; ++c)
      for (int64_t i = 0; i < 4; ++i)
        out.values[size_t(((block * chunks + c) * n + lane) * 4 + i)] =
            int8_t(uint8_t(q.values[size_t(r * q.cols + 4 * c + i)]) ^ 0x80);
    for (int64_t g = 0; g < groups; ++g)
      out.halves[size_t((block * groups + g) * n + lane)] = q.halves[size_t(r * groups + g)];
  }
  return out;
}

std::vector<float> dequantizeMatrix(const QuantizedMatrix &q) {
  std::vector<float> out(size_t(q.rows * q.cols));
  if (q.form == WeightForm::BF16) {
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = bf16ToFloat(q.halves[i]);
    return out;
  }
  int64_t groups = weights::groupsOf(q.cols);
  for (int64_t r = 0; r < q.rows; ++r)
    for (int64_t c = 0; c < q.cols; ++c) {
      float d = ggml::floatFromHalf(q.halves[size_t(r * groups + c / weights::kGroup)]);
      out[size_t(r * q.cols + c)] = d * (float)q.values[size_t(r * q.cols + c)];
    }
  return out;
}

void checkScales(const QuantizedMatrix &q, const std::string &what) {
  if (q.form != WeightForm::Int8)
    return;
  int64_t groups = weights::groupsOf(q.cols);
  for (size_t i = 0; i < q.halves.size(); ++i) {
    float d = ggml::floatFromHalf(q.halves[i]);
    if (!std::isfinite(d) || d < 0 || std::signbit(d))
      throw RuntimeError(what + ": the scale of row " + std::to_string(i / groups) +
                         ", group " + std::to_string(i % groups) + " is " +
                         std::to_string(d) + "; scales are finite and not negative");
  }
}

} // namespace fbt
