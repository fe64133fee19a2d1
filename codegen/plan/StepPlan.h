//===- StepPlan.h - a compiled step as buffers and calls --------*- C++ -*-===//
//
// After fbt-to-kernels a step function is a straight line of fbt.gemm and
// fbt.call_kernel ops on tensors. The plan gives every tensor a place:
//   input  i   an argument the runtime binds (parameters, batch, caches)
//   output j   a result the runtime reads back
//   const  c   a splat constant the runtime fills once at load
//   arena  off temporaries, packed into one arena by liveness
// Results marked `fbt.updates = i` are written in place into input i (the
// parameters and moments under AdamW, the KV caches), so a training step
// allocates no second copy of the model.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_CODEGEN_PLAN_STEPPLAN_H
#define FBT_CODEGEN_PLAN_STEPPLAN_H

#include "runtime/format/BundleFormat.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>
#include <vector>

namespace mlir::fbt {

// The plan's structs are the bundle format's (runtime/format/BundleFormat.h): what
// this file fills is what the runtime reads.
using ::fbt::BufferRef;
using ::fbt::ConstantSpec;
using ::fbt::OutputCopy;
using ::fbt::PlanOp;
using ::fbt::StepPlan;
using ::fbt::TensorSpec;

/// Plans a step function lowered by fbt-to-kernels.
FailureOr<StepPlan> planStep(func::FuncOp step);

/// The element type of `t` (a tensor, a memref or an element type) as a
/// plan spells it (f32, bf16, f16, i8, i32, i64): the one mapping from the
/// IR's types to the runtime's, for the plans' buffers and the kernel
/// variants' arguments alike.
::fbt::DType planDType(Type t);

} // namespace mlir::fbt

#endif // FBT_CODEGEN_PLAN_STEPPLAN_H
