//===- FbtInterfaces.td - fbt op interfaces ----------------*- tablegen -*-===//

#ifndef FBT_INTERFACES_TD
#define FBT_INTERFACES_TD

include "mlir/IR/OpBase.td"

def Fbt_DifferentiableOpInterface : OpInterface<"DifferentiableOpInterface"> {
  let cppNamespace = "::mlir::fbt";
  let description = [{
    An op's reverse-mode gradient rule, written once and used by
    `fbt-autodiff` wherever the op appears (every layer, every pass).
  }];
  let methods = [
    InterfaceMethod<[{
        Emits the gradients of the operands given the gradients of the
        results (a null Value where no gradient flows into a result; at least
        one is non-null). Appends one Value per operand to `operandGrads`,
        null where the operand gets no gradient (integers, masks, seeds).
      }],
      "::llvm::LogicalResult", "buildGradients",
      (ins "::mlir::OpBuilder &":$builder,
           "::llvm::ArrayRef<::mlir::Value>":$resultGrads,
           "::llvm::SmallVectorImpl<::mlir::Value> &":$operandGrads)>
  ];
}

def Fbt_InPlaceOpInterface : OpInterface<"InPlaceOpInterface"> {
  let cppNamespace = "::mlir::fbt";
  let description = [{
    An op whose result may be written into the buffer of one of its operands
    (same size, each element read before it is written): AdamW's updated
    parameter and moments, a KV cache with new rows. The memory planner
    (codegen/StepPlan) reads this to update parameters and caches in place;
    `fbt-to-kernels` carries it to the kernel call as `tied`.
  }];
  let methods = [
    InterfaceMethod<[{
        The operand whose buffer result `result` may reuse, or -1.
      }],
      "int64_t", "getTiedOperand", (ins "unsigned":$result)>
  ];
}

#endif // FBT_INTERFACES_TD
