//===- KernelsToken.cpp - kernels indexed by token ids --------------------===//
//
// The embedding gather and its scatter-add, the next-token loss and its
// gradient, and the feedback mask (document starts and plain prefixes).
//
//===----------------------------------------------------------------------===//

#include "codegen/kernels/KernelBuilder.h"
#include "codegen/kernels/Kernels.h"
#include "dialect/FbtOps.h"

#include <limits>

using namespace mlir;
using namespace mlir::fbt;

namespace {
ArrayRef<int64_t> shape(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}
int64_t numel(Value v) { return flatBuffer(v).second; }

/// Threads per row of logits on the GPU.
int64_t lossThreads(KernelBuilder &kb) {
  return kb.gpu() ? kb.knob(Knob::RowThreads, 512) : 1;
}

/// max_v logits[row, v] and log(sum exp(logits - max)) for one row (block
/// reductions on the GPU).
std::pair<Value, Value> logSumExp(KernelBuilder &kb, Value logits, Value base,
                                  int64_t vocab) {
  Value m = kb.rowMax(vocab, [&](Value v) {
    return kb.load(logits, kb.iadd(base, v));
  });
  Value s = kb.rowSum(vocab, [&](Value v) {
    return kb.exp(kb.sub(kb.load(logits, kb.iadd(base, v)), m));
  });
  return {m, kb.log(s)};
}

/// Counted positions: targets != ignore_index.
Value counted(KernelBuilder &kb, Value target, int64_t ignore) {
  Value t = arith::ExtSIOp::create(kb.builder(), kb.location(),
                                   kb.builder().getI64Type(), target);
  return arith::CmpIOp::create(kb.builder(), kb.location(),
                               arith::CmpIPredicate::ne, t, kb.i64(ignore));
}
/// The number of counted targets among `rows` (a row reduction: a block's
/// threads share it on the GPU).
Value countTargets(KernelBuilder &kb, Value targets, int64_t rows,
                   int64_t ignore) {
  return kb.rowSum(rows, [&](Value r) {
    return kb.select(counted(kb, kb.load(targets, r), ignore), kb.f32(1),
                     kb.f32(0));
  });
}

/// The rows of the table the ids name.
FailureOr<func::FuncOp> buildEmbedding(KernelBuilder &kb, EmbeddingOp e) {
  // table, ids -> out
  int64_t d = shape(e.getTable())[1], n = numel(e.getIds());
  kb.elements(n, d, [&](Value r, Value c) {
    Value id = kb.toIndex(kb.load(kb.arg(1), r));
    Value v = kb.load(kb.arg(0), kb.iadd(kb.imul(id, d), c));
    kb.store(v, kb.arg(2), kb.iadd(kb.imul(r, d), c));
  });
  return kb.finish();
}

/// The embedding gradient: each row added to its id's row of the table.
FailureOr<func::FuncOp> buildEmbeddingGrad(KernelBuilder &kb,
                                           EmbeddingGradOp e) {
  // grad, ids -> table grad
  // Parallel over channels: each channel's column sums its rows alone.
  int64_t d = shape(e.getResult())[1], n = numel(e.getIds());
  kb.parallel(numel(e.getResult()), [&](Value i) {
    kb.store(kb.f32(0), kb.arg(2), i);
  });
  if (kb.gpu()) { // one thread per (row, channel), added atomically
    kb.elements(n, d, [&](Value r, Value c) {
      Value id = kb.toIndex(kb.load(kb.arg(1), r));
      kb.atomicAdd(kb.load(kb.arg(0), kb.iadd(kb.imul(r, d), c)), kb.arg(2),
                   kb.iadd(kb.imul(id, d), c));
    });
    return kb.finish();
  }
  kb.parallel(d, [&](Value c) {
    kb.loop(n, [&](Value r) {
      Value id = kb.toIndex(kb.load(kb.arg(1), r));
      Value dst = kb.iadd(kb.imul(id, d), c);
      Value g = kb.load(kb.arg(0), kb.iadd(kb.imul(r, d), c));
      kb.store(kb.add(kb.load(kb.arg(2), dst), g), kb.arg(2), dst);
    });
  });
  return kb.finish();
}

/// Mean next-token cross-entropy over the counted targets.
FailureOr<func::FuncOp> buildNtpLoss(KernelBuilder &kb, NTPLossOp l) {
  // logits, targets -> loss
  int64_t vocab = shape(l.getLogits())[2], rows = numel(l.getTargets());
  int64_t ignore = (int64_t)l.getIgnoreIndex();
  if (kb.gpu()) {
    // A block per row adds its cross-entropy / count into the zeroed loss.
    kb.parallel(1, [&](Value i) { kb.store(kb.f32(0), kb.arg(2), i); });
    kb.rows(rows, lossThreads(kb), [&](Value r) {
      Value n = countTargets(kb, kb.arg(1), rows, ignore);
      Value target = kb.load(kb.arg(1), r);
      Value on = counted(kb, target, ignore);
      Value base = kb.imul(r, vocab);
      auto [m, lse] = logSumExp(kb, kb.arg(0), base, vocab);
      Value t = kb.select(on, kb.toIndex(target), kb.index(0));
      Value ce = kb.sub(kb.add(m, lse), kb.load(kb.arg(0), kb.iadd(base, t)));
      Value share = kb.select(on, kb.div(ce, kb.max(n, kb.f32(1))), kb.f32(0));
      kb.rowLeader([&] { kb.atomicAdd(share, kb.arg(2), kb.index(0)); });
    });
    return kb.finish();
  }
  SmallVector<Value> acc = kb.fold(
      kb.index(0), kb.index(rows), {kb.f32(0), kb.f32(0)},
      [&](Value r, ValueRange c) -> SmallVector<Value> {
        Value target = kb.load(kb.arg(1), r);
        Value on = counted(kb, target, ignore);
        Value base = kb.imul(r, vocab);
        auto [m, lse] = logSumExp(kb, kb.arg(0), base, vocab);
        // Clamp the address of an ignored target; its term is dropped.
        Value t = kb.select(on, kb.toIndex(target), kb.index(0));
        Value logit = kb.load(kb.arg(0), kb.iadd(base, t));
        Value ce = kb.sub(kb.add(m, lse), logit);
        Value zero = kb.f32(0);
        return {kb.add(c[0], kb.select(on, ce, zero)),
                kb.add(c[1], kb.select(on, kb.f32(1), zero))};
      });
  Value n = kb.max(acc[1], kb.f32(1));
  kb.store(kb.div(acc[0], n), kb.arg(2), kb.index(0));
  return kb.finish();
}

/// The loss gradient: (softmax - onehot) * dloss / count, zero for ignored targets.
FailureOr<func::FuncOp> buildNtpLossGrad(KernelBuilder &kb, NTPLossGradOp l) {
  // dloss, logits, targets -> dlogits
  int64_t vocab = shape(l.getLogits())[2], rows = numel(l.getTargets());
  int64_t ignore = (int64_t)l.getIgnoreIndex();
  // The CPU counts once; on the GPU each row's block counts for itself
  // (a block reduction over the targets) rather than one thread for all.
  Value n = kb.gpu() ? Value() : countTargets(kb, kb.arg(2), rows, ignore);
  kb.rows(rows, lossThreads(kb), [&](Value r) {
    Value count = n ? n : countTargets(kb, kb.arg(2), rows, ignore);
    Value scale = kb.div(kb.load(kb.arg(0), kb.index(0)), kb.max(count, kb.f32(1)));
    Value target = kb.load(kb.arg(2), r);
    Value on = counted(kb, target, ignore);
    Value base = kb.imul(r, vocab);
    std::pair<Value, Value> stats = logSumExp(kb, kb.arg(1), base, vocab);
    Value m = stats.first, lse = stats.second;
    Value t = kb.toIndex(target);
    Value rowScale = kb.select(on, scale, kb.f32(0));
    kb.rowLoop(vocab, [&](Value v) {
      Value i = kb.iadd(base, v);
      Value p = kb.exp(kb.sub(kb.sub(kb.load(kb.arg(1), i), m), lse));
      Value hit = kb.icmp(arith::CmpIPredicate::eq, v, t);
      Value g = kb.sub(p, kb.select(hit, kb.f32(1), kb.f32(0)));
      kb.store(kb.mul(g, rowScale), kb.arg(3), i);
    });
  });
  return kb.finish();
}

/// The feedback mask: 0 at document starts and in their plain prefixes.
FailureOr<func::FuncOp> buildFeedbackMask(KernelBuilder &kb, FeedbackMaskOp f) {
  // Args: ids [B,T], [seed], mask [B,T]. Per row, a backward sweep writes
  // each position's distance to its document's end into the mask buffer;
  // a forward sweep reads it at each document start to draw the prefix
  // and then overwrites the row with the mask.
  ArrayRef<int64_t> s = shape(f.getIds());
  int64_t t = s[1];
  bool mixin = f.getPrefixMixin();
  unsigned out = f.getSeed() ? 2 : 1;
  Value bos = kb.i64((int64_t)f.getBosTokenId());
  Value seed = mixin ? kb.load(kb.arg(1), kb.index(0)) : Value();
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  auto isStart = [&](Value row, Value pos) {
    Value id = arith::ExtSIOp::create(b, loc, b.getI64Type(),
                                      kb.load(kb.arg(0), kb.iadd(row, pos)));
    Value atBos = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, id, bos);
    Value first = kb.icmp(arith::CmpIPredicate::eq, pos, kb.index(0));
    return arith::OrIOp::create(b, loc, atBos, first).getResult();
  };
  kb.parallel(s[0], [&](Value bi) {
    Value row = kb.imul(bi, t);
    kb.fold(kb.index(0), kb.index(t), {kb.index(t)},
            [&](Value i, ValueRange c) -> SmallVector<Value> {
              Value pos = kb.isub(kb.index(t - 1), i);
              kb.store(kb.toF32(kb.isub(c[0], pos)), kb.arg(out), kb.iadd(row, pos));
              Value id = arith::ExtSIOp::create(b, loc, b.getI64Type(),
                                                kb.load(kb.arg(0), kb.iadd(row, pos)));
              Value atBos = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, id, bos);
              return {kb.select(atBos, pos, c[0])};
            });
    kb.fold(kb.index(0), kb.index(t), {kb.index(0), kb.index(1)},
            [&](Value pos, ValueRange c) -> SmallVector<Value> {
              Value start = isStart(row, pos);
              Value idx = kb.iadd(row, pos);
              Value prefix = kb.index(1);
              if (mixin) {
                // 1 + floor(u * n) with u = top24 / 2^24: exact in integers.
                Value n = arith::FPToSIOp::create(b, loc, b.getI64Type(),
                                                  kb.load(kb.arg(out), idx));
                Value u = kb.uniform(seed, kb.i64(0), kb.iadd(kb.imul(bi, t), pos));
                Value top = arith::FPToSIOp::create(
                    b, loc, b.getI64Type(), kb.mul(u, kb.f32(16777216.0)));
                Value drawn = arith::ShRUIOp::create(
                    b, loc, arith::MulIOp::create(b, loc, top, n), kb.i64(24));
                prefix = kb.toIndex(arith::AddIOp::create(b, loc, drawn, kb.i64(1)));
              }
              Value t0 = kb.select(start, pos, c[0]);
              Value len = kb.select(start, prefix, c[1]);
              Value plain = kb.icmp(arith::CmpIPredicate::ult, kb.isub(pos, t0), len);
              Value m = kb.select(arith::OrIOp::create(b, loc, start, plain),
                                  kb.f32(0), kb.f32(1));
              kb.store(m, kb.arg(out), idx);
              return {t0, len};
            });
  });
  return kb.finish();
}
} // namespace

FailureOr<func::FuncOp> mlir::fbt::buildTokenKernel(KernelBuilder &kb,
                                                    Operation *op) {
  if (auto e = dyn_cast<EmbeddingOp>(op))
    return buildEmbedding(kb, e);
  if (auto e = dyn_cast<EmbeddingGradOp>(op))
    return buildEmbeddingGrad(kb, e);
  if (auto l = dyn_cast<NTPLossOp>(op))
    return buildNtpLoss(kb, l);
  if (auto l = dyn_cast<NTPLossGradOp>(op))
    return buildNtpLossGrad(kb, l);
  if (auto f = dyn_cast<FeedbackMaskOp>(op))
    return buildFeedbackMask(kb, f);
  return failure();
}
