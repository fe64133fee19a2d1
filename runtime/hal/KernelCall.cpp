//===- KernelCall.cpp - how a generated kernel is called -------------------===//

#include "runtime/hal/KernelCall.h"

#include "runtime/base/Error.h"

namespace fbt {

void callKernel(KernelFn k, void *const *a, size_t n) {
  using P = void *;
  switch (n) {
#define FBT_ARITY(N, ...)                                                      \
  case N:                                                                      \
    reinterpret_cast<void (*)(__VA_ARGS__)>(k)
    FBT_ARITY(1, P)(a[0]); return;
    FBT_ARITY(2, P, P)(a[0], a[1]); return;
    FBT_ARITY(3, P, P, P)(a[0], a[1], a[2]); return;
    FBT_ARITY(4, P, P, P, P)(a[0], a[1], a[2], a[3]); return;
    FBT_ARITY(5, P, P, P, P, P)(a[0], a[1], a[2], a[3], a[4]); return;
    FBT_ARITY(6, P, P, P, P, P, P)(a[0], a[1], a[2], a[3], a[4], a[5]); return;
    FBT_ARITY(7, P, P, P, P, P, P, P)(a[0], a[1], a[2], a[3], a[4], a[5], a[6]); return;
    FBT_ARITY(8, P, P, P, P, P, P, P, P)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]); return;
    FBT_ARITY(9, P, P, P, P, P, P, P, P, P)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8]); return;
    FBT_ARITY(10, P, P, P, P, P, P, P, P, P, P)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9]); return;
    FBT_ARITY(11, P, P, P, P, P, P, P, P, P, P, P)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10]); return;
    FBT_ARITY(12, P, P, P, P, P, P, P, P, P, P, P, P)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11]); return;
#undef FBT_ARITY
  default:
    throw RuntimeError("a kernel with " + std::to_string(n) +
                       " buffers is beyond this runtime's calling table");
  }
}

} // namespace fbt
