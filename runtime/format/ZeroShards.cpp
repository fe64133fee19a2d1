//===- ZeroShards.cpp - which rank owns which parameter under ZeRO-1 -----===//

#include "runtime/format/ZeroShards.h"

#include "runtime/base/Error.h"

#include <algorithm>
#include <numeric>

namespace fbt {

std::vector<int> zeroOwners(const std::vector<int64_t> &elements, int ranks) {
  if (ranks < 1)
    throw RuntimeError("ZeRO-1 needs at least one rank, got " + std::to_string(ranks));
  if (size_t(ranks) > elements.size())
    throw RuntimeError("ZeRO-1 gives each rank whole parameters, but " +
                       std::to_string(ranks) + " ranks exceed the model's " +
                       std::to_string(elements.size()) +
                       " parameters: run on at most that many ranks, or set training.zero "
                       "to 0");
  std::vector<size_t> order(elements.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return elements[a] > elements[b]; });
  std::vector<int64_t> load(size_t(ranks), 0);
  std::vector<int> owner(elements.size(), 0);
  for (size_t p : order) {
    int least = int(std::min_element(load.begin(), load.end()) - load.begin());
    owner[p] = least;
    load[size_t(least)] += elements[p];
  }
  return owner;
}

std::vector<int64_t> zeroShares(const std::vector<int64_t> &elements, int ranks) {
  std::vector<int> owner = zeroOwners(elements, ranks);
  std::vector<int64_t> share(size_t(ranks), 0);
  for (size_t p = 0; p < elements.size(); ++p)
    share[size_t(owner[p])] += elements[p];
  return share;
}

} // namespace fbt
