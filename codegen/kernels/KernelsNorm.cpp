//===- KernelsNorm.cpp - RMSNorm, normalize and the fused gated input ----===//
//
// Row kernels: one row of D per grid iteration (a GPU block per row), a
// reduction for the mean square, then the row written once. Scale gradients
// sum over rows: on the CPU in a second, serial sweep; on the GPU each row's
// block adds its share atomically into the zeroed sum.
//
//===----------------------------------------------------------------------===//

#include "codegen/kernels/KernelBuilder.h"
#include "codegen/kernels/Kernels.h"
#include "dialect/FbtOps.h"

#include <algorithm>
#include <functional>

using namespace mlir;
using namespace mlir::fbt;

namespace {
int64_t lastDim(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape().back();
}
int64_t numel(Value v) { return flatBuffer(v).second; }

/// Threads per row on the GPU: a warp per 32 channels, at most 256.
int64_t rowBlock(KernelBuilder &kb, int64_t d) {
  if (!kb.gpu())
    return 1; // a plain loop per row
  return kb.knob(Knob::RowThreads, std::min<int64_t>(256, (d + 31) / 32 * 32));
}

/// 1 / sqrt(mean(x[row]^2) + eps), x read through `read(i)`.
Value invRms(KernelBuilder &kb, Value base, int64_t d, double eps,
             function_ref<Value(Value)> read) {
  Value ss = kb.rowSum(d, [&](Value c) {
    Value x = read(kb.iadd(base, c));
    return kb.mul(x, x);
  });
  return kb.rsqrt(kb.add(kb.div(ss, kb.f32(d)), kb.f32(eps)));
}

/// y[row] = x[row] * inv * w: the normalized, scaled row (unscaled when
/// `w` is null: fbt.normalize).
void writeNormalized(KernelBuilder &kb, Value base, int64_t d, Value inv,
                     Value x, Value w, Value y) {
  kb.rowLoop(d, [&](Value c) {
    Value i = kb.iadd(base, c);
    Value v = kb.mul(kb.load(x, i), inv);
    kb.store(w ? kb.mul(v, kb.load(w, c)) : v, y, i);
  });
}

/// Gradient of RMSNorm(x) * w wrt x for one row, given inv = 1/rms:
///   dx = inv * (g - xhat * mean(g * xhat)),  g = dy * w, xhat = x * inv.
/// `emit(i, dx)` receives each element (flat index). On the GPU
/// the scale gradient's share of the row, dy * xhat, is added into `dw`.
/// Without a scale (`w` and `dw` null) g = dy.
void rmsRowGrad(KernelBuilder &kb, Value base, int64_t d, Value inv,
                function_ref<Value(Value)> x, function_ref<Value(Value)> dy,
                Value w, Value dw, function_ref<void(Value, Value)> emit) {
  auto scaled = [&](Value i, Value c) {
    return w ? kb.mul(dy(i), kb.load(w, c)) : dy(i);
  };
  Value dot = kb.rowSum(d, [&](Value c) {
    Value i = kb.iadd(base, c);
    return kb.mul(scaled(i, c), kb.mul(x(i), inv));
  });
  Value mean = kb.div(dot, kb.f32(d));
  kb.rowLoop(d, [&](Value c) {
    Value i = kb.iadd(base, c);
    Value xhat = kb.mul(x(i), inv);
    emit(i, kb.mul(inv, kb.sub(scaled(i, c), kb.mul(xhat, mean))));
    if (kb.gpu() && dw)
      kb.atomicAdd(kb.mul(dy(i), xhat), dw, c);
  });
}

/// Zeroes dw before the row grid on the GPU (the rows add into it).
void zeroScaleGrad(KernelBuilder &kb, int64_t d, Value dw) {
  if (kb.gpu())
    kb.parallel(d, [&](Value c) { kb.store(kb.f32(0), dw, c); });
}

/// dw[c] = sum over rows of dy * x * inv, on the CPU: serial over rows, in
/// row order, so the sum is the same at every run. (The GPU's rows added
/// theirs in rmsRowGrad.)
void scaleGrad(KernelBuilder &kb, int64_t rows, int64_t d, double eps,
               function_ref<Value(Value)> x, function_ref<Value(Value)> dy,
               Value dw) {
  if (kb.gpu())
    return;
  kb.loop(d, [&](Value c) { kb.store(kb.f32(0), dw, c); });
  kb.loop(rows, [&](Value r) {
    Value base = kb.imul(r, d);
    Value inv = invRms(kb, base, d, eps, x);
    kb.loop(d, [&](Value c) {
      Value i = kb.iadd(base, c);
      Value add = kb.mul(dy(i), kb.mul(x(i), inv));
      kb.store(kb.add(kb.load(dw, c), add), dw, c);
    });
  });
}

/// A reader of argument `a`, element by element.
std::function<Value(Value)> argReader(KernelBuilder &kb, unsigned a) {
  return [&kb, a](Value i) { return kb.load(kb.arg(a), i); };
}

/// Whether row r's feedback mask (argument maskArg) is on.
Value maskOn(KernelBuilder &kb, unsigned maskArg, Value r) {
  return kb.fcmp(arith::CmpFPredicate::UNE, kb.load(kb.arg(maskArg), r),
                 kb.f32(0));
}

/// x, w -> y (rmsnorm) or x -> y (normalize, no scale).
FailureOr<func::FuncOp> buildRmsNorm(KernelBuilder &kb, Operation *op) {
  auto in = [&](unsigned a) { return argReader(kb, a); };
  Value x = op->getOperand(0);
  int64_t d = lastDim(x), rows = numel(x) / d;
  double eps = op->getAttrOfType<FloatAttr>("epsilon").getValueAsDouble();
  bool scaled = isa<RMSNormOp>(op);
  kb.rows(rows, rowBlock(kb, d), [&](Value r) {
    Value base = kb.imul(r, d);
    Value inv = invRms(kb, base, d, eps, in(0));
    writeNormalized(kb, base, d, inv, kb.arg(0), scaled ? kb.arg(1) : Value(),
                    kb.arg(scaled ? 2 : 1));
  });
  return kb.finish();
}

/// dy, x -> dx.
FailureOr<func::FuncOp> buildNormalizeGrad(KernelBuilder &kb,
                                           NormalizeGradOp n) {
  auto in = [&](unsigned a) { return argReader(kb, a); };
  int64_t d = lastDim(n.getInput()), rows = numel(n.getInput()) / d;
  double eps = n.getEpsilon().convertToDouble();
  kb.rows(rows, rowBlock(kb, d), [&](Value r) {
    Value base = kb.imul(r, d);
    Value inv = invRms(kb, base, d, eps, in(1));
    rmsRowGrad(kb, base, d, inv, in(1), in(0), Value(), Value(),
               [&](Value i, Value dx) { kb.store(dx, kb.arg(2), i); });
  });
  return kb.finish();
}

/// dy, x, w -> dx, dw.
FailureOr<func::FuncOp> buildRmsNormGrad(KernelBuilder &kb, RMSNormGradOp n) {
  auto in = [&](unsigned a) { return argReader(kb, a); };
  int64_t d = lastDim(n.getInput()), rows = numel(n.getInput()) / d;
  double eps = n.getEpsilon().convertToDouble();
  zeroScaleGrad(kb, d, kb.arg(4));
  kb.rows(rows, rowBlock(kb, d), [&](Value r) {
    Value base = kb.imul(r, d);
    Value inv = invRms(kb, base, d, eps, in(1));
    rmsRowGrad(kb, base, d, inv, in(1), in(0), kb.arg(2), kb.arg(4),
               [&](Value i, Value dx) { kb.store(dx, kb.arg(3), i); });
  });
  scaleGrad(kb, rows, d, eps, in(1), in(0), kb.arg(4));
  return kb.finish();
}

/// The fused input: u = m ? v * sigmoid(g) : e, n = RMSNorm(u) * w.
/// Args: value, gate, embedding, mask, scale | input, normed.
FailureOr<func::FuncOp> buildGatedInputNorm(KernelBuilder &kb,
                                            GatedInputNormOp g) {
  auto in = [&](unsigned a) { return argReader(kb, a); };
  auto fusedInput = [&](Value i, Value on) {
    Value gated = kb.mul(kb.load(kb.arg(0), i), kb.sigmoid(kb.load(kb.arg(1), i)));
    return kb.select(on, gated, kb.load(kb.arg(2), i));
  };
  int64_t d = lastDim(g.getValue()), rows = numel(g.getValue()) / d;
  double eps = g.getEpsilon().convertToDouble();
  kb.rows(rows, rowBlock(kb, d), [&](Value r) {
    Value base = kb.imul(r, d), on = maskOn(kb, 3, r);
    // Write u first, then normalize from it: one read of v, g and e. (On
    // the GPU each thread reads back only the channels it wrote: rowLoop
    // and rowSum stride the row the same way.)
    kb.rowLoop(d, [&](Value c) {
      Value i = kb.iadd(base, c);
      kb.store(fusedInput(i, on), kb.arg(5), i);
    });
    Value inv = invRms(kb, base, d, eps, in(5));
    writeNormalized(kb, base, d, inv, kb.arg(5), kb.arg(4), kb.arg(6));
  });
  return kb.finish();
}

/// The fused input's gradient, through the norm, the gate and the mask.
FailureOr<func::FuncOp> buildGatedInputNormGrad(KernelBuilder &kb,
                                                GatedInputNormGradOp g) {
  auto in = [&](unsigned a) { return argReader(kb, a); };
  // Args: input_grad, normed_grad, value, gate, embedding, mask, scale |
  //       value_grad, gate_grad, embedding_grad, scale_grad.
  int64_t d = lastDim(g.getValue()), rows = numel(g.getValue()) / d;
  double eps = g.getEpsilon().convertToDouble();
  auto u = [&](Value i) {
    Value r = kb.idiv(i, d);
    Value on = maskOn(kb, 5, r);
    Value gated = kb.mul(kb.load(kb.arg(2), i), kb.sigmoid(kb.load(kb.arg(3), i)));
    return kb.select(on, gated, kb.load(kb.arg(4), i));
  };
  zeroScaleGrad(kb, d, kb.arg(10));
  kb.rows(rows, rowBlock(kb, d), [&](Value r) {
    Value base = kb.imul(r, d), on = maskOn(kb, 5, r);
    Value inv = invRms(kb, base, d, eps, u);
    rmsRowGrad(kb, base, d, inv, u, in(1), kb.arg(6), kb.arg(10),
               [&](Value i, Value dx) {
      Value du = kb.add(dx, kb.load(kb.arg(0), i));
      Value v = kb.load(kb.arg(2), i), s = kb.sigmoid(kb.load(kb.arg(3), i));
      Value zero = kb.f32(0);
      Value dv = kb.mul(du, s);
      Value dg = kb.mul(kb.mul(du, v), kb.mul(s, kb.sub(kb.f32(1), s)));
      kb.store(kb.select(on, dv, zero), kb.arg(7), i);
      kb.store(kb.select(on, dg, zero), kb.arg(8), i);
      kb.store(kb.select(on, zero, du), kb.arg(9), i);
    });
  });
  scaleGrad(kb, rows, d, eps, u, in(1), kb.arg(10));
  return kb.finish();
}
} // namespace

FailureOr<func::FuncOp> mlir::fbt::buildNormKernel(KernelBuilder &kb,
                                                   Operation *op) {
  if (isa<RMSNormOp, NormalizeOp>(op))
    return buildRmsNorm(kb, op);
  if (auto n = dyn_cast<NormalizeGradOp>(op))
    return buildNormalizeGrad(kb, n);
  if (auto n = dyn_cast<RMSNormGradOp>(op))
    return buildRmsNormGrad(kb, n);
  if (auto g = dyn_cast<GatedInputNormOp>(op))
    return buildGatedInputNorm(kb, g);
  if (auto g = dyn_cast<GatedInputNormGradOp>(op))
    return buildGatedInputNormGrad(kb, g);
  return failure();
}
