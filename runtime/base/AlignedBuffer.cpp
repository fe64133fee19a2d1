//===- AlignedBuffer.cpp - zeroed, 64-byte aligned host memory ------------===//

#include "runtime/base/AlignedBuffer.h"

#include "runtime/base/Error.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace fbt {

void *allocateAligned(size_t bytes, const std::string &what) {
  size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
  void *p = std::aligned_alloc(64, rounded);
  if (!p)
    throw RuntimeError("out of memory allocating " + what + " (" + std::to_string(bytes) +
                       " bytes)");
  std::memset(p, 0, rounded);
  return p;
}

AlignedBuffer::AlignedBuffer(size_t bytes) : size_(bytes) {
  ptr_.reset(allocateAligned(bytes, "a host buffer"));
}

} // namespace fbt
