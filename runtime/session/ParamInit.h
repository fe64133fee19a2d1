//===- ParamInit.h - Deterministic parameter initialization ----------*- C++ -*-===//
//
// A parameter's initial values are a pure function of (seed, its index in
// the model's parameter list), so any run, on any backend, in any language,
// starts from the same weights, and a reference implementation can rebuild
// them without sharing files:
//   2-D weights (matrices, the embedding): element i (row-major) is
//       stddev * rng::normal(seed, stream = index, i)     (float arithmetic)
//     with stddev 0.02 by default (GPT-2's choice); or, for a uniform
//     init (the feedback weights' default), stddev * sqrt(3) *
//     (2 * rng::uniform(seed, stream = index, i) - 1), U(-a, a) of the same
//     standard deviation;
//   1-D weights (RMSNorm scales): all ones, so the norms start as identity.
// See Random.h for rng::normal (Box-Muller from uniforms 2i and 2i+1).
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_SESSION_PARAMINIT_H
#define FBT_RUNTIME_SESSION_PARAMINIT_H

#include <cstdint>
#include <vector>

namespace fbt {

constexpr float kDefaultInitStddev = 0.02f;

enum class InitKind { Normal, Uniform };

/// Writes the initial values of parameter `index` (shape's element count of
/// them) to `out`. Throws RuntimeError for shapes that are not 1-D or 2-D.
void initParameter(float *out, const std::vector<int64_t> &shape, uint64_t seed,
                   uint64_t index, float stddev = kDefaultInitStddev,
                   InitKind kind = InitKind::Normal);

/// The same, returned as a vector.
std::vector<float> initParameter(const std::vector<int64_t> &shape,
                                 uint64_t seed, uint64_t index,
                                 float stddev = kDefaultInitStddev,
                                 InitKind kind = InitKind::Normal);

} // namespace fbt

#endif // FBT_RUNTIME_SESSION_PARAMINIT_H
