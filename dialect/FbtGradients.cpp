//===- FbtGradients.cpp - reverse-mode rules of the fbt ops ---------------===//
//
// One rule per op, used by fbt-autodiff wherever the op appears. A rule sees
// the gradients of the op's results and emits fbt ops for the gradients of
// its operands (null for operands that take none: ids, masks, seeds).
// Gradients wrt parameters come out per use; fbt-autodiff sums the uses.
//
//===----------------------------------------------------------------------===//

#include "dialect/FbtOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"

using namespace mlir;
using namespace mlir::fbt;

namespace {
/// dy * factor, skipping the multiply when it is the identity.
Value scaled(OpBuilder &b, Location loc, Value dy, double factor) {
  if (factor == 1.0)
    return dy;
  return ScaleOp::create(b, loc, dy.getType(), dy, b.getF64FloatAttr(factor));
}

/// Gradients of `input @ weight^T` (matmul and the tied LM head).
void linearGrads(OpBuilder &b, Location loc, Value dy, Value input,
                 Value weight, SmallVectorImpl<Value> &grads) {
  grads.push_back(
      MatmulGradInputOp::create(b, loc, input.getType(), dy, weight));
  grads.push_back(
      MatmulGradWeightOp::create(b, loc, weight.getType(), dy, input));
}
} // namespace

LogicalResult EmbeddingOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                          SmallVectorImpl<Value> &grads) {
  grads.push_back(EmbeddingGradOp::create(b, getLoc(), getTable().getType(),
                                          dys[0], getIds()));
  grads.push_back(Value());
  return success();
}

LogicalResult LMHeadOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                       SmallVectorImpl<Value> &grads) {
  linearGrads(b, getLoc(), dys[0], getInput(), getTable(), grads);
  return success();
}

LogicalResult MatmulOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                       SmallVectorImpl<Value> &grads) {
  linearGrads(b, getLoc(), dys[0], getInput(), getWeight(), grads);
  return success();
}

LogicalResult RMSNormOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                        SmallVectorImpl<Value> &grads) {
  auto g = RMSNormGradOp::create(b, getLoc(), getInput().getType(),
                                 getScale().getType(), dys[0], getInput(),
                                 getScale(), getEpsilonAttr());
  grads.append({g.getInputGrad(), g.getScaleGrad()});
  return success();
}

LogicalResult NormalizeOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                          SmallVectorImpl<Value> &grads) {
  grads.push_back(NormalizeGradOp::create(b, getLoc(), getInput().getType(),
                                          dys[0], getInput(),
                                          getEpsilonAttr()));
  return success();
}

LogicalResult RopeOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                     SmallVectorImpl<Value> &grads) {
  // A rotation's transpose is the rotation backwards.
  Value dx = RopeOp::create(b, getLoc(), getInput().getType(), dys[0],
                            getPositions(), getNumHeadsAttr(), getThetaAttr(),
                            getInverse() ? UnitAttr() : b.getUnitAttr(),
                            getPositionScaleAttr());
  grads.push_back(dx);
  if (getPositions())
    grads.push_back(Value());
  return success();
}

LogicalResult AttentionOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                          SmallVectorImpl<Value> &grads) {
  if (getQueryPositions())
    return emitOpError() << "attention against a KV cache (decoding) has no "
                            "gradient rule";
  auto g = AttentionGradOp::create(
      b, getLoc(), getQuery().getType(), getKey().getType(),
      getValue().getType(), dys[0], getQuery(), getKey(), getValue(),
      getResult(), getNumHeadsAttr());
  grads.append({g.getQueryGrad(), g.getKeyGrad(), g.getValueGrad()});
  return success();
}

LogicalResult SwiGLUOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                       SmallVectorImpl<Value> &grads) {
  auto g = SwiGLUGradOp::create(b, getLoc(), getGate().getType(),
                                getUp().getType(), dys[0], getGate(), getUp());
  grads.append({g.getGateGrad(), g.getUpGrad()});
  return success();
}

LogicalResult ResidualOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                         SmallVectorImpl<Value> &grads) {
  grads.push_back(dys[0]);
  grads.push_back(scaled(b, getLoc(), dys[0], getScale().convertToDouble()));
  return success();
}

LogicalResult FeedbackOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                         SmallVectorImpl<Value> &grads) {
  SmallVector<Type> types = {getEmbedding().getType(), getState().getType()};
  for (Value w : getWeights())
    types.push_back(w.getType());
  auto g = FeedbackGradOp::create(b, getLoc(), types, dys[0], getEmbedding(),
                                  getState(), getWeights(), getFusion());
  grads.append(g->result_begin(), g->result_end());
  return success();
}

LogicalResult ShiftRightOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                           SmallVectorImpl<Value> &grads) {
  grads.push_back(ShiftLeftOp::create(b, getLoc(), dys[0].getType(), dys[0]));
  return success();
}

LogicalResult JitterOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                       SmallVectorImpl<Value> &grads) {
  grads.append({dys[0], Value()}); // additive noise: identity Jacobian
  return success();
}

LogicalResult WhereOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                      SmallVectorImpl<Value> &grads) {
  auto g = WhereGradOp::create(b, getLoc(), dys[0].getType(),
                               dys[0].getType(), getMask(), dys[0]);
  // The mask is data (where feedback applies), not a parameter.
  grads.append({Value(), g.getOnTrueGrad(), g.getOnFalseGrad()});
  return success();
}

LogicalResult NTPLossOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                        SmallVectorImpl<Value> &grads) {
  grads.push_back(NTPLossGradOp::create(b, getLoc(), getLogits().getType(),
                                        dys[0], getLogits(), getTargets(),
                                        getIgnoreIndexAttr()));
  grads.push_back(Value());
  return success();
}

LogicalResult AddOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                    SmallVectorImpl<Value> &grads) {
  grads.append({dys[0], dys[0]});
  return success();
}

LogicalResult ScaleOp::buildGradients(OpBuilder &b, ArrayRef<Value> dys,
                                      SmallVectorImpl<Value> &grads) {
  grads.push_back(scaled(b, getLoc(), dys[0], getFactor().convertToDouble()));
  return success();
}

LogicalResult StopGradientOp::buildGradients(OpBuilder &b,
                                             ArrayRef<Value> dys,
                                             SmallVectorImpl<Value> &grads) {
  grads.push_back(Value());
  return success();
}

LogicalResult CombineLossesOp::buildGradients(OpBuilder &b,
                                              ArrayRef<Value> dys,
                                              SmallVectorImpl<Value> &grads) {
  // Only the weighted total is differentiated; pass_losses are reported. A
  // loss of weight 0 (a forward-only pass) gets no gradient at all.
  for (double w : getWeights())
    grads.push_back(dys[0] && w != 0 ? scaled(b, getLoc(), dys[0], w) : Value());
  return success();
}

LogicalResult GatedInputNormOp::buildGradients(OpBuilder &b,
                                               ArrayRef<Value> dys,
                                               SmallVectorImpl<Value> &grads) {
  // The fused backward needs both result gradients; a missing one is zero.
  auto zeros = [&](Type t) -> Value {
    auto tt = cast<RankedTensorType>(t);
    return arith::ConstantOp::create(
        b, getLoc(), tt,
        DenseElementsAttr::get(tt, FloatAttr::get(tt.getElementType(), 0.0)
                                       .getValue()));
  };
  Value dInput = dys[0] ? dys[0] : zeros(getInput().getType());
  Value dNormed = dys[1] ? dys[1] : zeros(getNormed().getType());
  auto g = GatedInputNormGradOp::create(
      b, getLoc(), getValue().getType(), getGate().getType(),
      getEmbedding().getType(), getScale().getType(), dInput, dNormed,
      getValue(), getGate(), getEmbedding(), getMask(), getScale(),
      getEpsilonAttr());
  grads.append({g.getValueGrad(), g.getGateGrad(), g.getEmbeddingGrad(),
                Value(), g.getScaleGrad()});
  return success();
}
