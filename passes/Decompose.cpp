//===- Decompose.cpp - composite ops into GEMMs and primitives ------------===//
//
// After this pass every op is either a GEMM (matmul, lm_head and their
// gradients) or a primitive that one generated kernel implements.
//
//===----------------------------------------------------------------------===//

#include "dialect/FbtOps.h"
#include "passes/Passes.h"

namespace mlir::fbt {
#define GEN_PASS_DEF_FBTDECOMPOSE
#include "passes/Passes.h.inc"
} // namespace mlir::fbt

using namespace mlir;
using namespace mlir::fbt;

namespace {
void decompose(FeedbackOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  Type x = op.getType();
  Value e = op.getEmbedding(), s = op.getState();
  ValueRange w = op.getWeights();
  Value result;
  switch (op.getFusion()) {
  case FusionKind::glu: {
    Value value = MatmulOp::create(b, loc, x, s, w[0]);
    Value gate = MatmulOp::create(b, loc, x, e, w[1]);
    result = GluGateOp::create(b, loc, x, value, gate);
    break;
  }
  case FusionKind::add:
    result = AddOp::create(b, loc, x, e, MatmulOp::create(b, loc, x, s, w[0]));
    break;
  case FusionKind::concat: {
    auto shape = llvm::to_vector(cast<RankedTensorType>(x).getShape());
    shape.back() *= 2;
    auto wide = RankedTensorType::get(shape, cast<RankedTensorType>(x).getElementType());
    Value cat = ConcatOp::create(b, loc, wide, e, s);
    result = MatmulOp::create(b, loc, x, cat, w[0]);
    break;
  }
  }
  op.replaceAllUsesWith(result);
  op.erase();
}

void decompose(FeedbackGradOp op) {
  OpBuilder b(op);
  Location loc = op.getLoc();
  Type x = op.getEmbedding().getType();
  Value dy = op.getGrad(), e = op.getEmbedding(), s = op.getState();
  ValueRange w = op.getWeights();
  SmallVector<Value> grads; // de, ds, dW...
  auto gradInput = [&](Value d, Value weight) -> Value {
    return MatmulGradInputOp::create(b, loc, x, d, weight);
  };
  auto gradWeight = [&](Value d, Value in, Value weight) -> Value {
    return MatmulGradWeightOp::create(b, loc, weight.getType(), d, in);
  };
  switch (op.getFusion()) {
  case FusionKind::glu: {
    // Recomputed here; CSE merges them with the forward GEMMs.
    Value value = MatmulOp::create(b, loc, x, s, w[0]);
    Value gate = MatmulOp::create(b, loc, x, e, w[1]);
    auto g = GluGateGradOp::create(b, loc, x, x, dy, value, gate);
    grads = {gradInput(g.getGateGrad(), w[1]), gradInput(g.getValueGrad(), w[0]),
             gradWeight(g.getValueGrad(), s, w[0]),
             gradWeight(g.getGateGrad(), e, w[1])};
    break;
  }
  case FusionKind::add:
    grads = {dy, gradInput(dy, w[0]), gradWeight(dy, s, w[0])};
    break;
  case FusionKind::concat: {
    auto shape = llvm::to_vector(cast<RankedTensorType>(x).getShape());
    shape.back() *= 2;
    auto wide = RankedTensorType::get(shape, cast<RankedTensorType>(x).getElementType());
    Value cat = ConcatOp::create(b, loc, wide, e, s);
    Value dcat = MatmulGradInputOp::create(b, loc, wide, dy, w[0]);
    auto split = SplitOp::create(b, loc, x, x, dcat);
    grads = {split.getLhs(), split.getRhs(), gradWeight(dy, cat, w[0])};
    break;
  }
  }
  op.replaceAllUsesWith(grads);
  op.erase();
}

struct Decompose : fbt::impl::FbtDecomposeBase<Decompose> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<Operation *> ops;
    getOperation().walk([&](Operation *op) {
      if (isa<FeedbackOp, FeedbackGradOp>(op))
        ops.push_back(op);
    });
    for (Operation *op : ops) {
      if (auto fb = dyn_cast<FeedbackOp>(op))
        decompose(fb);
      else
        decompose(cast<FeedbackGradOp>(op));
    }
  }
};
} // namespace
