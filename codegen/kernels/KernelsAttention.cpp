//===- KernelsAttention.cpp - RoPE, attention, the KV cache ---------------===//
//
// On the CPU, each query's scores live in a scratch row of the thread that
// runs it (attendRow), so no T x T score matrix is ever stored and each key
// costs one dot product and one (vectorized) exp. The backward recomputes
// the probabilities the same way, one query at a time. The GPU's forms, a warp
// per query or key, are in KernelsAttentionGpu.cpp.
//
//===----------------------------------------------------------------------===//

#include "codegen/kernels/KernelBuilder.h"
#include "codegen/kernels/Kernels.h"
#include "codegen/kernels/KernelsAttentionGpu.h"
#include "dialect/FbtOps.h"

#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include <algorithm>
#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::fbt;

namespace {
ArrayRef<int64_t> shape(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

/// Queries per block of the CPU's attention backward (Knob::QueryBlock).
constexpr int64_t kQueryBlock = 4;

/// Heads per parallel unit of the CPU's attention (Knob::HeadGroup).
constexpr int64_t kHeadGroup = 2;

/// Keys ahead whose cache rows the CPU's attention prefetches
/// (Knob::PrefetchKeys): a decode step reads the whole cache once, one key
/// row after another, and waits on memory (bench/results/ab-small-prefetch
/// measures it with the products' prefetching).
constexpr int64_t kPrefetchKeys = 16;

/// The largest divisor of `h` heads that is at most `wanted`.
int64_t headGroup(int64_t wanted, int64_t h) {
  int64_t g = std::clamp<int64_t>(wanted, 1, h);
  while (h % g)
    --g;
  return g;
}

/// `i` where it is in [0, n) (a negative i32 is far above n as an index),
/// else 0.
Value inRange(KernelBuilder &kb, Value i, int64_t n) {
  return kb.select(kb.icmp(arith::CmpIPredicate::ult, i, kb.index(n)), i,
                   kb.index(0));
}

/// q . k over one head's channels.
Value dot(KernelBuilder &kb, Value a, Value aBase, Value b, Value bBase,
          int64_t n) {
  return kb.dot(a, aBase, b, bBase, n);
}

/// Output for one query over keys [0, last], for `g` neighbouring heads
/// (their channels at `qBase`, `kvBase` and `oBase`, `dh` each):
///   o = sum_j softmax_j(scale * q.k_j) v_j,
/// in three passes over `row`, a scratch row of `s` scores per head: the
/// scores and their max, the exponentials and their sum (a loop LLVM
/// vectorizes, exp included), then the weighted values. One exp per key,
/// where an online softmax needs two and rescales the output at every key.
/// The heads of a group walk each key row once, together: at batch 1 a
/// decode step's attention reads the cache from memory, and g heads read
/// g * dh contiguous channels per row where one reads a strided dh. Each
/// pass over the keys prefetches the row `ahead` keys on (0: none).
void attendHeads(KernelBuilder &kb, Value q, Value qBase, Value k, Value v,
                 Value kvBase, int64_t kvStride, Value last, int64_t dh,
                 int64_t g, int64_t s, double scale, Value row, Value o,
                 Value oBase, int64_t ahead) {
  Value end = kb.iadd(last, 1);
  Value ninf = kb.f32(-std::numeric_limits<float>::infinity());
  auto keyRow = [&](Value j, int64_t head) {
    return kb.iadd(kb.iadd(kvBase, kb.imul(j, kvStride)), head * dh);
  };
  auto at = [&](int64_t head, Value j) { return kb.iadd(j, head * s); };
  // The group's g * dh channels of key row j + ahead, a 64-byte line at a
  // time (the first and the last channel included, however they align).
  auto prefetch = [&](Value cache, Value j) {
    if (ahead <= 0)
      return;
    int64_t line = 64 * 8 / cast<MemRefType>(cache.getType()).getElementTypeBitWidth();
    Value first = keyRow(kb.iadd(j, ahead), 0);
    for (int64_t c = 0; c < g * dh + line; c += line)
      kb.prefetch(cache, kb.iadd(first, std::min(c, g * dh - 1)));
  };
  SmallVector<Value> m = kb.foldRows(
      kb.index(0), end, SmallVector<Value>(g, ninf),
      [&](Value j, ValueRange c) -> SmallVector<Value> {
        prefetch(k, j);
        SmallVector<Value> next;
        for (int64_t i = 0; i < g; ++i) {
          Value sc = kb.mul(dot(kb, q, kb.iadd(qBase, i * dh), k, keyRow(j, i), dh),
                            kb.f32(scale));
          kb.store(sc, row, at(i, j));
          next.push_back(kb.max(c[i], sc));
        }
        return next;
      });
  SmallVector<Value> inv;
  for (int64_t i = 0; i < g; ++i) {
    Value l = kb.fold(kb.index(0), end, {kb.f32(0)},
                      [&](Value j, ValueRange c) -> SmallVector<Value> {
                        Value p = kb.exp(kb.sub(kb.load(row, at(i, j)), m[i]));
                        kb.store(p, row, at(i, j));
                        return {kb.accumulate(c[0], p)};
                      })[0];
    inv.push_back(kb.div(kb.f32(1), l));
  }
  kb.loop(g * dh, [&](Value c) { kb.store(kb.f32(0), o, kb.iadd(oBase, c)); });
  kb.loop(kb.index(0), end, [&](Value j) {
    prefetch(v, j);
    for (int64_t i = 0; i < g; ++i)
      kb.axpy(kb.mul(kb.load(row, at(i, j)), inv[i]), v, keyRow(j, i), o,
              kb.iadd(oBase, i * dh), dh);
  });
}
} // namespace

AttentionQuery mlir::fbt::attentionQuery(KernelBuilder &kb, Value id, int64_t t,
                                         int64_t s, int64_t d, int64_t h,
                                         bool hasPositions, int64_t kvRows) {
  // id = (b * H + head) * T + tq
  int64_t dh = d / h;
  Value tq = kb.irem(id, t), bh = kb.idiv(id, t);
  Value head = kb.irem(bh, h), b = kb.idiv(bh, h);
  Value row = kb.iadd(kb.imul(b, t), tq);
  Value kvRow = b;
  if (kvRows > 0) // the query's own cache row; one outside the cache reads row 0
    kvRow = inRange(kb, kb.toIndex(kb.load(kb.arg(4), row)), kvRows);
  AttentionQuery q;
  q.base = kb.iadd(kb.imul(row, d), kb.imul(head, dh));
  q.kvBase = kb.iadd(kb.imul(kb.imul(kvRow, s), d), kb.imul(head, dh));
  q.last = tq;
  if (hasPositions) // the last cache position this query sees; padding sees 0
    q.last = inRange(kb, kb.toIndex(kb.load(kb.arg(3), row)), s);
  return q;
}

namespace {
/// RoPE (and its inverse, the gradient).
FailureOr<func::FuncOp> buildRope(KernelBuilder &kb, RopeOp rope) {
  // Args: input, [positions], result. HF Llama's rotate-half convention:
  // channel i pairs with i + Dh/2, angle pos * theta^(-2i/Dh).
  ArrayRef<int64_t> x = shape(rope.getInput());
  int64_t t = x[1], d = x[2], h = rope.getNumHeads(), dh = d / h, half = dh / 2;
  bool hasPos = bool(rope.getPositions());
  unsigned outArg = hasPos ? 2 : 1;
  double lnTheta = std::log(rope.getTheta().convertToDouble());
  Value sign = kb.f32(rope.getInverse() ? -1.0 : 1.0);
  double scale = rope.getPositionScale().convertToDouble();
  auto position = [&](Value row) {
    Value pos = hasPos ? kb.toF32(kb.load(kb.arg(1), row)) : kb.toF32(kb.irem(row, t));
    return scale == 1.0 ? pos : kb.mul(pos, kb.f32(scale)); // linear RoPE scaling
  };
  // cos and (signed) sin of pos * theta^(-2i/Dh) for channel pair i.
  auto angle = [&](Value pos, Value i) -> std::pair<Value, Value> {
    Value exponent = kb.div(kb.mul(kb.f32(2), kb.toF32(i)), kb.f32(dh));
    Value invFreq = kb.exp(kb.neg(kb.mul(exponent, kb.f32(lnTheta))));
    Value a = kb.mul(pos, invFreq);
    return {kb.cos(a), kb.mul(sign, kb.sin(a))};
  };
  auto rotate = [&](Value row, Value head, Value i, Value c, Value sn) {
    Value i1 = kb.iadd(kb.iadd(kb.imul(row, d), kb.imul(head, dh)), i);
    Value i2 = kb.iadd(i1, half);
    Value x1 = kb.load(kb.arg(0), i1), x2 = kb.load(kb.arg(0), i2);
    kb.store(kb.sub(kb.mul(x1, c), kb.mul(x2, sn)), kb.arg(outArg), i1);
    kb.store(kb.add(kb.mul(x2, c), kb.mul(x1, sn)), kb.arg(outArg), i2);
  };
  if (kb.gpu()) { // a thread per channel pair, the pair's angle its own
    kb.elements(x[0] * t, h * half, [&](Value row, Value j) {
      Value head = kb.idiv(j, half), i = kb.irem(j, half);
      auto [c, sn] = angle(position(row), i);
      rotate(row, head, i, c, sn);
    });
    return kb.finish();
  }
  kb.parallel(x[0] * t, [&](Value row) {
    Value pos = position(row);
    kb.loop(half, [&](Value i) {
      std::pair<Value, Value> cs = angle(pos, i); // once per pair, every head
      kb.loop(h, [&](Value head) { rotate(row, head, i, cs.first, cs.second); });
    });
  });
  return kb.finish();
}

/// Causal attention over the KV rows, a parallel unit per (batch, group of
/// heads, query) on the CPU.
FailureOr<func::FuncOp> buildAttention(KernelBuilder &kb, AttentionOp attn) {
  // Args: q [B,T,D], k, v [B,S,D] (or [R,S,D]), [positions [B,T]],
  // [query rows [B,T]], out [B,T,D].
  ArrayRef<int64_t> q = shape(attn.getQuery()), k = shape(attn.getKey());
  int64_t bsz = q[0], t = q[1], d = q[2], s = k[1], h = attn.getNumHeads(),
          dh = d / h;
  bool hasPos = bool(attn.getQueryPositions());
  int64_t kvRows = attn.getQueryRows() ? k[0] : 0;
  unsigned outArg = 3 + hasPos + (kvRows > 0);
  double scale = 1.0 / std::sqrt((double)dh);
  if (kb.gpu())
    return buildAttentionGpu(kb, bsz, t, s, d, h, hasPos, kvRows, outArg);
  // A parallel unit per (batch, group of heads, query): attentionQuery's
  // "head" is then the group, of g * dh channels.
  int64_t g = headGroup(kb.knob(Knob::HeadGroup, kHeadGroup), h);
  int64_t ahead = kb.knob(Knob::PrefetchKeys, kPrefetchKeys);
  kb.parallel(bsz * (h / g) * t, [&](Value id) {
    AttentionQuery q = attentionQuery(kb, id, t, s, d, h / g, hasPos, kvRows);
    attendHeads(kb, kb.arg(0), q.base, kb.arg(1), kb.arg(2), q.kvBase, d,
                q.last, dh, g, s, scale, kb.scratch(g * s), kb.arg(outArg),
                q.base, ahead);
  });
  return kb.finish();
}

/// Attention's gradient: dq, dk and dv.
FailureOr<func::FuncOp> buildAttentionGrad(KernelBuilder &kb, AttentionGradOp g) {
  // Args: dout, q, k, v, out | dq, dk, dv, all [B,T,D]. One parallel unit
  // per (batch, head); query blocks run in order so dk and dv accumulate
  // race-free.
  ArrayRef<int64_t> q = shape(g.getQuery());
  int64_t bsz = q[0], t = q[1], d = q[2], h = g.getNumHeads(), dh = d / h;
  double scale = 1.0 / std::sqrt((double)dh);
  Value dout = kb.arg(0), qm = kb.arg(1), km = kb.arg(2), vm = kb.arg(3);
  Value om = kb.arg(4);
  Value dq = kb.arg(5), dk = kb.arg(6), dv = kb.arg(7);
  if (kb.gpu())
    return buildAttentionGradGpu(kb, bsz, t, d, h);
  Value ninf = kb.f32(-std::numeric_limits<float>::infinity());
  int64_t queryBlock = std::min(kb.knob(Knob::QueryBlock, kQueryBlock), t);
  kb.parallel(bsz * h, [&](Value bh) {
    Value head = kb.irem(bh, h), b = kb.idiv(bh, h);
    Value base = kb.iadd(kb.imul(kb.imul(b, t), d), kb.imul(head, dh));
    auto rowBase = [&](Value pos) { return kb.iadd(base, kb.imul(pos, d)); };
    kb.loop(t, [&](Value pos) {
      kb.loop(dh, [&](Value c) {
        Value i = kb.iadd(rowBase(pos), c);
        kb.store(kb.f32(0), dq, i);
        kb.store(kb.f32(0), dk, i);
        kb.store(kb.f32(0), dv, i);
      });
    });
    // Queries in blocks of queryBlock: per query its probabilities in a
    // scratch row (as in attendRow), zero past its last key up to the
    // block's, then one pass over the block's keys: per query
    // dS_j = P_j (dP_j - D) and dq += dS k_j; dk_j += sum dS q and
    // dv_j += sum P_j dout for the whole block, so each key's dk and dv
    // are loaded and stored once per block, not once per query. The terms
    // are added in query order, as one query at a time would.
    Value prob = kb.scratch(queryBlock * t);
    auto block = [&](Value t0, int64_t rows) {
      Value blockEnd = kb.iadd(t0, rows);
      SmallVector<Value> qb, inv, delta;
      for (int64_t r = 0; r < rows; ++r) {
        Value tq = kb.iadd(t0, r), pr = kb.index(r * t);
        qb.push_back(rowBase(tq));
        Value end = kb.iadd(tq, 1);
        Value m = kb.foldRows(kb.index(0), end, {ninf},
                          [&](Value j, ValueRange c) -> SmallVector<Value> {
                            Value s = kb.mul(dot(kb, qm, qb[r], km, rowBase(j), dh),
                                             kb.f32(scale));
                            kb.store(s, prob, kb.iadd(pr, j));
                            return {kb.max(c[0], s)};
                          })[0];
        Value l = kb.fold(kb.index(0), end, {kb.f32(0)},
                          [&](Value j, ValueRange c) -> SmallVector<Value> {
                            Value at = kb.iadd(pr, j);
                            Value p = kb.exp(kb.sub(kb.load(prob, at), m));
                            kb.store(p, prob, at);
                            return {kb.accumulate(c[0], p)};
                          })[0];
        inv.push_back(kb.div(kb.f32(1), l));
        kb.loop(end, blockEnd, [&](Value j) { kb.store(kb.f32(0), prob, kb.iadd(pr, j)); });
        // D = sum_j P_j (dout . v_j) = dout . out: no pass over the keys.
        delta.push_back(dot(kb, dout, qb[r], om, qb[r], dh));
      }
      kb.loop(kb.index(0), blockEnd, [&](Value j) {
        Value kbj = rowBase(j);
        SmallVector<Value> p, ds;
        for (int64_t r = 0; r < rows; ++r) {
          p.push_back(kb.mul(kb.load(prob, kb.iadd(kb.index(r * t), j)), inv[r]));
          Value dp = dot(kb, dout, qb[r], vm, kbj, dh);
          ds.push_back(kb.mul(kb.mul(p[r], kb.sub(dp, delta[r])), kb.f32(scale)));
          kb.axpy(ds[r], km, kbj, dq, qb[r], dh);
        }
        kb.axpy(ds, qm, qb, dk, kbj, dh);
        kb.axpy(p, dout, qb, dv, kbj, dh);
      });
    };
    int64_t full = t / queryBlock * queryBlock;
    kb.loop(kb.index(0), kb.index(full), kb.index(queryBlock),
            [&](Value t0) { block(t0, queryBlock); });
    if (full < t) // the last queries one at a time
      kb.loop(kb.index(full), kb.index(t), [&](Value tq) { block(tq, 1); });
  });
  return kb.finish();
}

/// New rows into a KV cache, in place where the runtime allows it.
FailureOr<func::FuncOp> buildKVWrite(KernelBuilder &kb, KVWriteOp w) {
  // Args: cache [B,S,D], update [N,T,D], [positions [N,T]], [rows [N,T]],
  // out [B,S,D]. The runtime runs this in place (out is the cache);
  // otherwise the cache is copied first. Without rows N is B and update row
  // n goes to cache row n.
  ArrayRef<int64_t> c = shape(w.getCache()), u = shape(w.getUpdate());
  int64_t bsz = c[0], s = c[1], d = c[2], n = u[0], t = u[1];
  bool hasPos = bool(w.getPositions()), hasRows = bool(w.getRows());
  Value out = kb.arg(2 + hasPos + hasRows);
  // Where update row `row` goes: its cache row's base, and whether it is
  // written at all (a position or row outside the cache is padding).
  auto target = [&](Value row, function_ref<void(Value)> write) {
    Value pos = hasPos ? kb.toIndex(kb.load(kb.arg(2), row)) : kb.irem(row, t);
    Value b0 = hasRows ? kb.toIndex(kb.load(kb.arg(3), row)) : kb.idiv(row, t);
    Value inside = kb.icmp(arith::CmpIPredicate::ult, pos, kb.index(s));
    if (hasRows)
      inside = arith::AndIOp::create(
          kb.builder(), kb.location(), inside,
          kb.icmp(arith::CmpIPredicate::ult, b0, kb.index(bsz)));
    kb.ifThen(inside, [&] { write(kb.imul(kb.iadd(kb.imul(b0, s), pos), d)); });
  };
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  if (kb.gpu()) {
    // The copy is its own launch (every thread checks that it is needed),
    // then a thread per written channel.
    kb.parallel(bsz * s * d, [&](Value i) {
      Value src = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, kb.arg(0));
      Value dst = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, out);
      kb.ifThen(kb.icmp(arith::CmpIPredicate::ne, src, dst),
                [&] { kb.store(kb.load(kb.arg(0), i), out, i); });
    });
    kb.elements(n * t, d, [&](Value row, Value ch) {
      target(row, [&](Value dstBase) {
        kb.store(kb.load(kb.arg(1), kb.iadd(kb.imul(row, d), ch)), out,
                 kb.iadd(dstBase, ch));
      });
    });
    return kb.finish();
  }
  Value src = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, kb.arg(0));
  Value dst = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, out);
  kb.ifThen(kb.icmp(arith::CmpIPredicate::ne, src, dst), [&] {
    kb.parallel(bsz * s * d, [&](Value i) {
      kb.store(kb.load(kb.arg(0), i), out, i);
    });
  });
  kb.parallel(n * t, [&](Value row) {
    target(row, [&](Value dstBase) {
      kb.loop(d, [&](Value ch) {
        kb.store(kb.load(kb.arg(1), kb.iadd(kb.imul(row, d), ch)), out,
                 kb.iadd(dstBase, ch));
      });
    });
  });
  return kb.finish();
}

/// One row per batch entry, at its position (the last prompt token's).
FailureOr<func::FuncOp> buildGatherPositions(KernelBuilder &kb, GatherPositionsOp g) {
  // Args: input [B,T,D] (or [1,T,D], every b's), index [B], out [B,1,D].
  ArrayRef<int64_t> x = shape(g.getInput());
  int64_t t = x[1], d = x[2], bsz = shape(g.getIndex())[0];
  bool shared = x[0] == 1;
  kb.elements(bsz, d, [&](Value b, Value c) {
    Value p = kb.toIndex(kb.load(kb.arg(1), b));
    Value safe = kb.select(kb.icmp(arith::CmpIPredicate::ult, p, kb.index(t)),
                           p, kb.index(t - 1));
    Value first = shared ? safe : kb.iadd(kb.imul(b, t), safe);
    Value srcBase = kb.imul(first, d);
    kb.store(kb.load(kb.arg(0), kb.iadd(srcBase, c)), kb.arg(2),
             kb.iadd(kb.imul(b, d), c));
  });
  return kb.finish();
}
} // namespace

FailureOr<func::FuncOp> mlir::fbt::buildAttentionKernel(KernelBuilder &kb,
                                                        Operation *op) {
  if (auto rope = dyn_cast<RopeOp>(op))
    return buildRope(kb, rope);
  if (auto attn = dyn_cast<AttentionOp>(op))
    return buildAttention(kb, attn);
  if (auto g = dyn_cast<AttentionGradOp>(op))
    return buildAttentionGrad(kb, g);
  if (auto w = dyn_cast<KVWriteOp>(op))
    return buildKVWrite(kb, w);
  if (auto g = dyn_cast<GatherPositionsOp>(op))
    return buildGatherPositions(kb, g);
  return failure();
}
