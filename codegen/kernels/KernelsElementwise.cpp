//===- KernelsElementwise.cpp - pointwise and row-shift kernels -----------===//
//
// One parallel loop over elements (or rows, for shifts and selects).
//
//===----------------------------------------------------------------------===//

#include "codegen/kernels/KernelBuilder.h"
#include "codegen/kernels/Kernels.h"
#include "dialect/FbtOps.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <optional>

using namespace mlir;
using namespace mlir::fbt;

namespace {
int64_t numel(Value v) { return flatBuffer(v).second; }
ArrayRef<int64_t> shape(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}
double attrF(FloatAttr a) { return a.getValueAsDouble(); }

/// out[i] = f(in_0[i], in_1[i], ...) over the ops's operands (all the same
/// size); `f` may read arguments itself.
func::FuncOp pointwise(KernelBuilder &kb, int64_t n, unsigned numIn,
                       unsigned numOut,
                       function_ref<SmallVector<Value>(ArrayRef<Value>)> f) {
  kb.parallel(n, [&](Value i) {
    SmallVector<Value> in;
    for (unsigned a = 0; a < numIn; ++a)
      in.push_back(kb.load(kb.arg(a), i));
    SmallVector<Value> out = f(in);
    for (unsigned r = 0; r < numOut; ++r)
      kb.store(out[r], kb.arg(numIn + r), i);
  });
  return kb.finish();
}

/// d sigmoid(g) / dg = s * (1 - s).
Value sigmoidGrad(KernelBuilder &kb, Value s) {
  return kb.mul(s, kb.sub(kb.f32(1), s));
}

/// A splat float constant.
FailureOr<func::FuncOp> buildConstant(KernelBuilder &kb, arith::ConstantOp c) {
  auto dense = dyn_cast<DenseElementsAttr>(c.getValue());
  if (!dense || !dense.isSplat() || !isa<FloatType>(dense.getElementType()))
    return failure();
  double v = dense.getSplatValue<APFloat>().convertToDouble();
  kb.parallel(numel(c), [&](Value i) { kb.store(kb.f32(v), kb.arg(0), i); });
  return kb.finish();
}

/// The ops that are one expression per element of same-sized operands;
/// nullopt for any other op.
std::optional<func::FuncOp> buildPointwiseOp(KernelBuilder &kb, Operation *op) {
  if (auto r = dyn_cast<ResidualOp>(op)) {
    double s = attrF(r.getScaleAttr());
    return pointwise(kb, numel(r), 2, 1, [&](ArrayRef<Value> x) {
      return SmallVector<Value>{kb.add(x[0], kb.mul(kb.f32(s), x[1]))};
    });
  }
  if (auto a = dyn_cast<AddOp>(op))
    return pointwise(kb, numel(a), 2, 1, [&](ArrayRef<Value> x) {
      return SmallVector<Value>{kb.add(x[0], x[1])};
    });
  if (auto s = dyn_cast<SwiGLUOp>(op)) // silu(g) * u
    return pointwise(kb, numel(s), 2, 1, [&](ArrayRef<Value> x) {
      return SmallVector<Value>{kb.mul(kb.mul(x[0], kb.sigmoid(x[0])), x[1])};
    });
  if (auto s = dyn_cast<SwiGLUGradOp>(op))
    return pointwise(kb, numel(s.getGrad()), 3, 2, [&](ArrayRef<Value> x) {
      Value dy = x[0], g = x[1], u = x[2], sg = kb.sigmoid(g);
      // silu'(g) = s + g * s * (1 - s)
      Value dsilu = kb.add(sg, kb.mul(g, sigmoidGrad(kb, sg)));
      return SmallVector<Value>{kb.mul(kb.mul(dy, u), dsilu),
                                kb.mul(dy, kb.mul(g, sg))};
    });
  if (auto g = dyn_cast<GluGateOp>(op))
    return pointwise(kb, numel(g), 2, 1, [&](ArrayRef<Value> x) {
      return SmallVector<Value>{kb.mul(x[0], kb.sigmoid(x[1]))};
    });
  if (auto g = dyn_cast<GluGateGradOp>(op))
    return pointwise(kb, numel(g.getGrad()), 3, 2, [&](ArrayRef<Value> x) {
      Value dy = x[0], v = x[1], sg = kb.sigmoid(x[2]);
      return SmallVector<Value>{kb.mul(dy, sg),
                                kb.mul(kb.mul(dy, v), sigmoidGrad(kb, sg))};
    });
  if (auto q = dyn_cast<SqrtOp>(op))
    return pointwise(kb, numel(q), 1, 1, [&](ArrayRef<Value> x) {
      return SmallVector<Value>{kb.sqrt(x[0])};
    });
  return std::nullopt;
}

/// input * factor, the factor read from data.
FailureOr<func::FuncOp> buildScale(KernelBuilder &kb, ScaleOp s) {
  Value f = kb.load(kb.arg(1), kb.index(0));
  kb.parallel(numel(s), [&](Value i) {
    kb.store(kb.mul(kb.load(kb.arg(0), i), f), kb.arg(2), i);
  });
  return kb.finish();
}

/// input in the result's element type (the stores round, the loads widen).
FailureOr<func::FuncOp> buildConvert(KernelBuilder &kb, ConvertOp c) {
  kb.parallel(numel(c), [&](Value i) { kb.store(kb.load(kb.arg(0), i), kb.arg(1), i); });
  return kb.finish();
}

/// Rows of F elements moved one position along [B, T]; zero where the
/// source is outside the sequence.
FailureOr<func::FuncOp> buildShift(KernelBuilder &kb, Operation *op) {
  ArrayRef<int64_t> s = shape(op->getOperand(0));
  int64_t t = s[1], f = numel(op->getOperand(0)) / (s[0] * s[1]);
  bool right = isa<ShiftRightOp>(op);
  kb.elements(s[0] * t, f, [&](Value row, Value c) {
    Value pos = kb.irem(row, t);
    Value inside = right ? kb.icmp(arith::CmpIPredicate::ugt, pos, kb.index(0))
                         : kb.icmp(arith::CmpIPredicate::ult, pos,
                                   kb.index(t - 1));
    Value src = right ? kb.isub(row, kb.index(1)) : kb.iadd(row, 1);
    Value dst = kb.iadd(kb.imul(row, f), c);
    // Clamp the address so the masked-off load stays in bounds.
    Value safe = kb.select(inside, src, row);
    Value v = kb.load(kb.arg(0), kb.iadd(kb.imul(safe, f), c));
    kb.store(kb.select(inside, v, kb.f32(0)), kb.arg(1), dst);
  });
  return kb.finish();
}

/// input + eps * U(-1, 1), counter-based noise per element.
FailureOr<func::FuncOp> buildJitter(KernelBuilder &kb, JitterOp j) {
  // Args: input, seed, stream (data: one kernel serves every pass), out.
  double eps = attrF(j.getEpsilonAttr());
  Value seed = kb.load(kb.arg(1), kb.index(0));
  Value stream = kb.load(kb.arg(2), kb.index(0));
  kb.parallel(numel(j), [&](Value i) {
    Value u = kb.uniform(seed, stream, i);
    Value noise = kb.mul(kb.f32(eps), kb.sub(kb.mul(kb.f32(2), u), kb.f32(1)));
    kb.store(kb.add(kb.load(kb.arg(0), i), noise), kb.arg(3), i);
  });
  return kb.finish();
}

/// acc + the sum of the input's squares (the global gradient norm).
FailureOr<func::FuncOp> buildAccumulateSquares(KernelBuilder &kb,
                                               AccumulateSquaresOp a) {
  // input, acc -> acc'
  int64_t n = numel(a.getInput());
  if (kb.gpu()) {
    // Blocks of 256 threads each sum a chunk and add it to acc'.
    constexpr int64_t chunk = 256 * 16;
    kb.parallel(1, [&](Value i) { kb.store(kb.load(kb.arg(1), i), kb.arg(2), i); });
    kb.rows((n + chunk - 1) / chunk, 256, [&](Value r) {
      Value base = kb.imul(r, chunk);
      Value ss = kb.rowSum(chunk, [&](Value c) {
        Value i = kb.iadd(base, c);
        Value in = kb.icmp(arith::CmpIPredicate::ult, i, kb.index(n));
        Value g = kb.load(kb.arg(0), kb.select(in, i, kb.index(0)));
        return kb.select(in, kb.mul(g, g), kb.f32(0));
      });
      kb.rowLeader([&] { kb.atomicAdd(ss, kb.arg(2), kb.index(0)); });
    });
    return kb.finish();
  }
  Value ss = kb.sum(n, [&](Value i) {
    Value g = kb.load(kb.arg(0), i);
    return kb.mul(g, g);
  });
  Value zero = kb.index(0);
  kb.store(kb.add(kb.load(kb.arg(1), zero), ss), kb.arg(2), zero);
  return kb.finish();
}

/// acc + weight * x, on one element.
FailureOr<func::FuncOp> buildAxpy(KernelBuilder &kb) {
  Value zero = kb.index(0);
  Value v = kb.add(kb.load(kb.arg(0), zero),
                   kb.mul(kb.load(kb.arg(2), zero), kb.load(kb.arg(1), zero)));
  kb.store(v, kb.arg(3), zero);
  return kb.finish();
}

/// where(mask, a, b) and its gradient, one mask entry per row.
FailureOr<func::FuncOp> buildWhere(KernelBuilder &kb, Operation *op) {
  // mask [B, T], values [B, T, D]: one mask entry per row of D.
  Value mask = op->getOperand(0);
  int64_t rows = numel(mask), d = numel(op->getResult(0)) / rows;
  bool grad = isa<WhereGradOp>(op);
  kb.elements(rows, d, [&](Value r, Value c) {
    Value on = kb.fcmp(arith::CmpFPredicate::UNE, kb.load(kb.arg(0), r),
                       kb.f32(0));
    Value i = kb.iadd(kb.imul(r, d), c);
    if (!grad) {
      Value v = kb.select(on, kb.load(kb.arg(1), i), kb.load(kb.arg(2), i));
      kb.store(v, kb.arg(3), i);
      return;
    }
    Value dy = kb.load(kb.arg(1), i), zero = kb.f32(0);
    kb.store(kb.select(on, dy, zero), kb.arg(2), i);
    kb.store(kb.select(on, zero, dy), kb.arg(3), i);
  });
  return kb.finish();
}

/// Concatenation along the last axis and its inverse.
FailureOr<func::FuncOp> buildConcatOrSplit(KernelBuilder &kb, Operation *op) {
  // Rows of A + B = W elements; concat writes, split reads the halves.
  bool cat = isa<ConcatOp>(op);
  Value wide = cat ? op->getResult(0) : op->getOperand(0);
  Value half0 = cat ? op->getOperand(0) : op->getResult(0);
  int64_t a = shape(half0).back(), w = shape(wide).back(),
          rows = numel(wide) / w;
  unsigned wideArg = cat ? 2 : 0, lhsArg = cat ? 0 : 1, rhsArg = cat ? 1 : 2;
  kb.elements(rows, w, [&](Value r, Value c) {
    Value wi = kb.iadd(kb.imul(r, w), c);
    Value inLhs = kb.icmp(arith::CmpIPredicate::ult, c, kb.index(a));
    Value li = kb.iadd(kb.imul(r, a), kb.select(inLhs, c, kb.index(0)));
    Value ri = kb.iadd(kb.imul(r, w - a),
                       kb.select(inLhs, kb.index(0), kb.isub(c, kb.index(a))));
    if (cat) {
      Value v = kb.select(inLhs, kb.load(kb.arg(lhsArg), li),
                          kb.load(kb.arg(rhsArg), ri));
      kb.store(v, kb.arg(wideArg), wi);
      return;
    }
    Value v = kb.load(kb.arg(wideArg), wi);
    kb.ifThen(inLhs, [&] { kb.store(v, kb.arg(lhsArg), li); });
    kb.ifThen(kb.icmp(arith::CmpIPredicate::uge, c, kb.index(a)),
              [&] { kb.store(v, kb.arg(rhsArg), ri); });
  });
  return kb.finish();
}

/// Clipped AdamW with bias corrections, lr and step read from data.
FailureOr<func::FuncOp> buildAdamW(KernelBuilder &kb, AdamWOp adam) {
  // Args: param, grad, m, v, lr, step, grad_norm, new_param, new_m, new_v.
  double b1 = attrF(adam.getBeta1Attr()), b2 = attrF(adam.getBeta2Attr()),
         eps = attrF(adam.getEpsilonAttr()),
         wd = attrF(adam.getWeightDecayAttr()),
         clipAt = attrF(adam.getMaxGradNormAttr());
  Value zero = kb.index(0);
  Value lr = kb.load(kb.arg(4), zero), step = kb.load(kb.arg(5), zero);
  Value norm = kb.load(kb.arg(6), zero);
  Value clip = kb.min(kb.f32(1), kb.div(kb.f32(clipAt),
                                        kb.add(norm, kb.f32(1e-6))));
  // Bias corrections: 1 - beta^step.
  auto powf = [&](double base, Value e) {
    return kb.exp(kb.mul(e, kb.f32(std::log(base))));
  };
  Value bc1 = kb.sub(kb.f32(1), powf(b1, step));
  Value bc2 = kb.sub(kb.f32(1), powf(b2, step));
  Value stepSize = kb.div(lr, bc1);
  Value sqrtBc2 = kb.sqrt(bc2);
  Value decay = kb.sub(kb.f32(1), kb.mul(lr, kb.f32(wd)));
  kb.parallel(numel(adam.getParam()), [&](Value i) {
    Value p = kb.load(kb.arg(0), i), g = kb.mul(kb.load(kb.arg(1), i), clip);
    Value m = kb.add(kb.mul(kb.f32(b1), kb.load(kb.arg(2), i)),
                     kb.mul(kb.f32(1 - b1), g));
    Value v = kb.add(kb.mul(kb.f32(b2), kb.load(kb.arg(3), i)),
                     kb.mul(kb.f32(1 - b2), kb.mul(g, g)));
    Value denom = kb.add(kb.div(kb.sqrt(v), sqrtBc2), kb.f32(eps));
    Value np = kb.sub(kb.mul(p, decay), kb.mul(stepSize, kb.div(m, denom)));
    kb.store(np, kb.arg(7), i);
    kb.store(m, kb.arg(8), i);
    kb.store(v, kb.arg(9), i);
  });
  return kb.finish();
}
} // namespace

FailureOr<func::FuncOp> mlir::fbt::buildElementwiseKernel(KernelBuilder &kb,
                                                          Operation *op) {
  if (auto c = dyn_cast<arith::ConstantOp>(op))
    return buildConstant(kb, c);
  if (std::optional<func::FuncOp> f = buildPointwiseOp(kb, op))
    return *f;
  if (auto s = dyn_cast<ScaleOp>(op))
    return buildScale(kb, s);
  if (auto c = dyn_cast<ConvertOp>(op))
    return buildConvert(kb, c);
  if (isa<ShiftRightOp, ShiftLeftOp>(op))
    return buildShift(kb, op);
  if (auto j = dyn_cast<JitterOp>(op))
    return buildJitter(kb, j);
  if (auto a = dyn_cast<AccumulateSquaresOp>(op))
    return buildAccumulateSquares(kb, a);
  if (isa<AxpyOp>(op))
    return buildAxpy(kb);
  if (isa<WhereOp, WhereGradOp>(op))
    return buildWhere(kb, op);
  if (isa<ConcatOp, SplitOp>(op))
    return buildConcatOrSplit(kb, op);
  if (auto adam = dyn_cast<AdamWOp>(op))
    return buildAdamW(kb, adam);
  return failure();
}
