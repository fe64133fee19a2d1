//===- PrefillCache.h - prompts' prefills kept for reuse -----------*- C++ -*-===//
//
// What a one-row prefill left behind, on the host: the prompt's rows of
// every KV cache buffer, the carried state and the last logits, per kind
// of prefill (plain for standard and soft, fused:N its own). Restoring an
// entry gives the row exactly what prefilling it again would (the decoder
// does the copies, Decoder.h); the least recently used entry goes first.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_DECODE_PREFILLCACHE_H
#define FBT_RUNTIME_DECODE_PREFILLCACHE_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace fbt {

class PrefillCache {
public:
  struct Entry {
    std::vector<int32_t> prompt;
    int64_t kind = 1; ///< 1: plain; N: fused:N
    std::vector<std::vector<char>> kv; ///< each cache's prompt rows, as stored (f32 or f16)
    std::vector<float> state, logits;
    uint64_t used = 0;
  };

  /// Keeps up to `entries` (0: none; fewer than held drops them all).
  void setCapacity(size_t entries);
  size_t capacity() const { return capacity_; }
  /// The entry of `prompt` and `kind`, now the most recently used; null when
  /// there is none. Either way counted, as a hit or a miss.
  const Entry *find(const std::vector<int32_t> &prompt, int64_t kind);
  /// Keeps `entry`, making room by dropping the least recently used.
  void store(Entry entry);
  int64_t hits() const { return hits_; }
  int64_t misses() const { return misses_; }

private:
  std::vector<Entry> entries_;
  size_t capacity_ = 0;
  uint64_t clock_ = 0;
  int64_t hits_ = 0, misses_ = 0;
};

} // namespace fbt

#endif // FBT_RUNTIME_DECODE_PREFILLCACHE_H
