//===- Describe.h - Planning figures for a model spec -----------*- C++ -*-===//
//
// The sizes a user plans with before compiling: parameter counts, training
// FLOPs and memory per scheduled K, KV-cache size and decode cost. These are
// analytic estimates from the model's shapes (see Describe.cpp for each
// formula), not measurements of a compiled bundle.
//
// Symbols used below: V vocab, D hidden, L layers, H heads, F MLP width,
// T training sequence length, B training batch, K passes per step,
// S inference max_sequence_length, Bi inference batch.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_FRONTEND_DESCRIBE_H
#define FBT_FRONTEND_DESCRIBE_H

#include "frontend/Spec.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace fbt {

/// Training figures for one scheduled pass count K.
struct PassFigures {
  int64_t passes = 1;
  /// Forward + backward FLOPs per training token over all K passes.
  uint64_t trainFlopsPerToken = 0;
  /// Activations saved for the backward pass over one step, fp32.
  uint64_t activationBytes = 0;
  /// weights + gradients + AdamW state + activations.
  uint64_t stepBytes = 0;
};

/// Data parallelism over N ranks (DESIGN.md section 3): each rank runs the
/// compiled batch, and the gradients are all-reduced every optimizer step.
struct RankFigures {
  int64_t ranks = 1;
  uint64_t tokensPerStep = 0; ///< the global batch: B*T*N
  /// Bytes each rank sends (and receives) per step in a ring all-reduce of
  /// the fp32 gradients: 2 * (N-1)/N * gradientBytes.
  uint64_t allReduceBytesPerRank = 0;
  /// AdamW moments each rank holds: all of them (replicated).
  uint64_t optimizerBytesPerRank = 0;
  /// ZeRO-1 (training.zero = 1): the moments of the rank with the largest
  /// share of whole parameters (runtime/format/ZeroShards.h); absent where
  /// there are more ranks than parameters. What each rank sends, on
  /// average, is allReduceBytesPerRank again: a reduction onto the owner
  /// and a broadcast from it move (N-1)/N of each tensor per rank each.
  std::optional<uint64_t> zeroOptimizerBytesPerRank;
};

struct Description {
  /// Each parameter's element count, in step order (ZeRO-1's partition).
  std::vector<int64_t> parameterElements;
  // Parameters.
  /// V*D (tied E) + L*(2D + 4D^2 + 3DF) + D (final norm).
  uint64_t sharedParams = 0;
  /// The fusion's weights: glu 2D^2 (W_U, W_G), add D^2 (W_U),
  /// concat 2D^2 (W is D x 2D), none 0.
  uint64_t feedbackParams = 0;
  uint64_t totalParams = 0;
  /// Weights that take part in matrix products per token:
  /// N_mm = L*(4D^2 + 3DF) + V*D (the LM head; the lookup is free).
  uint64_t matmulParams = 0;

  // Training, fp32 master weights and AdamW state.
  uint64_t tokensPerStep = 0;  ///< B*T
  uint64_t weightBytes = 0;    ///< 4 * total
  uint64_t gradientBytes = 0;  ///< 4 * total
  uint64_t optimizerBytes = 0; ///< 8 * total (first and second moments)
  /// One entry per K of ModelSpec::scheduledPasses(), ascending.
  std::vector<PassFigures> passes;
  /// The training FLOPs per token of the whole schedule (training.steps
  /// steps): each K's figure weighted by ModelSpec::passShares().
  double scheduleFlopsPerToken = 0;
  /// scheduleFlopsPerToken over one pass's (the plain model's cost per
  /// token, feedback weights aside).
  double scheduleFlopsRatio = 0;
  /// Per world size (8 and 64 unless describeRanks says otherwise).
  std::vector<RankFigures> dataParallel;

  // Inference.
  uint64_t kvBytesPerTokenFp32 = 0; ///< 2*L*D*4 (K and V, every layer)
  uint64_t kvBytesPerTokenBf16 = 0; ///< 2*L*D*2
  uint64_t kvBytesFp32 = 0;         ///< per token * S * Bi
  uint64_t kvBytesBf16 = 0;         ///< per token * S * Bi
  /// The context decode FLOPs are quoted at: S/2.
  uint64_t decodeContext = 0;
  /// Standard decoding, one token: 2*N_mm + 4*L*D*decodeContext.
  uint64_t decodeFlopsPerToken = 0;
  /// What each further context token adds: 4*L*D (scores and values).
  uint64_t decodeFlopsPerContextToken = 0;
  /// Soft decoding's extra work per token: 2*feedbackParams + 4*D.
  uint64_t softExtraFlopsPerToken = 0;
  /// softExtraFlopsPerToken / decodeFlopsPerToken, in percent.
  double softExtraPercent = 0;
};

/// The figures, or an error "<field>: expected ..., got ..." naming the spec
/// field (the largest one involved) that makes a figure overflow 64 bits.
/// parseSpec (LoadSpec.h) runs this, so it succeeds for every spec parseSpec
/// returns.
llvm::Expected<Description> tryDescribe(const ModelSpec &spec);

/// The figures of a spec returned by parseSpec (fatal error otherwise).
Description describe(const ModelSpec &spec);

/// The data-parallel figures of `d` at each of `ranks` (each >= 1).
std::vector<RankFigures> describeRanks(const Description &d,
                                       const std::vector<int64_t> &ranks);

/// A table for people: exact integers beside human units (4.2M, 1.3 GiB).
void printDescription(const ModelSpec &spec, const Description &d,
                      llvm::raw_ostream &os);

/// One JSON object with the same figures, for scripts.
void printDescriptionJson(const ModelSpec &spec, const Description &d,
                          llvm::raw_ostream &os);

/// "4.2M", "124.4M", "512" (SI steps of 1000), for counts.
std::string formatCount(uint64_t n);
/// "1.3 GiB", "512 B" (steps of 1024), for bytes.
std::string formatBytes(uint64_t n);

} // namespace fbt

#endif // FBT_FRONTEND_DESCRIBE_H
