//===- Kernels.cpp - kernel keys and dispatch to the generators -----------===//

#include "codegen/kernels/Kernels.h"

#include "codegen/kernels/KernelBuilder.h"
#include "dialect/FbtOps.h"

#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::fbt;

std::pair<Type, int64_t> mlir::fbt::flatBuffer(Value v) {
  if (auto t = dyn_cast<RankedTensorType>(v.getType()))
    return {t.getElementType(), std::max<int64_t>(t.getNumElements(), 1)};
  return {v.getType(), 1}; // a scalar (the i64 seed)
}

std::string mlir::fbt::kernelStem(Operation *op) {
  // Products with int8 activations are other kernels: say so in profiles.
  if (auto q = dyn_cast<QuantizedMatmulOp>(op); q && q.getInt8Activations())
    return "quantized_matmul_a8";
  if (auto q = dyn_cast<QuantizedMatmulsOp>(op); q && q.getInt8Activations())
    return "quantized_matmuls_a8";
  return op->getName().stripDialect().str();
}

KernelKey mlir::fbt::kernelKey(Operation *op, TypeRange storedResults) {
  KernelKey key{op->getName().getAsOpaquePointer()};
  for (Type t : op->getOperandTypes())
    key.push_back(t.getAsOpaquePointer());
  key.push_back(nullptr); // operands | results
  for (Type t : storedResults)
    key.push_back(t.getAsOpaquePointer());
  // Attributes are part of the code (epsilon, heads, theta), except the
  // ones passed as data (jitter's stream) and the dialect's discardable
  // ones, which say where a call runs (fbt.shard), not what it computes.
  SmallVector<NamedAttribute> code;
  for (NamedAttribute a : op->getAttrs())
    if (!isDataAttribute(op, a.getName()) && !a.getName().getValue().starts_with("fbt."))
      code.push_back(a);
  key.push_back(DictionaryAttr::get(op->getContext(), code).getAsOpaquePointer());
  return key;
}

bool mlir::fbt::isDataAttribute(Operation *op, StringAttr name) {
  return (isa<JitterOp>(op) && name.getValue() == "stream") ||
         (isa<ScaleOp>(op) && name.getValue() == "factor");
}

SmallVector<Attribute> mlir::fbt::dataOperands(Operation *op) {
  if (auto j = dyn_cast<JitterOp>(op))
    return {j.getStreamAttr()};
  // Loss weights lambda/(K-1) differ with K; as data, one kernel serves all.
  if (auto s = dyn_cast<ScaleOp>(op))
    return {FloatAttr::get(Float32Type::get(op->getContext()),
                           s.getFactor().convertToDouble())};
  return {};
}

FailureOr<func::FuncOp> mlir::fbt::buildKernel(OpBuilder &b, Operation *op,
                                               StringRef name,
                                               KernelTarget target,
                                               ArrayRef<Type> resultTypes,
                                               const KernelConfig &config,
                                               CpuVectors vectors) {
  SmallVector<Type> types;
  SmallVector<int64_t> sizes;
  for (Value v : op->getOperands()) {
    auto [t, n] = flatBuffer(v);
    types.push_back(t);
    sizes.push_back(n);
  }
  for (Attribute a : dataOperands(op)) {
    types.push_back(cast<TypedAttr>(a).getType());
    sizes.push_back(1);
  }
  for (Value v : op->getResults()) {
    auto [t, n] = flatBuffer(v);
    types.push_back(resultTypes.empty() ? t
                                        : resultTypes[cast<OpResult>(v).getResultNumber()]);
    sizes.push_back(n);
  }
  KernelBuilder kb(b, op->getLoc(), name, types, sizes, target);
  kb.configure(config);
  kb.setCpuVectors(vectors);
  for (auto gen : {buildElementwiseKernel, buildNormKernel,
                   buildAttentionKernel, buildTokenKernel, buildQuantKernel}) {
    FailureOr<func::FuncOp> fn = gen(kb, op);
    if (failed(fn))
      continue;
    // Distinct buffers never overlap where one is written (the memory plan
    // keeps a call's inputs and outputs apart), which lets LLVM keep values
    // in registers and vectorize. The kernels the runtime may run in place
    // (InPlaceOpInterface: AdamW, KV-cache writes) are the exception.
    if (!isa<InPlaceOpInterface>(op))
      for (unsigned i = 0; i < fn->getNumArguments(); ++i)
        fn->setArgAttr(i, "llvm.noalias", b.getUnitAttr());
    return fn;
  }
  kb.finish().erase();
  return op->emitOpError() << "has no kernel and no library call "
                              "(fbt-to-kernels)";
}

func::FuncOp mlir::fbt::buildCastKernel(OpBuilder &b, Location loc,
                                        StringRef name, int64_t n, Type from,
                                        Type to, KernelTarget target) {
  KernelBuilder kb(b, loc, name, {from, to}, {n, n}, target);
  kb.parallel(n, [&](Value i) { kb.store(kb.load(kb.arg(0), i), kb.arg(1), i); });
  func::FuncOp fn = kb.finish();
  for (unsigned i = 0; i < 2; ++i)
    fn.setArgAttr(i, "llvm.noalias", b.getUnitAttr());
  return fn;
}
