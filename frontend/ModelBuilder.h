//===- ModelBuilder.h - model spec to fbt IR --------------------*- C++ -*-===//
//
// Builds the model-level module for a spec: one function per compiled step.
//   train_k<K>   the K-pass training objective (one per K the schedule uses)
//   prefill      a prompt batch into fresh KV caches, last state and logits
//   decode_step  one token per sequence against the KV caches, with the
//                feedback path switched per sequence (standard vs soft)
//   prefill_fused  one further pass of fused[n] prefill over the prompt
//   prefill_row, prefill_fused_row  the same over one row of the decode batch
//                (a batch of more than one): a sequence joining a running
//                batch, prefilled into its row's slice of the caches
//   prefill_row_t<T>, prefill_fused_row_t<T>  one row over T positions (a
//                quarter of max_prompt_length, a sixteenth, .. down to 16):
//                a short prompt's prefill costs what its length does
//   prefill_states, prefill_fused_states  (BuildOptions::withStates) prefill
//                and prefill_fused that also return every layer's residual
//                stream: each block's input and the top-layer state
//   mixed_n<N>   N tokens of any rows at their own positions (max_prompt_length
//                tokens, a quarter, .. while more than the batch): a server's
//                running rows' next tokens and joining rows' prompt chunks
//                in one step (chunked prefill)
// Every step takes the same parameter list first, in `parameterNames` order,
// so one set of weights serves them all.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_FRONTEND_MODELBUILDER_H
#define FBT_FRONTEND_MODELBUILDER_H

#include "frontend/Parameters.h"
#include "frontend/Spec.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>
#include <vector>

namespace fbt {

/// What a compile adds to the steps every bundle has.
struct BuildOptions {
  bool withStates = false; ///< prefill_states, prefill_fused_states (probes)
};

/// Builds the module; the caller's context must have the fbt and func
/// dialects loaded.
mlir::OwningOpRef<mlir::ModuleOp> buildModel(mlir::MLIRContext &ctx,
                                             const ModelSpec &spec,
                                             const BuildOptions &options = {});

} // namespace fbt

#endif // FBT_FRONTEND_MODELBUILDER_H
