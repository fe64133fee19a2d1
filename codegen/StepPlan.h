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

#ifndef FBT_CODEGEN_STEPPLAN_H
#define FBT_CODEGEN_STEPPLAN_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/Support/JSON.h"

#include <string>
#include <vector>

namespace mlir::fbt {

struct BufferRef {
  enum class Kind { Input, Output, Constant, Arena };
  Kind kind = Kind::Arena;
  int64_t index = 0;  ///< input/output/constant number (unused for the arena)
  int64_t offset = 0; ///< bytes into that buffer (the arena offset)
  int64_t bytes = 0;
};

struct TensorInfo {
  std::string name;
  std::string dtype; ///< "f32", "i32", "i64"
  std::vector<int64_t> shape;
  int64_t bytes = 0;
  bool param = false;
  int64_t updates = -1; ///< outputs: the input written in place, or -1
};

/// An output that no op computes (a constant, an input passed through) is
/// copied from its source after the step.
struct OutputCopy {
  int64_t output = 0;
  BufferRef source;
};

struct ConstantInfo {
  std::string dtype;
  int64_t count = 0;
  double value = 0;
};

struct PlanOp {
  std::string kernel; ///< kernel symbol, or "" for a GEMM
  int64_t m = 0, n = 0, k = 0;
  bool transposeLhs = false, transposeRhs = false;
  /// A GEMM's operand and result element types (bf16 storage), f32 if empty.
  std::string lhsType = "f32", rhsType = "f32", resultType = "f32";
  std::vector<BufferRef> args; ///< operands then results
};

struct StepPlan {
  std::string name, kind;
  int64_t passes = 0;
  std::vector<TensorInfo> inputs, outputs;
  std::vector<ConstantInfo> constants;
  std::vector<PlanOp> ops;
  std::vector<OutputCopy> copies;
  int64_t arenaBytes = 0;
};

/// Plans a step function lowered by fbt-to-kernels.
FailureOr<StepPlan> planStep(func::FuncOp step);

llvm::json::Value toJson(const StepPlan &plan);

} // namespace mlir::fbt

#endif // FBT_CODEGEN_STEPPLAN_H
