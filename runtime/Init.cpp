//===- Init.cpp - Deterministic parameter initialization ------------------===//

#include "runtime/Init.h"

#include "runtime/Error.h"
#include "runtime/Random.h"
#include "runtime/Safetensors.h"

#include <algorithm>

namespace fbt {

void initParameter(float *out, const std::vector<int64_t> &shape, uint64_t seed,
                   uint64_t index, float stddev) {
  int64_t n = shapeElements(shape);
  if (shape.size() == 1) {
    std::fill(out, out + n, 1.0f);
    return;
  }
  if (shape.size() != 2)
    throw RuntimeError("parameter " + std::to_string(index) +
                       ": cannot "
                       "initialize a tensor of shape " +
                       shapeString(shape) +
                       " (only 1-D scales and 2-D weights)");
  for (int64_t i = 0; i < n; ++i)
    out[i] = stddev * rng::normal(seed, index, static_cast<uint64_t>(i));
}

std::vector<float> initParameter(const std::vector<int64_t> &shape,
                                 uint64_t seed, uint64_t index, float stddev) {
  std::vector<float> out(static_cast<size_t>(shapeElements(shape)));
  initParameter(out.data(), shape, seed, index, stddev);
  return out;
}

} // namespace fbt
