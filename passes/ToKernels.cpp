//===- ToKernels.cpp - GEMMs to library calls, the rest to kernels --------===//

#include "codegen/KernelBuilder.h"
#include "codegen/Kernels.h"
#include "dialect/FbtOps.h"
#include "passes/Passes.h"

#include "llvm/ADT/StringMap.h"

namespace mlir::fbt {
#define GEN_PASS_DEF_FBTTOKERNELS
#include "passes/Passes.h.inc"
} // namespace mlir::fbt

using namespace mlir;
using namespace mlir::fbt;

namespace {
int64_t numel(Value v) {
  return cast<RankedTensorType>(v.getType()).getNumElements();
}
int64_t lastDim(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape().back();
}

/// The GEMM form of a matmul-like op, or null if `op` is not one. Tensors are
/// row-major matrices: x [R, K], w [N, K], dy [R, N].
GemmOp toGemm(OpBuilder &b, Operation *op) {
  Location loc = op->getLoc();
  Type result = op->getResult(0).getType();
  auto gemm = [&](Value lhs, Value rhs, int64_t m, int64_t n, int64_t k,
                  bool tl, bool tr) {
    return GemmOp::create(b, loc, result, lhs, rhs, b.getI64IntegerAttr(m),
                          b.getI64IntegerAttr(n), b.getI64IntegerAttr(k),
                          tl ? b.getUnitAttr() : UnitAttr(),
                          tr ? b.getUnitAttr() : UnitAttr());
  };
  if (isa<MatmulOp, LMHeadOp>(op)) { // x @ w^T
    Value x = op->getOperand(0), w = op->getOperand(1);
    int64_t k = lastDim(x), n = numel(w) / k;
    return gemm(x, w, numel(x) / k, n, k, false, true);
  }
  if (auto g = dyn_cast<MatmulGradInputOp>(op)) { // dy @ w
    int64_t n = lastDim(g.getGrad()), k = numel(g.getWeight()) / n;
    return gemm(g.getGrad(), g.getWeight(), numel(g.getGrad()) / n, k, n,
                false, false);
  }
  if (auto g = dyn_cast<MatmulGradWeightOp>(op)) { // dy^T @ x
    int64_t n = lastDim(g.getGrad()), k = lastDim(g.getInput());
    return gemm(g.getGrad(), g.getInput(), n, k, numel(g.getGrad()) / n, true,
                false);
  }
  return {};
}

Value scalarConstant(OpBuilder &b, Location loc, double v) {
  auto t = RankedTensorType::get({}, b.getF32Type());
  return arith::ConstantOp::create(
      b, loc, t, DenseElementsAttr::get(t, b.getF32FloatAttr(v).getValue()));
}

/// Reductions whose arity grows with L (the global norm) or K (the loss
/// combination) become chains of fixed-arity links, so their kernels are
/// shared too. Returns the new ops that still need lowering.
SmallVector<Operation *> splitReduction(OpBuilder &b, Operation *op) {
  Location loc = op->getLoc();
  SmallVector<Operation *> parts;
  if (auto gn = dyn_cast<GlobalNormOp>(op)) {
    Value acc = scalarConstant(b, loc, 0);
    for (Value g : gn.getInputs()) {
      auto link = AccumulateSquaresOp::create(b, loc, acc.getType(), g, acc);
      parts.push_back(link);
      acc = link;
    }
    auto root = SqrtOp::create(b, loc, acc.getType(), acc);
    parts.push_back(root);
    gn.replaceAllUsesWith(root.getResult());
    return parts;
  }
  auto cl = cast<CombineLossesOp>(op);
  Value total = scalarConstant(b, loc, 0);
  for (auto [loss, w] : llvm::zip(cl.getLosses(), cl.getWeights())) {
    auto link = AxpyOp::create(b, loc, total.getType(), total, loss,
                               scalarConstant(b, loc, w));
    parts.push_back(link);
    total = link;
  }
  // The per-pass losses are written in place into the packed vector.
  auto pack = PackOp::create(b, loc, cl.getPassLosses().getType(), cl.getLosses());
  cl.getLoss().replaceAllUsesWith(total);
  cl.getPassLosses().replaceAllUsesWith(pack.getResult());
  return parts;
}

struct ToKernels : fbt::impl::FbtToKernelsBase<ToKernels> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (target != "cpu" && target != "gpu") {
      module.emitError() << "fbt-to-kernels: unknown target '" << target
                         << "' (expected 'cpu' or 'gpu')";
      return signalPassFailure();
    }
    kernelTarget = target == "gpu" ? KernelTarget::Gpu : KernelTarget::Cpu;
    SmallVector<func::FuncOp> steps;
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn->hasAttr("fbt.step"))
        steps.push_back(fn);

    OpBuilder kernels(module.getBodyRegion());
    kernels.setInsertionPointToEnd(module.getBody());
    for (func::FuncOp fn : steps) {
      SmallVector<Operation *> ops;
      for (Operation &op : fn.getBody().front().without_terminator())
        ops.push_back(&op);
      for (Operation *op : ops)
        if (failed(lower(op, kernels)))
          return signalPassFailure();
      fn->setAttr("fbt.kernels", UnitAttr::get(&getContext()));
    }
  }

  LogicalResult lower(Operation *op, OpBuilder &kernels) {
    OpBuilder b(op);
    // Constants stay: the memory plan turns them into initialized buffers.
    if (isa<arith::ConstantOp>(op))
      return success();
    if (auto stop = dyn_cast<StopGradientOp>(op)) {
      stop.replaceAllUsesWith(stop.getInput());
      stop.erase();
      return success();
    }
    if (isa<GlobalNormOp, CombineLossesOp>(op)) {
      SmallVector<Operation *> parts = splitReduction(b, op);
      op->erase();
      for (Operation *part : parts)
        if (failed(lower(part, kernels)))
          return failure();
      return success();
    }
    if (GemmOp gemm = toGemm(b, op)) {
      op->replaceAllUsesWith(gemm);
      op->erase();
      return success();
    }
    std::string key = kernelKey(op);
    auto it = byKey.find(key);
    if (it == byKey.end()) {
      std::string name = "k" + std::to_string(byKey.size()) + "_" + kernelStem(op);
      if (failed(buildKernel(kernels, op, name, kernelTarget)))
        return failure();
      it = byKey.insert({key, name}).first;
    }
    SmallVector<Value> operands(op->getOperands());
    for (Attribute a : dataOperands(op))
      operands.push_back(arith::ConstantOp::create(b, op->getLoc(), cast<TypedAttr>(a)));
    auto call = CallKernelOp::create(b, op->getLoc(), op->getResultTypes(),
                                     it->second, operands);
    op->replaceAllUsesWith(call);
    op->erase();
    return success();
  }

  llvm::StringMap<std::string> byKey;
  KernelTarget kernelTarget = KernelTarget::Cpu;
};
} // namespace
