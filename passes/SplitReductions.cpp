//===- SplitReductions.cpp - variadic reductions to fixed-arity chains ----===//
//
// The global gradient norm takes one operand per parameter (its arity grows
// with L) and the loss combination one per pass (it grows with K). A kernel
// per arity would make the kernel count grow with the model: each becomes a
// chain of fixed-arity links (fbt.accumulate_squares, fbt.axpy), so every
// link shares one kernel whatever L and K are.
//
//===----------------------------------------------------------------------===//

#include "dialect/FbtOps.h"
#include "passes/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::fbt {
#define GEN_PASS_DEF_FBTSPLITREDUCTIONS
#include "passes/Passes.h.inc"
} // namespace mlir::fbt

using namespace mlir;
using namespace mlir::fbt;

namespace {
Value scalarConstant(PatternRewriter &b, Location loc, double v) {
  auto t = RankedTensorType::get({}, b.getF32Type());
  return arith::ConstantOp::create(
      b, loc, t, DenseElementsAttr::get(t, b.getF32FloatAttr(v).getValue()));
}

/// global_norm(g1..gn) = sqrt(acc_n), acc_i = acc_{i-1} + sum(g_i^2).
struct SplitGlobalNorm : OpRewritePattern<GlobalNormOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(GlobalNormOp op,
                                PatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value acc = scalarConstant(b, loc, 0);
    for (Value g : op.getInputs())
      acc = AccumulateSquaresOp::create(b, loc, acc.getType(), g, acc);
    b.replaceOpWithNewOp<SqrtOp>(op, acc.getType(), acc);
    return success();
  }
};

/// combine_losses: the total as axpy links (total += w_k * loss_k), the
/// per-pass losses as a pack (the planner gives its operands the pack's
/// slots, so they are written in place).
struct SplitCombineLosses : OpRewritePattern<CombineLossesOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CombineLossesOp op,
                                PatternRewriter &b) const override {
    Location loc = op.getLoc();
    Value total = scalarConstant(b, loc, 0);
    for (auto [loss, w] : llvm::zip(op.getLosses(), op.getWeights()))
      total = AxpyOp::create(b, loc, total.getType(), total, loss,
                             scalarConstant(b, loc, w));
    auto pack = PackOp::create(b, loc, op.getPassLosses().getType(), op.getLosses());
    b.replaceOp(op, {total, pack.getResult()});
    return success();
  }
};

struct SplitReductions
    : fbt::impl::FbtSplitReductionsBase<SplitReductions> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<SplitGlobalNorm, SplitCombineLosses>(&getContext());
    // One application each, in program order: no folding, so the chain's
    // order (and thus its rounding) is the operands' order.
    GreedyRewriteConfig config;
    config.enableFolding(false);
    config.setRegionSimplificationLevel(GreedySimplifyRegionLevel::Disabled);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      signalPassFailure();
  }
};
} // namespace
