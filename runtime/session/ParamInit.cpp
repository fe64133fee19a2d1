//===- ParamInit.cpp - Deterministic parameter initialization ------------------===//

#include "runtime/session/ParamInit.h"

#include "runtime/base/Error.h"
#include "runtime/base/Random.h"
#include "runtime/format/Safetensors.h"

#include <algorithm>
#include <cmath>

namespace fbt {

void initParameter(float *out, const std::vector<int64_t> &shape, uint64_t seed,
                   uint64_t index, float stddev, InitKind kind) {
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
  if (kind == InitKind::Uniform) {
    const float a = stddev * std::sqrt(3.0f);
    for (int64_t i = 0; i < n; ++i)
      out[i] = a * (2.0f * rng::uniform(seed, index, static_cast<uint64_t>(i)) - 1.0f);
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    out[i] = stddev * rng::normal(seed, index, static_cast<uint64_t>(i));
}

std::vector<float> initParameter(const std::vector<int64_t> &shape,
                                 uint64_t seed, uint64_t index, float stddev,
                                 InitKind kind) {
  std::vector<float> out(static_cast<size_t>(shapeElements(shape)));
  initParameter(out.data(), shape, seed, index, stddev, kind);
  return out;
}

} // namespace fbt
