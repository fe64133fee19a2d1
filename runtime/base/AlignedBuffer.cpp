//===- AlignedBuffer.cpp - zeroed, 64-byte aligned host memory ------------===//

#include "runtime/base/AlignedBuffer.h"

#include "runtime/base/Error.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace fbt {

AlignedBuffer::AlignedBuffer(size_t bytes) : size_(bytes) {
  size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
  void *p = std::aligned_alloc(64, rounded);
  if (!p)
    throw RuntimeError("out of memory allocating " + std::to_string(bytes) + " bytes");
  std::memset(p, 0, rounded);
  ptr_.reset(p);
}

} // namespace fbt
