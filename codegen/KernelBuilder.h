//===- KernelBuilder.h - a small DSL for writing kernels in IR --*- C++ -*-===//
//
// Kernels are func.func ops over flat (1-D) memrefs, built from scf loops and
// arith/math ops. The outermost loop of a kernel is an scf.parallel over
// independent rows: the CPU target runs it as a loop, the GPU target maps it
// to blocks. KernelBuilder keeps the generators short and readable:
//
//   kb.parallel(rows, [&](Value r) {
//     Value ss = kb.sum(cols, [&](Value c) { Value v = kb.load(x, r*cols+c); return v*v; });
//     ...
//   });
//
//===----------------------------------------------------------------------===//

#ifndef FBT_CODEGEN_KERNELBUILDER_H
#define FBT_CODEGEN_KERNELBUILDER_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <functional>

namespace mlir::fbt {

class KernelBuilder {
public:
  /// Starts `name(args...)` at the builder's point, args being flat memrefs
  /// of `types`' element types and element counts. The body is open until
  /// finish().
  KernelBuilder(OpBuilder &b, Location loc, StringRef name,
                ArrayRef<Type> elementTypes, ArrayRef<int64_t> sizes);

  func::FuncOp finish();
  Value arg(unsigned i) { return fn.getArgument(i); }

  // Constants.
  Value index(int64_t v);
  Value f32(double v);
  Value i64(int64_t v);

  // Memory (flat index).
  Value load(Value mem, Value idx);
  void store(Value v, Value mem, Value idx);

  // Loops. parallel() is the kernel's grid: independent iterations.
  void parallel(int64_t n, function_ref<void(Value)> body);
  void loop(int64_t n, function_ref<void(Value)> body);
  void loop(Value lo, Value hi, function_ref<void(Value)> body);
  /// Sum over [0, n) (f32), in a loop-carried accumulator.
  Value sum(int64_t n, function_ref<Value(Value)> term);
  /// A loop carrying several values: body(iv, carried) -> next values.
  SmallVector<Value> fold(Value lo, Value hi, ValueRange init,
                          function_ref<SmallVector<Value>(Value, ValueRange)> body);
  void ifThen(Value cond, function_ref<void()> then);
  Value select(Value cond, Value a, Value b);

  // Index arithmetic.
  Value iadd(Value a, Value b);
  Value imul(Value a, Value b);
  Value iadd(Value a, int64_t b) { return iadd(a, index(b)); }
  Value imul(Value a, int64_t b) { return imul(a, index(b)); }
  Value isub(Value a, Value b);
  Value idiv(Value a, int64_t b);
  Value irem(Value a, int64_t b);
  Value icmp(arith::CmpIPredicate p, Value a, Value b);
  Value toIndex(Value intValue);
  Value toF32(Value intOrIndex);

  // Float arithmetic.
  Value add(Value a, Value b);
  Value sub(Value a, Value b);
  Value mul(Value a, Value b);
  Value div(Value a, Value b);
  Value neg(Value a);
  Value max(Value a, Value b);
  Value min(Value a, Value b);
  Value exp(Value a);
  Value log(Value a);
  Value sqrt(Value a);
  Value rsqrt(Value a);
  Value cos(Value a);
  Value sin(Value a);
  Value sigmoid(Value a);
  Value fcmp(arith::CmpFPredicate p, Value a, Value b);

  /// The counter-based uniform in [0, 1) of DESIGN.md (fbt.jitter): seed and
  /// stream are i64, counter an index.
  Value uniform(Value seed, Value stream, Value counter);

  OpBuilder &builder() { return b; }
  Location location() { return loc; }

private:
  Value mix(Value z);

  OpBuilder &b;
  Location loc;
  func::FuncOp fn;
};

} // namespace mlir::fbt

#endif // FBT_CODEGEN_KERNELBUILDER_H
