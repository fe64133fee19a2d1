//===- KernelsAttentionGpu.cpp - attention mapped to GPU warps ------------===//
//
// One warp per query row (forward) or key row (backward): the warp's lanes
// hold the head's channels in registers (channel c in lane c % 32), a score
// is a warp-shuffle reduction, and the keys stream through once with an
// online softmax, so no T x T matrix is stored. Over whole sequences the
// forward puts four queries' warps in one block, which share tiles of K and
// V loaded into shared memory; with a KV cache (decode) each warp reads its
// keys itself.
//
// The backward recomputes the probabilities from per-query statistics
// (log-sum-exp and D = dout . out) in three launches:
//   1. per query: m, l over its keys, lse = m + log l, D; parked in dq's
//      first two channels of the head (dq is written last);
//   2. per key j: dk_j = sum_i dS_ij q_i, dv_j = sum_i P_ij dout_i over the
//      queries i >= j that see it;
//   3. per query i: dq_i = sum_j dS_ij k_j, after reading its parked stats.
// Each output row is written by exactly one warp: no atomics, and the sums
// run in a fixed order.
//
//===----------------------------------------------------------------------===//

#include "codegen/KernelsAttentionGpu.h"
#include "codegen/KernelBuilder.h"

#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::fbt;

namespace {
/// The channels of one head that a lane holds: lane + 32 k for k < n.
struct LaneChannels {
  KernelBuilder &kb;
  int64_t dh, n;
  Value lane;

  LaneChannels(KernelBuilder &kb, int64_t dh)
      : LaneChannels(kb, dh, kb.rowThread()) {}
  LaneChannels(KernelBuilder &kb, int64_t dh, Value lane)
      : kb(kb), dh(dh), n((dh + 31) / 32), lane(lane) {}

  bool ragged() const { return dh % 32 != 0; }
  Value channel(int64_t k) { return kb.iadd(lane, 32 * k); }
  Value valid(int64_t k) {
    return kb.icmp(arith::CmpIPredicate::ult, channel(k), kb.index(dh));
  }
  /// mem[base + channel k], 0 past the head's last channel.
  Value load(Value mem, Value base, int64_t k) {
    if (!ragged())
      return kb.load(mem, kb.iadd(base, channel(k)));
    Value ok = valid(k);
    Value c = kb.select(ok, channel(k), kb.index(0));
    return kb.select(ok, kb.load(mem, kb.iadd(base, c)), kb.f32(0));
  }
  SmallVector<Value> loadAll(Value mem, Value base) {
    SmallVector<Value> v;
    for (int64_t k = 0; k < n; ++k)
      v.push_back(load(mem, base, k));
    return v;
  }
  void store(Value v, Value mem, Value base, int64_t k) {
    auto write = [&] { kb.store(v, mem, kb.iadd(base, channel(k))); };
    if (ragged())
      kb.ifThen(valid(k), write);
    else
      write();
  }
  /// sum_c a_c * mem[base + c] over the head, in every lane.
  Value dot(ArrayRef<Value> a, Value mem, Value base) {
    Value part = kb.f32(0);
    for (int64_t k = 0; k < n; ++k)
      part = kb.add(part, kb.mul(a[k], load(mem, base, k)));
    return kb.warpSum(part);
  }
};

/// Row layout of [B, T, D] split into heads: (b, head, pos) -> flat index of
/// the head's first channel at `pos`.
struct HeadRows {
  KernelBuilder &kb;
  int64_t t, d, h, dh;
  Value base; ///< (b, head) at position 0

  HeadRows(KernelBuilder &kb, int64_t t, int64_t d, int64_t h, Value bh)
      : kb(kb), t(t), d(d), h(h), dh(d / h) {
    Value head = kb.irem(bh, h), b = kb.idiv(bh, h);
    base = kb.iadd(kb.imul(kb.imul(b, t), d), kb.imul(head, dh));
  }
  Value at(Value pos) { return kb.iadd(base, kb.imul(pos, d)); }
};
} // namespace

namespace {
/// Causal self-attention over whole sequences (training, prefill): a block
/// of kQueries warps takes kQueries consecutive queries of one head, and the
/// keys they see stream through shared memory in tiles of kTile rows of K
/// and V, loaded once for the block (coalesced) instead of once per warp.
/// Every warp walks every key of a tile (the causal mask zeroes those past
/// its query), so the warps stay in step between the barriers.
constexpr int64_t kQueries = 4, kTile = 32;

FailureOr<func::FuncOp> buildAttentionTiled(KernelBuilder &kb, int64_t bsz,
                                            int64_t t, int64_t d, int64_t h,
                                            unsigned outArg) {
  int64_t dh = d / h, groups = t / kQueries;
  double scale = 1.0 / std::sqrt((double)dh);
  kb.rows(bsz * h * groups, 32 * kQueries, [&](Value id) {
    // id = (b * H + head) * (T / kQueries) + group
    Value group = kb.irem(id, groups), bh = kb.idiv(id, groups);
    HeadRows rows(kb, t, d, h, bh);
    Value tid = kb.rowThread();
    Value warp = kb.idiv(tid, 32);
    LaneChannels lanes(kb, dh, kb.irem(tid, 32));
    Value first = kb.imul(group, kQueries);
    Value tq = kb.iadd(first, warp);
    Value qb = rows.at(tq);
    SmallVector<Value> q = lanes.loadAll(kb.arg(0), qb);
    Value kTileMem = kb.sharedBuffer(kTile * dh), vTileMem = kb.sharedBuffer(kTile * dh);
    // Tiles up to the block's last query, kQueries - 1 past its first.
    Value tiles = kb.idiv(kb.iadd(first, kQueries - 1 + kTile), kTile);
    SmallVector<Value> init = {kb.f32(-std::numeric_limits<float>::infinity()),
                               kb.f32(0)};
    for (int64_t k = 0; k < lanes.n; ++k)
      init.push_back(kb.f32(0));
    SmallVector<Value> acc = kb.fold(
        kb.index(0), tiles, init, [&](Value tile, ValueRange c) -> SmallVector<Value> {
          Value j0 = kb.imul(tile, kTile);
          // The block loads the tile: thread e takes element e, e + 128, ...
          kb.rowLoop(kTile * dh, [&](Value e) {
            Value key = kb.iadd(j0, kb.idiv(e, dh));
            Value in = kb.icmp(arith::CmpIPredicate::ult, key, kb.index(t));
            Value src = kb.iadd(rows.at(kb.select(in, key, kb.index(0))),
                                kb.irem(e, dh));
            Value zero = kb.f32(0);
            kb.store(kb.select(in, kb.load(kb.arg(1), src), zero), kTileMem, e);
            kb.store(kb.select(in, kb.load(kb.arg(2), src), zero), vTileMem, e);
          });
          kb.rowSync();
          SmallVector<Value> state(c.begin(), c.end());
          state = kb.fold(kb.index(0), kb.index(kTile), state,
                          [&](Value jj, ValueRange st) -> SmallVector<Value> {
            Value key = kb.iadd(j0, jj), row = kb.imul(jj, dh);
            Value seen = kb.icmp(arith::CmpIPredicate::ule, key, tq);
            Value score = kb.mul(lanes.dot(q, kTileMem, row), kb.f32(scale));
            Value m = kb.select(seen, kb.max(st[0], score), st[0]);
            Value corr = kb.exp(kb.sub(st[0], m));
            Value p = kb.select(seen, kb.exp(kb.sub(score, m)), kb.f32(0));
            SmallVector<Value> next = {m, kb.add(kb.mul(st[1], corr), p)};
            for (int64_t k = 0; k < lanes.n; ++k)
              next.push_back(kb.add(kb.mul(st[2 + k], corr),
                                    kb.mul(p, lanes.load(vTileMem, row, k))));
            return next;
          });
          kb.rowSync(); // all warps are done with the tile before the next
          return state;
        });
    Value inv = kb.div(kb.f32(1), acc[1]);
    for (int64_t k = 0; k < lanes.n; ++k)
      lanes.store(kb.mul(acc[2 + k], inv), kb.arg(outArg), qb, k);
  });
  return kb.finish();
}
} // namespace

FailureOr<func::FuncOp> mlir::fbt::buildAttentionGpu(
    KernelBuilder &kb, int64_t bsz, int64_t t, int64_t s, int64_t d, int64_t h,
    bool hasPos, unsigned outArg) {
  if (!hasPos && s == t && t % kQueries == 0)
    return buildAttentionTiled(kb, bsz, t, d, h, outArg);
  int64_t dh = d / h;
  double scale = 1.0 / std::sqrt((double)dh);
  kb.rows(bsz * h * t, 32, [&](Value id) {
    AttentionQuery query = attentionQuery(kb, id, t, s, d, h, hasPos);
    Value qBase = query.base, kvBase = query.kvBase, last = query.last;
    LaneChannels lanes(kb, dh);
    SmallVector<Value> q = lanes.loadAll(kb.arg(0), qBase);
    SmallVector<Value> init = {kb.f32(-std::numeric_limits<float>::infinity()),
                               kb.f32(0)};
    for (int64_t k = 0; k < lanes.n; ++k)
      init.push_back(kb.f32(0));
    SmallVector<Value> acc = kb.fold(
        kb.index(0), kb.iadd(last, 1), init,
        [&](Value j, ValueRange c) -> SmallVector<Value> {
          Value row = kb.iadd(kvBase, kb.imul(j, d));
          Value score = kb.mul(lanes.dot(q, kb.arg(1), row), kb.f32(scale));
          Value m = kb.max(c[0], score);
          Value corr = kb.exp(kb.sub(c[0], m)), p = kb.exp(kb.sub(score, m));
          SmallVector<Value> next = {m, kb.add(kb.mul(c[1], corr), p)};
          for (int64_t k = 0; k < lanes.n; ++k)
            next.push_back(kb.add(kb.mul(c[2 + k], corr),
                                  kb.mul(p, lanes.load(kb.arg(2), row, k))));
          return next;
        });
    Value inv = kb.div(kb.f32(1), acc[1]);
    for (int64_t k = 0; k < lanes.n; ++k)
      lanes.store(kb.mul(acc[2 + k], inv), kb.arg(outArg), qBase, k);
  });
  return kb.finish();
}

FailureOr<func::FuncOp> mlir::fbt::buildAttentionGradGpu(KernelBuilder &kb,
                                                         int64_t bsz, int64_t t,
                                                         int64_t d, int64_t h) {
  int64_t dh = d / h;
  double scale = 1.0 / std::sqrt((double)dh);
  Value dout = kb.arg(0), qm = kb.arg(1), km = kb.arg(2), vm = kb.arg(3);
  Value om = kb.arg(4), dq = kb.arg(5), dk = kb.arg(6), dv = kb.arg(7);
  Value ninf = kb.f32(-std::numeric_limits<float>::infinity());
  auto score = [&](LaneChannels &lanes, ArrayRef<Value> q, Value kRow) {
    return kb.mul(lanes.dot(q, km, kRow), kb.f32(scale));
  };
  // dS_ij = P_ij (dout_i . v_j - D_i) * scale, with P_ij = exp(s_ij - lse_i).
  auto probAndGrad = [&](LaneChannels &lanes, ArrayRef<Value> q,
                         ArrayRef<Value> dOut, Value kRow, Value lse,
                         Value delta) -> std::pair<Value, Value> {
    Value p = kb.exp(kb.sub(score(lanes, q, kRow), lse));
    Value dp = lanes.dot(dOut, vm, kRow);
    return {p, kb.mul(kb.mul(p, kb.sub(dp, delta)), kb.f32(scale))};
  };

  // 1. Per query: lse and D, parked in dq.
  kb.rows(bsz * h * t, 32, [&](Value id) {
    Value tq = kb.irem(id, t);
    HeadRows rows(kb, t, d, h, kb.idiv(id, t));
    LaneChannels lanes(kb, dh);
    Value qb = rows.at(tq);
    SmallVector<Value> q = lanes.loadAll(qm, qb);
    SmallVector<Value> ml = kb.fold(
        kb.index(0), kb.iadd(tq, 1), {ninf, kb.f32(0)},
        [&](Value j, ValueRange c) -> SmallVector<Value> {
          Value sc = score(lanes, q, rows.at(j)), m = kb.max(c[0], sc);
          return {m, kb.add(kb.mul(c[1], kb.exp(kb.sub(c[0], m))),
                            kb.exp(kb.sub(sc, m)))};
        });
    Value lse = kb.add(ml[0], kb.log(ml[1]));
    Value delta = lanes.dot(lanes.loadAll(dout, qb), om, qb);
    kb.rowLeader([&] {
      kb.store(lse, dq, qb);
      kb.store(delta, dq, kb.iadd(qb, 1));
    });
  });

  // 2. Per key j: dk_j and dv_j over the queries i >= j.
  kb.rows(bsz * h * t, 32, [&](Value id) {
    Value j = kb.irem(id, t);
    HeadRows rows(kb, t, d, h, kb.idiv(id, t));
    LaneChannels lanes(kb, dh);
    Value kRow = rows.at(j);
    SmallVector<Value> init;
    for (int64_t k = 0; k < 2 * lanes.n; ++k)
      init.push_back(kb.f32(0));
    SmallVector<Value> acc = kb.fold(
        j, kb.index(t), init, [&](Value i, ValueRange c) -> SmallVector<Value> {
          Value qi = rows.at(i);
          SmallVector<Value> q = lanes.loadAll(qm, qi);
          SmallVector<Value> dOut = lanes.loadAll(dout, qi);
          Value lse = kb.load(dq, qi), delta = kb.load(dq, kb.iadd(qi, 1));
          auto [p, ds] = probAndGrad(lanes, q, dOut, kRow, lse, delta);
          SmallVector<Value> next;
          for (int64_t k = 0; k < lanes.n; ++k)
            next.push_back(kb.add(c[k], kb.mul(ds, q[k])));
          for (int64_t k = 0; k < lanes.n; ++k)
            next.push_back(kb.add(c[lanes.n + k], kb.mul(p, dOut[k])));
          return next;
        });
    for (int64_t k = 0; k < lanes.n; ++k) {
      lanes.store(acc[k], dk, kRow, k);
      lanes.store(acc[lanes.n + k], dv, kRow, k);
    }
  });

  // 3. Per query i: dq_i over the keys j <= i, replacing the parked stats.
  kb.rows(bsz * h * t, 32, [&](Value id) {
    Value tq = kb.irem(id, t);
    HeadRows rows(kb, t, d, h, kb.idiv(id, t));
    LaneChannels lanes(kb, dh);
    Value qb = rows.at(tq);
    Value lse = kb.load(dq, qb), delta = kb.load(dq, kb.iadd(qb, 1));
    kb.rowSync(); // every lane has read the stats before any lane writes dq
    SmallVector<Value> q = lanes.loadAll(qm, qb);
    SmallVector<Value> dOut = lanes.loadAll(dout, qb);
    SmallVector<Value> init;
    for (int64_t k = 0; k < lanes.n; ++k)
      init.push_back(kb.f32(0));
    SmallVector<Value> acc = kb.fold(
        kb.index(0), kb.iadd(tq, 1), init,
        [&](Value j, ValueRange c) -> SmallVector<Value> {
          Value kRow = rows.at(j);
          Value ds = probAndGrad(lanes, q, dOut, kRow, lse, delta).second;
          SmallVector<Value> next;
          for (int64_t k = 0; k < lanes.n; ++k)
            next.push_back(kb.add(c[k], kb.mul(ds, lanes.load(km, kRow, k))));
          return next;
        });
    for (int64_t k = 0; k < lanes.n; ++k)
      lanes.store(acc[k], dq, qb, k);
  });
  return kb.finish();
}
