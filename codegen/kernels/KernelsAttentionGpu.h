//===- KernelsAttentionGpu.h - attention mapped to GPU warps -----*- C++ -*-===//
//
// The GPU forms of attention and its gradient (see the .cpp). Both take the
// same arguments as the CPU kernels of KernelsAttention.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_CODEGEN_KERNELS_KERNELSATTENTIONGPU_H
#define FBT_CODEGEN_KERNELS_KERNELSATTENTIONGPU_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::fbt {

class KernelBuilder;

/// Where attention query `id` = (b * H + head) * T + tq works: its head's
/// first channel in q and out, its row's head in K and V (S rows), and the
/// last key it sees (tq, or its cache position, argument 3; 0 for a position
/// outside the cache, a padding query). Its row is b, or with `kvRows` > 0
/// its entry of the query rows (argument 4), one of the cache's kvRows.
struct AttentionQuery {
  Value base, kvBase, last;
};
AttentionQuery attentionQuery(KernelBuilder &kb, Value id, int64_t t, int64_t s,
                              int64_t d, int64_t heads, bool hasPositions,
                              int64_t kvRows = 0);

/// q [B,T,D], k, v [B,S,D] (or [R,S,D] with query rows), [positions [B,T]],
/// [query rows [B,T]], out [B,T,D]; `outArg` is the output's argument number.
FailureOr<func::FuncOp> buildAttentionGpu(KernelBuilder &kb, int64_t batch,
                                          int64_t t, int64_t s, int64_t d,
                                          int64_t heads, bool hasPositions,
                                          int64_t kvRows, unsigned outArg);

/// dout, q, k, v, out | dq, dk, dv, all [B,T,D], causal.
FailureOr<func::FuncOp> buildAttentionGradGpu(KernelBuilder &kb, int64_t batch,
                                              int64_t t, int64_t d,
                                              int64_t heads);

} // namespace mlir::fbt

#endif // FBT_CODEGEN_KERNELS_KERNELSATTENTIONGPU_H
