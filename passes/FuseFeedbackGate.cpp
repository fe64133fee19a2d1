//===- FuseFeedbackGate.cpp - GLU gate into the first layer's norm --------===//
//
//   %f = fbt.feedback glu %e, %s, %W_U, %W_G
//   %u = fbt.where %m, %f, %e
//   %n = fbt.rmsnorm %u, %w
// becomes
//   %v = fbt.matmul %s, %W_U
//   %g = fbt.matmul %e, %W_G
//   %u, %n = fbt.gated_input_norm %v, %g, %e, %m, %w
//
// so the feedback path costs its two D x D GEMMs and one epilogue that reads
// the GEMM outputs once, instead of three elementwise round trips.
//
//===----------------------------------------------------------------------===//

#include "dialect/FbtOps.h"
#include "passes/Passes.h"

namespace mlir::fbt {
#define GEN_PASS_DEF_FBTFUSEFEEDBACKGATE
#include "passes/Passes.h.inc"
} // namespace mlir::fbt

using namespace mlir;
using namespace mlir::fbt;

namespace {
/// The first-layer norm reading the selected input, if there is one.
RMSNormOp firstNorm(Value input) {
  for (Operation *user : input.getUsers())
    if (auto norm = dyn_cast<RMSNormOp>(user); norm && norm.getInput() == input)
      return norm;
  return {};
}

bool fuse(FeedbackOp fb) {
  if (fb.getFusion() != FusionKind::glu || !fb->hasOneUse())
    return false;
  auto where = dyn_cast<WhereOp>(*fb->user_begin());
  if (!where || where.getOnTrue() != fb.getResult() ||
      where.getOnFalse() != fb.getEmbedding())
    return false;
  RMSNormOp norm = firstNorm(where.getResult());
  if (!norm)
    return false;

  // Build before the norm: every operand is defined by then.
  OpBuilder b(norm);
  Location loc = fb.getLoc();
  Type x = fb.getType();
  Value value = MatmulOp::create(b, loc, x, fb.getState(), fb.getWeights()[0]);
  Value gate = MatmulOp::create(b, loc, x, fb.getEmbedding(), fb.getWeights()[1]);
  auto fused = GatedInputNormOp::create(
      b, loc, TypeRange{x, x}, value, gate, fb.getEmbedding(), where.getMask(),
      norm.getScale(), norm.getEpsilonAttr());
  norm.getResult().replaceAllUsesWith(fused.getNormed());
  where.getResult().replaceAllUsesWith(fused.getInput());
  norm.erase();
  where.erase();
  fb.erase();
  return true;
}

struct FuseFeedbackGate
    : fbt::impl::FbtFuseFeedbackGateBase<FuseFeedbackGate> {
  using Base::Base;
  void runOnOperation() override {
    SmallVector<FeedbackOp> ops;
    getOperation().walk([&](FeedbackOp op) { ops.push_back(op); });
    for (FeedbackOp op : ops)
      (void)fuse(op);
  }
};
} // namespace
