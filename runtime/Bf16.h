//===- Bf16.h - bf16 <-> f32 on the host ------------------------*- C++ -*-===//
//
// bf16 is the top half of an f32. Narrowing rounds to nearest even (finite
// values), as the GPU's cvt.rn.bf16.f32 and the kernels' stores do; for the
// emulated GPU's GEMMs and the tests that compare against it.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_BF16_H
#define FBT_RUNTIME_BF16_H

#include <cstdint>
#include <cstring>

namespace fbt {

inline float bf16ToFloat(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline uint16_t floatToBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}

} // namespace fbt

#endif // FBT_RUNTIME_BF16_H
