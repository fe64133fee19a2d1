//===- Random.h - Counter-based random numbers ------------------*- C++ -*-===//
//
// All randomness in fbt is a pure function of (seed, stream, counter): no
// generator state is carried from one call to the next. That is what makes a
// training run reproducible bit for bit after --resume (the batch, pass count
// and noise of step s depend only on the seed and s), and it is the same
// generator the compiled kernels use for jitter and prefix mix-in (see
// fbt.jitter in dialect/FbtOps.td), so host and device agree.
//
// With 64-bit wrapping arithmetic:
//   mix(z)  = the splitmix64 finalizer
//   bits(seed, stream, i) = mix(mix(seed ^ (stream * 0xD1B54A32D192ED03)) + i)
//   uniform(seed, stream, i) = (bits >> 40) * 2^-24
// uniform is a float in [0, 1) with 24 random bits, exact in f32, so every
// implementation (C++, CUDA, Python) gets the same value.
//
// Streams separate independent uses under one seed. The runtime's are listed
// in fbt::rng::streams below; parameter init uses the parameter's index as
// its stream (session/ParamInit.h), and the kernels use small streams too (jitter: the
// pass index; prefix mix-in: 0). Seeds given to the kernels should therefore
// differ from the init seed (e.g. derived per step with mix), or pass k's
// jitter would repeat parameter k's init draws.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_BASE_RANDOM_H
#define FBT_RUNTIME_BASE_RANDOM_H

#include <cmath>
#include <cstdint>
#include <vector>

namespace fbt::rng {

namespace streams {
/// Which batches of the multi-pass phase run at the deep pass count.
constexpr uint64_t kSchedule = 0x5CED;
/// Window offsets of training batches.
constexpr uint64_t kBatch = 0xBA7C;
/// The default corpus's templates.
constexpr uint64_t kCorpus = 0xC0B5;
/// `fbt eval --task` problems (under their own seed, not the corpus's).
constexpr uint64_t kTask = 0x7A5C;
/// Synthetic inputs to time steps with (fbt bench, fbt tune): a batch's
/// ids and targets, and prompts.
constexpr uint64_t kSyntheticIds = 0x51D5;
constexpr uint64_t kSyntheticTargets = 0x5A26;
constexpr uint64_t kSyntheticPrompts = 0x5903;
/// fbt probe's random features (the floor of its probes).
constexpr uint64_t kProbeFeatures = 0x960B;
} // namespace streams

/// The splitmix64 finalizer: a bijection on 64-bit words that spreads every
/// input bit over the output.
constexpr uint64_t mix(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// 64 random bits for counter i of (seed, stream).
constexpr uint64_t bits(uint64_t seed, uint64_t stream, uint64_t i) {
  return mix(mix(seed ^ (stream * 0xD1B54A32D192ED03ull)) + i);
}

/// Uniform in [0, 1) on the grid k * 2^-24.
inline float uniform(uint64_t seed, uint64_t stream, uint64_t i) {
  return static_cast<float>(bits(seed, stream, i) >> 40) * 0x1p-24f;
}

/// Uniform integer in [0, n) for n >= 1: the high 64 bits of the 128-bit
/// product bits * n. Unlike floor(uniform * n) it uses all 64 bits, so it
/// reaches every offset of a stream with billions of tokens; its bias is at
/// most n / 2^64.
inline uint64_t uniformInt(uint64_t seed, uint64_t stream, uint64_t i,
                           uint64_t n) {
  uint64_t x = bits(seed, stream, i);
  // 64x64 -> high 64 bits, from 32-bit halves (no __int128 needed).
  uint64_t xLo = x & 0xFFFFFFFFull, xHi = x >> 32;
  uint64_t nLo = n & 0xFFFFFFFFull, nHi = n >> 32;
  uint64_t lolo = xLo * nLo, lohi = xLo * nHi, hilo = xHi * nLo;
  uint64_t hihi = xHi * nHi;
  uint64_t mid = (lolo >> 32) + (lohi & 0xFFFFFFFFull) + (hilo & 0xFFFFFFFFull);
  return hihi + (lohi >> 32) + (hilo >> 32) + (mid >> 32);
}

/// Standard normal sample number i of (seed, stream), by Box-Muller from the
/// uniforms at counters 2i and 2i+1 (the cosine branch only, so each sample
/// is a function of its own index). 1 - u1 is in (0, 1], so the log is finite.
/// Computed in double and rounded to float.
inline float normal(uint64_t seed, uint64_t stream, uint64_t i) {
  double u1 = uniform(seed, stream, 2 * i);
  double u2 = uniform(seed, stream, 2 * i + 1);
  double r = std::sqrt(-2.0 * std::log(1.0 - u1));
  constexpr double kTwoPi = 6.283185307179586476925;
  return static_cast<float>(r * std::cos(kTwoPi * u2));
}

/// `n` synthetic token ids in 1 .. vocab - 1 (never id 0, the usual BOS),
/// id j = 1 + uniformInt(round, stream, j, vocab - 1): the inputs fbt bench
/// and fbt tune time steps on, a different draw per `round`.
inline std::vector<int32_t> syntheticIds(int64_t n, int64_t vocab, uint64_t stream,
                                         uint64_t round = 0) {
  std::vector<int32_t> ids(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j)
    ids[j] = 1 + static_cast<int32_t>(uniformInt(round, stream, uint64_t(j),
                                                 static_cast<uint64_t>(vocab - 1)));
  return ids;
}

} // namespace fbt::rng

#endif // FBT_RUNTIME_BASE_RANDOM_H
