//===- Decoder.h - prefill, decode and the three regimes ---------*- C++ -*-===//
//
// Runs a bundle's compiled prefill, prefill_fused and decode_step over a
// batch of B sequences (B fixed at compile time; shorter batches are padded
// with idle rows) sharing one KV cache per layer:
//   standard   u_t = e_t                   (feedback_on = 0)
//   soft       prefill plain, then u_t = fuse(e_t, h_{t-1}) for every
//              generated token             (feedback_on = 1)
//   fused:n    prefill plain, then n-1 fused prefill passes over the prompt
//              into the same cache, then soft decoding
// Prompts of different lengths decode together: each row has its own
// position, and padding never reaches a real position (causal attention).
// A sequence can also join a running batch (admit): prefill_row and
// prefill_fused_row prefill its row alone, into that row's slice of the
// caches; or, in pieces, beside the other rows' decoding (mixed: the
// mixed_n<N> steps, tokens of any rows at their own positions).
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_DECODE_DECODER_H
#define FBT_RUNTIME_DECODE_DECODER_H

#include "runtime/decode/PrefillCache.h"
#include "runtime/decode/Regime.h"
#include "runtime/decode/Sampler.h"
#include "runtime/session/Session.h"

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace fbt {

class Decoder {
public:
  explicit Decoder(Session &session);

  int64_t batchSize() const { return batch_; }
  int64_t maxPrompt() const { return maxPrompt_; }
  /// The T of each one-row prefill over fewer positions (prefill_row_t<T>),
  /// which a prompt of at most T tokens runs.
  const std::vector<int64_t> &rowPrefillLengths() const { return rowPrefills_; }
  int64_t maxSequence() const { return maxSequence_; }
  int64_t vocab() const { return vocab_; }
  /// soft, or standard for a model without a feedback path (fusion none).
  Regime defaultRegime() const;
  /// A RuntimeError for a regime the model cannot decode in (soft or fused
  /// without a feedback path); every prefill checks it.
  void checkRegime(const Regime &regime) const;

  /// Teacher forcing: for each sequence, prefill its first `promptLengths[b]`
  /// tokens under `regime`, then feed the rest one by one. Returns the
  /// logits predicting positions promptLength-1 .. n-1 of every sequence as
  /// [b][position][V], zero before promptLength-1.
  std::vector<std::vector<std::vector<float>>>
  score(const std::vector<std::vector<int32_t>> &sequences,
        const std::vector<int64_t> &promptLengths, const Regime &regime);

  /// The carried states of passes 1..passes over one prompt (plain prefill,
  /// then fused prefill passes, as fused:passes runs them):
  /// [pass][position * D + channel] for the prompt's positions.
  std::vector<std::vector<float>> passStates(const std::vector<int32_t> &prompt,
                                             int64_t passes);
  /// Every layer's residual stream over up to a batch of prompts, under
  /// plain prefill and then each fused pass (fused:passes):
  /// [pass][layer][prompt][position * D + channel] for each prompt's
  /// positions; layer l < L is block l's input, layer L the top-layer state
  /// before the final norm. Needs a bundle compiled with `fbtc
  /// --with-states` (prefill_states, prefill_fused_states). With `carried`,
  /// also each pass's carried states, the next pass's input before its
  /// shift to t+1: [pass][prompt][position * D + channel].
  std::vector<std::vector<std::vector<std::vector<float>>>>
  layerStates(const std::vector<std::vector<int32_t>> &prompts, int64_t passes,
              std::vector<std::vector<std::vector<float>>> *carried = nullptr);
  /// Row `row`'s carried state after the last prefill or decode step ([D]).
  const float *state(int64_t row) const { return state_.as<float>() + row * width_; }
  int64_t width() const { return width_; }

  /// Generates up to `maxNew` tokens after each prompt. `onToken(row, id)`
  /// is called as tokens are chosen; it returns false to stop that row.
  std::vector<std::vector<int32_t>>
  generate(const std::vector<std::vector<int32_t>> &prompts, const Regime &regime,
           const SamplingOptions &sampling, int64_t maxNew,
           const std::function<bool(int64_t, int32_t)> &onToken);

  // Continuous batching: sequences join and leave rows between decode steps.
  /// Prefills `prompt` into row `row` alone, from the prefill cache when it
  /// holds it; every other row's KV cache, state and logits are kept.
  void admit(int64_t row, const std::vector<int32_t> &prompt, const Regime &regime);
  /// One decode step for every row: its token, its position, and whether its
  /// state is fed back (soft and fused rows) or not (standard rows, idle
  /// ones). Rows without feedback anywhere take the plain step.
  void step(const std::vector<int32_t> &tokens, const std::vector<int32_t> &positions,
            const std::vector<bool> &feedback);
  /// One token of a mixed step (mixed): a running row's next token (with
  /// its row's state fed back when `feedback`), or a piece of a joining
  /// row's prompt (plain), written to row `row`'s cache at `position`.
  struct MixedToken {
    int64_t row;
    int32_t id, position;
    bool feedback = false;
    /// The state fed back ([D]); null for the row's own (state(row)).
    const float *state = nullptr;
  };
  /// The most tokens one mixed step takes; 0 when the bundle has no mixed
  /// steps (a decode batch of one).
  int64_t mixedCapacity() const { return mixedSizes_.empty() ? 0 : mixedSizes_.back(); }
  /// The longest prompt `regime` takes: with mixed steps a standard or soft
  /// prompt is prefilled in pieces, so only the context bounds it; a fused
  /// one keeps the compiled prefill's bound (its passes run alone where
  /// there are no mixed steps).
  int64_t longestPrompt(const Regime &regime) const;
  /// One mixed step (chunked prefill beside decoding): every token in
  /// `tokens`, at most mixedCapacity(), over the smallest mixed step that
  /// holds them. Each row with a token in it takes the logits and state of
  /// its last one; the other rows keep theirs. With `states`, every token's
  /// carried state as well ([tokens.size() * D]; a model with a feedback
  /// path only), for a fused prompt's next pass.
  void mixed(const std::vector<MixedToken> &tokens, std::vector<float> *states = nullptr);
  /// The document-start token (FusedPrefill::feedsAt feeds no state there).
  int32_t bos() const { return bos_; }
  /// Whether the prefill cache holds `prompt` for `regime`; if so it is
  /// restored into row `row` (its caches, state and logits), as admit would.
  bool restoreCached(int64_t row, const std::vector<int32_t> &prompt, const Regime &regime);
  /// Keeps row `row`'s prefill of `prompt` (its caches, state and logits) in
  /// the prefill cache, as admit keeps what it prefills.
  void storeCached(int64_t row, const std::vector<int32_t> &prompt, const Regime &regime);

  /// Row `row`'s logits after its admission or the last step ([V]).
  const float *logits(int64_t row) const { return lastLogits_.as<float>() + row * vocab_; }
  /// The token `sampling` chooses from `logits`; `counter` numbers the draw
  /// (a sequence's token index, so that batching never changes a result).
  int32_t sample(const float *logits, const SamplingOptions &sampling,
                 uint64_t counter) const {
    return sampleToken(logits, vocab_, sampling, counter);
  }

  /// Keeps the prefills of up to `entries` prompts (least recently used go
  /// first): generate() with one prompt it has prefilled before, in the same
  /// kind of prefill (plain for standard and soft, fused:N its own), restores
  /// the prompt's KV rows, carried state and last logits instead of running
  /// the prefill again: bit for bit what the prefill wrote, so the tokens
  /// are the same. 0 (the default) keeps none.
  void setPrefillCache(size_t entries);
  int64_t prefillCacheHits() const { return cache_.hits(); }
  int64_t prefillCacheMisses() const { return cache_.misses(); }

private:
  bool hasFeedback() const;
  /// Prefill (and fused passes) for up to B prompts; leaves the caches
  /// filled, each row's last logits and state in lastLogits_/state_.
  /// `afterPass` sees each pass's step binding (its outputs) in turn.
  void prefill(const std::vector<std::vector<int32_t>> &prompts, const Regime &regime,
               const std::function<void(StepBinding &)> &afterPass = {});
  /// One decode step: token and position per row; updates logits and state.
  void decode(const std::vector<int32_t> &tokens, const std::vector<int32_t> &positions,
              bool feedback);
  /// The step's runner and its binding (made once, then reused: the same
  /// buffers every token).
  /// `row`: the first row of the decode batch the step sees (steps over
  /// one row bind that row's slice of the caches; one binding per row).
  StepBinding &binding(const std::string &step, const std::set<std::string> &inputs,
                       int64_t row = 0);
  /// Prefills `prompts` into rows [row, row + rows): the whole batch's steps
  /// when `rows` is the batch, else one row's (prefill_row, prefill_fused_row).
  void runPrefill(const std::vector<std::vector<int32_t>> &prompts, const Regime &regime,
                  int64_t row, int64_t rows,
                  const std::function<void(StepBinding &)> &afterPass);

  Session &session_;
  int64_t batch_, maxPrompt_, maxSequence_, vocab_, width_, layers_;
  /// layerStates: the prefills run as prefill_states, prefill_fused_states.
  bool withStates_ = false;
  int32_t bos_;
  std::vector<DeviceBuffer> caches_;    ///< k_cache.0.., v_cache.0.. (device)
  size_t cacheElement_ = sizeof(float); ///< bytes per cached value (f32 or f16)
  /// One position of one cache: D values.
  size_t cachePositionBytes() const { return width_ * cacheElement_; }
  /// Position 0 of row `row` in caches_[cache] (device memory).
  char *cacheRow(size_t cache, int64_t row) const;
  /// RuntimeError unless every step's cache inputs are rows of this
  /// decoder's caches, stored as `form` (the manifest's inference.kv_cache).
  void checkCacheInputs(const Bundle &bundle, CacheForm form) const;
  AlignedBuffer lastLogits_, state_;    ///< [B, 1, V], [B, 1, D] (host)
  std::map<std::string, std::unique_ptr<StepBinding>> bindings_;
  /// The positions of the bundle's shorter one-row prefills
  /// (prefill_row_t<T>, prefill_fused_row_t<T>).
  std::vector<int64_t> rowPrefills_;
  /// The token counts of the bundle's mixed steps (mixed_n<N>), ascending.
  std::vector<int64_t> mixedSizes_;

  /// Prefills `prompt` in row `row` alone (the other rows keep their caches,
  /// state and logits), or restores it from the cache.
  void prefillCached(const std::vector<int32_t> &prompt, const Regime &regime,
                     int64_t row = 0);
  PrefillCache cache_;
};

} // namespace fbt

#endif // FBT_RUNTIME_DECODE_DECODER_H
