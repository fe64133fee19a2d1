//===- GemmsToLibrary.cpp - matmul-like ops to library GEMMs --------------===//
//
// matmul, lm_head and the two matmul gradients become `fbt.gemm`: a call of
// the platform's GEMM (BLAS on CPUs, cuBLASLt on GPUs) on row-major views of
// their operands. Tensors are row-major matrices: x [R, K], w [N, K],
// dy [R, N]. Storage narrowing (bf16 operands) is fbt-to-kernels' business.
//
//===----------------------------------------------------------------------===//

#include "dialect/FbtOps.h"
#include "passes/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::fbt {
#define GEN_PASS_DEF_FBTGEMMSTOLIBRARY
#include "passes/Passes.h.inc"
} // namespace mlir::fbt

using namespace mlir;
using namespace mlir::fbt;

namespace {
int64_t numel(Value v) { return cast<RankedTensorType>(v.getType()).getNumElements(); }
int64_t lastDim(Value v) { return cast<RankedTensorType>(v.getType()).getShape().back(); }

void replaceWithGemm(PatternRewriter &b, Operation *op, Value lhs, Value rhs,
                     int64_t m, int64_t n, int64_t k, bool tl, bool tr) {
  b.replaceOpWithNewOp<GemmOp>(op, op->getResult(0).getType(), lhs, rhs,
                               b.getI64IntegerAttr(m), b.getI64IntegerAttr(n),
                               b.getI64IntegerAttr(k),
                               tl ? b.getUnitAttr() : UnitAttr(),
                               tr ? b.getUnitAttr() : UnitAttr());
}

/// x @ w^T (matmul, lm_head): [R, K] x [N, K]^T.
template <typename Op>
struct TimesWeightT : OpRewritePattern<Op> {
  using OpRewritePattern<Op>::OpRewritePattern;
  LogicalResult matchAndRewrite(Op op, PatternRewriter &b) const override {
    Value x = op->getOperand(0), w = op->getOperand(1);
    int64_t k = lastDim(x);
    replaceWithGemm(b, op, x, w, numel(x) / k, numel(w) / k, k, false, true);
    return success();
  }
};

/// dx = dy @ w: [R, N] x [N, K].
struct GradInput : OpRewritePattern<MatmulGradInputOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatmulGradInputOp op,
                                PatternRewriter &b) const override {
    int64_t n = lastDim(op.getGrad()), k = numel(op.getWeight()) / n;
    replaceWithGemm(b, op, op.getGrad(), op.getWeight(), numel(op.getGrad()) / n,
                    k, n, false, false);
    return success();
  }
};

/// dw = dy^T @ x: [R, N]^T x [R, K].
struct GradWeight : OpRewritePattern<MatmulGradWeightOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MatmulGradWeightOp op,
                                PatternRewriter &b) const override {
    int64_t n = lastDim(op.getGrad()), k = lastDim(op.getInput());
    replaceWithGemm(b, op, op.getGrad(), op.getInput(), n, k,
                    numel(op.getGrad()) / n, true, false);
    return success();
  }
};

struct GemmsToLibrary : fbt::impl::FbtGemmsToLibraryBase<GemmsToLibrary> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<TimesWeightT<MatmulOp>, TimesWeightT<LMHeadOp>, GradInput,
                 GradWeight>(&getContext());
    GreedyRewriteConfig config;
    config.enableFolding(false);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns), config)))
      signalPassFailure();
  }
};
} // namespace
