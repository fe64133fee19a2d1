//===- ZeroShards.h - which rank owns which parameter under ZeRO-1 -*- C++ -*-===//
//
// ZeRO-1 gives each parameter tensor, whole, to one rank: that rank keeps
// its AdamW moments, receives its reduced gradient (reduce-scatter) and
// sends its updated values to the others (all-gather). The partition is
// made here, once, for the compiler's figures (fbtc --describe) and for
// the runtime alike, so both agree on every world size: largest tensor
// first, each to the rank holding the fewest bytes so far (the lowest rank
// on a tie), in the bundle's parameter order among equal sizes.
//
// Whole tensors keep every kernel as compiled (each AdamW call runs on one
// rank or is skipped), at the price of balance: a rank holds at least the
// largest tensor (the embedding), so the share approaches 1/N of the
// optimizer state only while the largest tensor is under it.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_FORMAT_ZEROSHARDS_H
#define FBT_RUNTIME_FORMAT_ZEROSHARDS_H

#include <cstdint>
#include <string>
#include <vector>

namespace fbt {

/// The owner of each parameter (by its element count, in bundle order) among
/// `ranks` ranks. RuntimeError when there are more ranks than parameters:
/// a rank would own nothing, and ZeRO-1 cannot divide the state that way.
std::vector<int> zeroOwners(const std::vector<int64_t> &elements, int ranks);

/// The elements each rank owns under zeroOwners().
std::vector<int64_t> zeroShares(const std::vector<int64_t> &elements, int ranks);

} // namespace fbt

#endif // FBT_RUNTIME_FORMAT_ZEROSHARDS_H
