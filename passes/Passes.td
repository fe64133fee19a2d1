//===- Passes.td - fbt passes ------------------------------*- tablegen -*-===//

#ifndef FBT_PASSES_TD
#define FBT_PASSES_TD

include "mlir/Pass/PassBase.td"

def FbtExpandMultipass : Pass<"fbt-expand-multipass", "::mlir::ModuleOp"> {
  let summary = "Unroll fbt.multipass into K chained full-sequence passes";
  let description = [{
    Pass 1 runs the body on the plain input; pass k > 1 runs it on the
    feedback region applied to (plain input, shift_right(h_{k-1})), with
    `fbt.stop_gradient` on the carried state under `detach_state` and jitter
    stream k. The passes reference the same parameter values: nothing is
    copied but the ops. The losses combine as `L_1 + lambda*mean(L_2..L_K)`.
  }];
  let options = [
    Option<"passes", "passes", "int64_t", /*default=*/"0",
           "Expand with this K instead of the op's own (0: as stated)">
  ];
  let dependentDialects = ["::mlir::fbt::FbtDialect"];
}

def FbtAutodiff : Pass<"fbt-autodiff", "::mlir::ModuleOp"> {
  let summary = "Reverse-mode differentiation of the training objective";
  let description = [{
    For every function marked `fbt.step = "train"` returning the loss first,
    appends the gradient of the loss wrt each parameter (arguments marked
    `fbt.param`) to the results, in parameter order. Gradients flowing into
    a value from several uses (later passes through the carried state, the
    tied embedding and LM head) are summed, so each parameter gets exactly
    one gradient. Each op's rule comes from DifferentiableOpInterface; an op
    without one on the gradient path is an error.
  }];
  let dependentDialects = ["::mlir::fbt::FbtDialect", "::mlir::arith::ArithDialect"];
}

#endif // FBT_PASSES_TD
