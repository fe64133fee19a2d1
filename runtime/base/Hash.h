//===- Hash.h - FNV-1a hashes and their hex spelling -------------*- C++ -*-===//
//
// One hash for everything fbt fingerprints: bundle blobs (their checksums
// in the container), the tune cache's keys (a bundle's kernels, a spec, a
// device). FNV-1a 64-bit: fast, stable across machines and releases, and
// not meant to resist an adversary.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_BASE_HASH_H
#define FBT_RUNTIME_BASE_HASH_H

#include <cstddef>
#include <cstdint>
#include <string>

namespace fbt {

/// FNV-1a's offset basis: the hash of nothing.
constexpr uint64_t kFnvBasis = 0xcbf29ce484222325ull;

/// FNV-1a of `size` bytes, continued from `h`.
uint64_t fnv1a64(const void *data, size_t size, uint64_t h = kFnvBasis);
/// FNV-1a continued over `bytes`, then their length, so that "ab" + "c"
/// and "a" + "bc" differ when pieces are hashed in a row.
uint64_t fnvMix(uint64_t h, const std::string &bytes);
/// `h` as 16 lower-case hex digits.
std::string hexDigits(uint64_t h);

} // namespace fbt

#endif // FBT_RUNTIME_BASE_HASH_H
