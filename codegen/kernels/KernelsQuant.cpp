//===- KernelsQuant.cpp - products by narrow weights, and their widening --===//
//
// Inference weights (DESIGN.md §8): a weight matrix W [N, K] stored as int8
// values with an f16 scale per group of 32 along each row (the last group
// of a row may be shorter), or as bf16. Both kernels dequantize as they
// read, so W crosses memory once, in its own width:
//
//   quantized_matmul  y[m, n] = sum_k x[m, k] * W[n, k], f32 arithmetic.
//                     CPU: a grid over the rows of W (threads split them),
//                     each row read once for every row of x, in vectors of
//                     8 lanes widened in registers, a group's products
//                     summed before its scale multiplies them. GPU: a block
//                     per row of W, its threads striding along K (adjacent
//                     threads read adjacent bytes), a block reduction.
//   dequantize        W as f32, for the library GEMMs of wide prefills.
//
//===----------------------------------------------------------------------===//

#include "codegen/kernels/KernelBuilder.h"
#include "codegen/kernels/Kernels.h"
#include "dialect/FbtOps.h"
#include "runtime/format/WeightNames.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::fbt;

namespace {
constexpr int64_t kGroup = ::fbt::weights::kGroup;
constexpr int64_t kLanes = KernelBuilder::kVector;

/// The weight a kernel reads: its buffers (scales null for bf16) and shape.
struct NarrowWeight {
  Value values, scales;
  int64_t n = 0, k = 0;
  bool int8() const { return bool(scales); }
  int64_t groups() const { return ::fbt::weights::groupsOf(k); }
};

/// The weight operand `weight` (kernel argument `arg`) and its scales
/// (`scales`, the next argument) if any.
NarrowWeight weightOf(KernelBuilder &kb, Value weight, Value scales, unsigned arg) {
  auto t = cast<RankedTensorType>(weight.getType());
  return {kb.arg(arg), scales ? kb.arg(arg + 1) : Value(), t.getDimSize(0), t.getDimSize(1)};
}

/// W's element at flat index `at`, as f32 and unscaled.
Value loadValue(KernelBuilder &kb, const NarrowWeight &w, Value at) {
  OpBuilder &b = kb.builder();
  Value v = memref::LoadOp::create(b, kb.location(), w.values, ValueRange{at});
  return w.int8() ? arith::SIToFPOp::create(b, kb.location(), b.getF32Type(), v).getResult()
                  : arith::ExtFOp::create(b, kb.location(), b.getF32Type(), v).getResult();
}

/// W's elements [at, at + 8) as f32 lanes, unscaled (CPU).
Value loadLanes(KernelBuilder &kb, const NarrowWeight &w, Value at) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  Type element = cast<MemRefType>(w.values.getType()).getElementType();
  auto wide = VectorType::get({kLanes}, b.getF32Type());
  Value v = vector::LoadOp::create(b, loc, VectorType::get({kLanes}, element), w.values,
                                   ValueRange{at});
  return w.int8() ? arith::SIToFPOp::create(b, loc, wide, v).getResult()
                  : arith::ExtFOp::create(b, loc, wide, v).getResult();
}

/// The scale of row `n`'s group `g`, as f32.
Value scaleOf(KernelBuilder &kb, const NarrowWeight &w, Value n, Value g) {
  OpBuilder &b = kb.builder();
  Value at = kb.iadd(kb.imul(n, w.groups()), g);
  Value s = memref::LoadOp::create(b, kb.location(), w.scales, ValueRange{at});
  return arith::ExtFOp::create(b, kb.location(), b.getF32Type(), s);
}

/// W[n, k] as f32, scaled.
Value weightAt(KernelBuilder &kb, const NarrowWeight &w, Value n, Value k) {
  Value v = loadValue(kb, w, kb.iadd(kb.imul(n, w.k), k));
  return w.int8() ? kb.mul(v, scaleOf(kb, w, n, kb.idiv(k, kGroup))) : v;
}

/// sum_{c < len} x[xBase + c] * W[n, kBase + c], unscaled: vectors of 8
/// lanes, then single elements (CPU).
Value partialDot(KernelBuilder &kb, const NarrowWeight &w, Value x, Value xBase,
                 Value wBase, int64_t len) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  auto wide = VectorType::get({kLanes}, b.getF32Type());
  Value total = kb.f32(0);
  if (len >= kLanes) {
    SmallVector<Value> terms;
    for (int64_t c = 0; c + kLanes <= len; c += kLanes) {
      Value xv = vector::LoadOp::create(b, loc, wide, x, ValueRange{kb.iadd(xBase, c)});
      terms.push_back(kb.mul(xv, loadLanes(kb, w, kb.iadd(wBase, c))));
    }
    while (terms.size() > 1) { // a tree: the adds of one level are independent
      SmallVector<Value> next;
      for (size_t i = 0; i + 1 < terms.size(); i += 2)
        next.push_back(kb.add(terms[i], terms[i + 1]));
      if (terms.size() % 2)
        next.push_back(terms.back());
      terms = std::move(next);
    }
    total = vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, terms.front(),
                                        arith::FastMathFlags::reassoc |
                                            arith::FastMathFlags::nsz);
  }
  for (int64_t c = len / kLanes * kLanes; c < len; ++c)
    total = kb.add(total, kb.mul(kb.load(x, kb.iadd(xBase, c)),
                                 loadValue(kb, w, kb.iadd(wBase, c))));
  return total;
}

/// sum_k x[xBase + k] * W[n, k] on the CPU: per whole group, the 32
/// products as 4 vectors summed as a tree, then scaled into a vector
/// accumulator (one multiply-add per group); the last, shorter group after.
Value rowDotCpu(KernelBuilder &kb, const NarrowWeight &w, Value x, Value xBase, Value n) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  auto wide = VectorType::get({kLanes}, b.getF32Type());
  auto fma = arith::FastMathFlags::contract;
  Value wBase = kb.imul(n, w.k);
  int64_t whole = w.k / kGroup, rest = w.k % kGroup;
  Value total = kb.f32(0);
  if (whole > 0) {
    Value zero = vector::BroadcastOp::create(b, loc, wide, kb.f32(0));
    Value acc = kb.fold(kb.index(0), kb.index(whole), ValueRange{zero},
                        [&](Value g, ValueRange carried) -> SmallVector<Value> {
      Value off = kb.imul(g, kGroup);
      SmallVector<Value> terms;
      for (int64_t c = 0; c < kGroup; c += kLanes) {
        Value at = kb.iadd(off, c);
        Value xv = vector::LoadOp::create(b, loc, wide, x, ValueRange{kb.iadd(xBase, at)});
        terms.push_back(arith::MulFOp::create(b, loc, xv,
                                              loadLanes(kb, w, kb.iadd(wBase, at)), fma));
      }
      Value p = arith::AddFOp::create(
          b, loc, arith::AddFOp::create(b, loc, terms[0], terms[1], fma),
          arith::AddFOp::create(b, loc, terms[2], terms[3], fma), fma);
      if (w.int8())
        p = arith::MulFOp::create(
            b, loc, p, vector::BroadcastOp::create(b, loc, wide, scaleOf(kb, w, n, g)), fma);
      return {arith::AddFOp::create(b, loc, carried[0], p, fma)};
    })[0];
    total = vector::ReductionOp::create(b, loc, vector::CombiningKind::ADD, acc,
                                        arith::FastMathFlags::reassoc |
                                            arith::FastMathFlags::nsz);
  }
  if (rest > 0) {
    Value off = kb.index(whole * kGroup);
    Value part = partialDot(kb, w, x, kb.iadd(xBase, off), kb.iadd(wBase, off), rest);
    if (w.int8())
      part = kb.mul(part, scaleOf(kb, w, n, kb.index(whole)));
    total = kb.add(total, part);
  }
  return total;
}

/// Threads per row block on the GPU: a warp per 32 groups of 8 elements
/// of K, at most 256.
int64_t rowThreads(KernelBuilder &kb, int64_t k) {
  return kb.knob(Knob::RowThreads,
                 std::clamp<int64_t>((k / 8 + 31) / 32 * 32, 32, 256));
}

FailureOr<func::FuncOp> buildQuantizedMatmul(KernelBuilder &kb, QuantizedMatmulOp op) {
  NarrowWeight w = weightOf(kb, op.getWeight(), op.getScales(), 1);
  Value x = kb.arg(0), y = kb.arg(op.getScales() ? 3 : 2);
  int64_t rows = cast<RankedTensorType>(op.getInput().getType()).getNumElements() / w.k;
  if (!kb.gpu()) {
    kb.parallel(w.n, [&](Value n) {
      kb.loop(rows, [&](Value m) {
        Value dot = rowDotCpu(kb, w, x, kb.imul(m, w.k), n);
        kb.store(dot, y, kb.iadd(kb.imul(m, w.n), n));
      });
    });
    return kb.finish();
  }
  kb.rows(w.n, rowThreads(kb, w.k), [&](Value n) {
    kb.loop(rows, [&](Value m) {
      Value xBase = kb.imul(m, w.k);
      Value dot = kb.rowSum(w.k, [&](Value k) {
        return kb.mul(kb.load(x, kb.iadd(xBase, k)), weightAt(kb, w, n, k));
      });
      kb.rowLeader([&] { kb.store(dot, y, kb.iadd(kb.imul(m, w.n), n)); });
    });
  });
  return kb.finish();
}

FailureOr<func::FuncOp> buildDequantize(KernelBuilder &kb, DequantizeOp op) {
  NarrowWeight w = weightOf(kb, op.getWeight(), op.getScales(), 0);
  Value y = kb.arg(op.getScales() ? 2 : 1);
  kb.elements(w.n, w.k, [&](Value n, Value k) {
    kb.store(weightAt(kb, w, n, k), y, kb.iadd(kb.imul(n, w.k), k));
  });
  return kb.finish();
}
} // namespace

FailureOr<func::FuncOp> mlir::fbt::buildQuantKernel(KernelBuilder &kb, Operation *op) {
  if (auto q = dyn_cast<QuantizedMatmulOp>(op))
    return buildQuantizedMatmul(kb, q);
  if (auto d = dyn_cast<DequantizeOp>(op))
    return buildDequantize(kb, d);
  return failure();
}
