//===- Hash.cpp - FNV-1a hashes and their hex spelling ---------------------===//

#include "runtime/base/Hash.h"

#include <cstdio>

namespace fbt {

uint64_t fnv1a64(const void *data, size_t size, uint64_t h) {
  const unsigned char *p = static_cast<const unsigned char *>(data);
  for (size_t i = 0; i < size; ++i)
    h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

uint64_t fnvMix(uint64_t h, const std::string &bytes) {
  h = fnv1a64(bytes.data(), bytes.size(), h);
  for (size_t n = bytes.size(), i = 0; i < 8; ++i, n >>= 8)
    h = (h ^ (n & 0xff)) * 0x100000001b3ull;
  return h;
}

std::string hexDigits(uint64_t h) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)h);
  return buf;
}

} // namespace fbt
