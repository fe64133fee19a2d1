//===- Kernels.h - generated kernels for fbt primitives ---------*- C++ -*-===//
//
// Every fbt primitive that is not a GEMM runs as a kernel generated here, in
// scf/arith/math/memref IR, specialized to its shapes and attributes. A
// kernel takes one flat memref per operand, then one per result (a scalar,
// tensor<f32> or the i64 seed, is a one-element memref).
//
//===----------------------------------------------------------------------===//

#ifndef FBT_CODEGEN_KERNELS_KERNELS_H
#define FBT_CODEGEN_KERNELS_KERNELS_H

#include "codegen/kernels/KernelConfig.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <string>
#include <vector>

namespace mlir::fbt {

class KernelBuilder;
enum class KernelTarget;

/// On a kernel argument (a result buffer): the kernel writes it before it
/// has last read its operands, so the buffer may share no byte with theirs.
/// fbtc lists such arguments in the bundle ("early_writes"), and the loader
/// checks every call keeps them apart.
constexpr llvm::StringLiteral kEarlyWriteAttr = "fbt.early_write";

/// What makes a kernel's code: the op, its operand types, the types its
/// results are stored with, and its attributes other than data ones. Every
/// part is uniqued by the MLIRContext, so a key is their addresses, compared
/// as such. Ops with equal keys share a kernel (every layer, pass and K).
using KernelKey = std::vector<const void *>;
KernelKey kernelKey(Operation *op, TypeRange storedResults);

/// A short readable stem for the kernel's symbol, e.g. "rmsnorm".
std::string kernelStem(Operation *op);

/// Attributes the kernel reads as data rather than bakes in, so that one
/// kernel serves ops that differ only in them (jitter's per-pass stream).
/// They are appended, as one-element buffers, after the operands.
SmallVector<Attribute> dataOperands(Operation *op);
bool isDataAttribute(Operation *op, StringAttr name);

/// Builds the kernel for `op` named `name` at the builder's point, mapped
/// for `target`; an op no generator knows is an error on the op. Operand
/// buffers take their element types from the operands; `resultTypes`, if
/// given, overrides the results' (bf16 storage).
/// `config` overrides the generator's knobs (KernelConfig.h).
FailureOr<func::FuncOp> buildKernel(OpBuilder &b, Operation *op,
                                    StringRef name, KernelTarget target,
                                    ArrayRef<Type> resultTypes = {},
                                    const KernelConfig &config = {},
                                    CpuVectors vectors = CpuVectors::Avx2);

/// A kernel copying n elements of one float type into another (f32 to bf16
/// for the GEMMs' operands).
func::FuncOp buildCastKernel(OpBuilder &b, Location loc, StringRef name,
                             int64_t n, Type from, Type to, KernelTarget target);

/// The flat memref element type and size of an operand or result value.
std::pair<Type, int64_t> flatBuffer(Value v);

// Per-family generators (Kernels*.cpp). Each returns failure() when `op` is
// not of its family.
FailureOr<func::FuncOp> buildElementwiseKernel(KernelBuilder &kb, Operation *op);
FailureOr<func::FuncOp> buildNormKernel(KernelBuilder &kb, Operation *op);
FailureOr<func::FuncOp> buildAttentionKernel(KernelBuilder &kb, Operation *op);
FailureOr<func::FuncOp> buildTokenKernel(KernelBuilder &kb, Operation *op);
FailureOr<func::FuncOp> buildQuantKernel(KernelBuilder &kb, Operation *op);

} // namespace mlir::fbt

#endif // FBT_CODEGEN_KERNELS_KERNELS_H
