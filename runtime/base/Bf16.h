//===- Bf16.h - bf16 <-> f32 on the host ------------------------*- C++ -*-===//
//
// bf16 is the top half of an f32. Narrowing rounds to nearest even, as the
// GPU's cvt.rn.bf16.f32 and the kernels' stores do, and keeps a NaN a (quiet)
// NaN of its sign, where rounding its bits would carry into the exponent and
// make it -0 or an infinity. The one definition: checkpoints (safetensors),
// the emulated GPU's GEMMs and the tests that compare against them.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_BASE_BF16_H
#define FBT_RUNTIME_BASE_BF16_H

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
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return (uint16_t)((u >> 16) | 0x40);
  u += 0x7fff + ((u >> 16) & 1);
  return (uint16_t)(u >> 16);
}

} // namespace fbt

#endif // FBT_RUNTIME_BASE_BF16_H
