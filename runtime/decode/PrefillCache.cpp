//===- PrefillCache.cpp - prompts' prefills kept for reuse -----------------===//

#include "runtime/decode/PrefillCache.h"

#include <algorithm>

namespace fbt {

void PrefillCache::setCapacity(size_t entries) {
  capacity_ = entries;
  if (entries_.size() > entries)
    entries_.clear();
}

const PrefillCache::Entry *PrefillCache::find(const std::vector<int32_t> &prompt,
                                              int64_t kind) {
  for (Entry &e : entries_)
    if (e.kind == kind && e.prompt == prompt) {
      e.used = ++clock_;
      ++hits_;
      return &e;
    }
  ++misses_;
  return nullptr;
}

void PrefillCache::store(Entry entry) {
  if (capacity_ == 0)
    return;
  entry.used = ++clock_;
  if (entries_.size() >= capacity_)
    entries_.erase(std::min_element(
        entries_.begin(), entries_.end(),
        [](const Entry &a, const Entry &b) { return a.used < b.used; }));
  entries_.push_back(std::move(entry));
}

} // namespace fbt
