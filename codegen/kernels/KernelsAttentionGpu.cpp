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
// (log-sum-exp and D = dout . out) in three launches, each tiled like the
// forward:
//   1. per query: m, l over its keys, lse = m + log l, D; parked in dq's
//      first two channels of the head (dq is written last). dq is marked
//      fbt.early_write: the bundle lists it under "early_writes", and the
//      loader refuses a plan whose dq shares memory with an operand;
//   2. per key j: dk_j = sum_i dS_ij q_i, dv_j = sum_i P_ij dout_i over the
//      queries i >= j that see it (their q, dout and stats in the tiles);
//   3. per query i: dq_i = sum_j dS_ij k_j, after reading its parked stats.
// Each output row is written by exactly one warp: no atomics, and the sums
// run in a fixed order.
//
//===----------------------------------------------------------------------===//

#include "codegen/kernels/KernelsAttentionGpu.h"
#include "codegen/kernels/KernelBuilder.h"
#include "codegen/kernels/Kernels.h"

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

/// Over whole sequences a block holds kWarps warps, one per row (query or
/// key) of one head, and the rows they walk stream through shared memory a
/// tile at a time, loaded once for the block (coalesced) instead of once per
/// warp. Every warp walks every row of a tile (a mask zeroes the ones it
/// must not see), so the warps stay in step between the barriers. Both
/// numbers are knobs (QueryBlock, KeyTile); these are the defaults.
constexpr int64_t kWarps = 4;

/// Rows per tile: a tile of a few [rows, Dh] matrices stays well inside the
/// 48 KiB of static shared memory.
int64_t tileRows(int64_t dh) { return dh > 64 ? 16 : 32; }

/// The row of a block's warp: block `id` of ceil(T / warps) per head takes
/// rows first .. first + warps - 1. A warp past T works on row T - 1 and
/// stores nothing (it still meets the barriers).
struct WarpRow {
  HeadRows rows;
  LaneChannels lanes;
  Value first, row, valid, base;
  int64_t warps;

  WarpRow(KernelBuilder &kb, Value id, int64_t t, int64_t d, int64_t h,
          int64_t warps)
      : rows(kb, t, d, h, kb.idiv(id, (t + warps - 1) / warps)),
        lanes(kb, d / h, kb.irem(kb.rowThread(), 32)), warps(warps) {
    int64_t groups = (t + warps - 1) / warps;
    first = kb.imul(kb.irem(id, groups), warps);
    Value mine = kb.iadd(first, kb.idiv(kb.rowThread(), 32));
    valid = kb.icmp(arith::CmpIPredicate::ult, mine, kb.index(t));
    row = kb.select(valid, mine, kb.index(t - 1));
    base = rows.at(row);
  }
  /// The block's last row, clamped to T - 1.
  Value last(KernelBuilder &kb, int64_t t) {
    Value l = kb.iadd(first, warps - 1);
    return kb.select(kb.icmp(arith::CmpIPredicate::ult, l, kb.index(t)), l,
                     kb.index(t - 1));
  }
  /// Stores this warp's channels, if its row is real.
  void store(KernelBuilder &kb, ArrayRef<Value> v, Value mem) {
    kb.ifThen(valid, [&] {
      for (int64_t k = 0; k < lanes.n; ++k)
        lanes.store(v[k], mem, base, k);
    });
  }
  /// Runs `then` in lane 0 of a real row's warp.
  void leader(KernelBuilder &kb, function_ref<void()> then) {
    Value lane0 = kb.icmp(arith::CmpIPredicate::eq, lanes.lane, kb.index(0));
    kb.ifThen(arith::AndIOp::create(kb.builder(), kb.location(), valid, lane0),
              then);
  }
};

/// Walks rows [from, to] of the head (from rounded down to a tile) through
/// shared memory: for each tile, the block copies those rows of every matrix
/// in `mats` (and, if `stats`, the two floats each row of `stats` holds in
/// channels 0 and 1) into `tiles` (and `statTile`), then
/// body(other row, its offset in a tile, state) runs for each of the tile's
/// rows, rows past T reading zeros. Returns the final state.
SmallVector<Value>
streamTiles(KernelBuilder &kb, HeadRows &rows, int64_t t, int64_t dh,
            int64_t tile, Value from, Value to, ArrayRef<Value> mats,
            ArrayRef<Value> tiles, Value stats, Value statTile, ValueRange init,
            function_ref<SmallVector<Value>(Value, Value, ValueRange)> body) {
  Value lo = kb.idiv(from, tile), hi = kb.iadd(kb.idiv(to, tile), 1);
  return kb.fold(lo, hi, init, [&](Value ti, ValueRange c) -> SmallVector<Value> {
    Value j0 = kb.imul(ti, tile);
    auto source = [&](Value r) { // the row, clamped into [0, T), and if real
      Value other = kb.iadd(j0, r);
      Value in = kb.icmp(arith::CmpIPredicate::ult, other, kb.index(t));
      return std::make_pair(rows.at(kb.select(in, other, kb.index(0))), in);
    };
    kb.rowLoop(tile * dh, [&](Value e) {
      auto [at, in] = source(kb.idiv(e, dh));
      Value src = kb.iadd(at, kb.irem(e, dh));
      for (auto [mat, shared] : llvm::zip(mats, tiles))
        kb.store(kb.select(in, kb.load(mat, src), kb.f32(0)), shared, e);
    });
    if (stats)
      kb.rowLoop(2 * tile, [&](Value e) {
        auto [at, in] = source(kb.idiv(e, 2));
        Value v = kb.load(stats, kb.iadd(at, kb.irem(e, 2)));
        kb.store(kb.select(in, v, kb.f32(0)), statTile, e);
      });
    kb.rowSync();
    SmallVector<Value> state = kb.fold(
        kb.index(0), kb.index(tile), c, [&](Value r, ValueRange st) {
          return body(kb.iadd(j0, r), r, st);
        });
    kb.rowSync(); // every warp is done with the tile before the next
    return state;
  });
}

FailureOr<func::FuncOp> buildAttentionTiled(KernelBuilder &kb, int64_t bsz,
                                            int64_t t, int64_t d, int64_t h,
                                            unsigned outArg) {
  int64_t dh = d / h, tile = kb.knob(Knob::KeyTile, tileRows(dh));
  int64_t warps = kb.knob(Knob::QueryBlock, kWarps);
  double scale = 1.0 / std::sqrt((double)dh);
  kb.rows(bsz * h * ((t + warps - 1) / warps), 32 * warps, [&](Value id) {
    WarpRow w(kb, id, t, d, h, warps);
    LaneChannels &lanes = w.lanes;
    SmallVector<Value> q = lanes.loadAll(kb.arg(0), w.base);
    Value kTile = kb.sharedBuffer(tile * dh), vTile = kb.sharedBuffer(tile * dh);
    SmallVector<Value> init = {kb.f32(-std::numeric_limits<float>::infinity()),
                               kb.f32(0)};
    for (int64_t k = 0; k < lanes.n; ++k)
      init.push_back(kb.f32(0));
    SmallVector<Value> acc = streamTiles(
        kb, w.rows, t, dh, tile, kb.index(0), w.last(kb, t),
        {kb.arg(1), kb.arg(2)}, {kTile, vTile}, Value(), Value(), init,
        [&](Value key, Value r, ValueRange st) -> SmallVector<Value> {
          Value row = kb.imul(r, dh);
          Value seen = kb.icmp(arith::CmpIPredicate::ule, key, w.row);
          Value score = kb.mul(lanes.dot(q, kTile, row), kb.f32(scale));
          Value m = kb.select(seen, kb.max(st[0], score), st[0]);
          Value corr = kb.exp(kb.sub(st[0], m));
          Value p = kb.select(seen, kb.exp(kb.sub(score, m)), kb.f32(0));
          SmallVector<Value> next = {m, kb.add(kb.mul(st[1], corr), p)};
          for (int64_t k = 0; k < lanes.n; ++k)
            next.push_back(kb.add(kb.mul(st[2 + k], corr),
                                  kb.mul(p, lanes.load(vTile, row, k))));
          return next;
        });
    Value inv = kb.div(kb.f32(1), acc[1]);
    SmallVector<Value> out;
    for (int64_t k = 0; k < lanes.n; ++k)
      out.push_back(kb.mul(acc[2 + k], inv));
    w.store(kb, out, kb.arg(outArg));
  });
  return kb.finish();
}
} // namespace

FailureOr<func::FuncOp> mlir::fbt::buildAttentionGpu(
    KernelBuilder &kb, int64_t bsz, int64_t t, int64_t s, int64_t d, int64_t h,
    bool hasPos, int64_t kvRows, unsigned outArg) {
  if (!hasPos && s == t)
    return buildAttentionTiled(kb, bsz, t, d, h, outArg);
  // With a KV cache: a warp per query, reading its keys itself.
  int64_t dh = d / h;
  double scale = 1.0 / std::sqrt((double)dh);
  kb.rows(bsz * h * t, 32, [&](Value id) {
    AttentionQuery query = attentionQuery(kb, id, t, s, d, h, hasPos, kvRows);
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

namespace {
/// The GPU attention gradient in three phases over the same blocks of
/// warps (a warp per query or key row), sharing the shapes and buffers.
struct AttentionGradGpu {
  KernelBuilder &kb;
  int64_t t, d, h, dh, tile, warps, blocks, threads;
  double scale;
  Value dout, qm, km, vm, om, dq, dk, dv, ninf;

  AttentionGradGpu(KernelBuilder &kb, int64_t bsz, int64_t t, int64_t d,
                   int64_t h)
      : kb(kb), t(t), d(d), h(h), dh(d / h),
        tile(kb.knob(Knob::KeyTile, tileRows(dh))),
        warps(kb.knob(Knob::QueryBlock, kWarps)),
        blocks(bsz * h * ((t + warps - 1) / warps)), threads(32 * warps),
        scale(1.0 / std::sqrt((double)dh)), dout(kb.arg(0)), qm(kb.arg(1)),
        km(kb.arg(2)), vm(kb.arg(3)), om(kb.arg(4)), dq(kb.arg(5)),
        dk(kb.arg(6)), dv(kb.arg(7)),
        ninf(kb.f32(-std::numeric_limits<float>::infinity())) {}

  SmallVector<Value> zeros(int64_t n) {
    SmallVector<Value> z;
    for (int64_t k = 0; k < n; ++k)
      z.push_back(kb.f32(0));
    return z;
  }
  /// dS = P (dP - D) * scale, P = exp(s - lse), for a pair the mask lets be.
  std::pair<Value, Value> gradient(Value seen, Value score, Value dp, Value lse,
                                   Value delta) {
    Value p = kb.select(seen, kb.exp(kb.sub(score, lse)), kb.f32(0));
    return std::make_pair(p, kb.mul(kb.mul(p, kb.sub(dp, delta)), kb.f32(scale)));
  }

  /// 1. Per query: lse and D, parked in dq's first two channels of the head.
  void statistics() {
    kb.rows(blocks, threads, [&](Value id) {
      WarpRow w(kb, id, t, d, h, warps);
      LaneChannels &lanes = w.lanes;
      SmallVector<Value> q = lanes.loadAll(qm, w.base);
      Value kTile = kb.sharedBuffer(tile * dh);
      SmallVector<Value> ml = streamTiles(
          kb, w.rows, t, dh, tile, kb.index(0), w.last(kb, t), {km}, {kTile},
          Value(), Value(), {ninf, kb.f32(0)},
          [&](Value key, Value r, ValueRange st) -> SmallVector<Value> {
            Value seen = kb.icmp(arith::CmpIPredicate::ule, key, w.row);
            Value score = kb.mul(lanes.dot(q, kTile, kb.imul(r, dh)), kb.f32(scale));
            Value m = kb.select(seen, kb.max(st[0], score), st[0]);
            Value p = kb.select(seen, kb.exp(kb.sub(score, m)), kb.f32(0));
            return {m, kb.add(kb.mul(st[1], kb.exp(kb.sub(st[0], m))), p)};
          });
      Value lse = kb.add(ml[0], kb.log(ml[1]));
      Value delta = lanes.dot(lanes.loadAll(dout, w.base), om, w.base);
      w.leader(kb, [&] {
        kb.store(lse, dq, w.base);
        kb.store(delta, dq, kb.iadd(w.base, 1));
      });
    });
  }

  /// 2. Per key j: dk_j and dv_j over the queries i >= j, whose q, dout and
  ///    statistics stream through shared memory.
  void keyGradients() {
    kb.rows(blocks, threads, [&](Value id) {
      WarpRow w(kb, id, t, d, h, warps);
      LaneChannels &lanes = w.lanes;
      SmallVector<Value> k = lanes.loadAll(km, w.base), v = lanes.loadAll(vm, w.base);
      Value qTile = kb.sharedBuffer(tile * dh), dTile = kb.sharedBuffer(tile * dh);
      Value sTile = kb.sharedBuffer(2 * tile);
      SmallVector<Value> acc = streamTiles(
          kb, w.rows, t, dh, tile, w.first, kb.index(t - 1), {qm, dout},
          {qTile, dTile}, dq, sTile, zeros(2 * lanes.n),
          [&](Value query, Value r, ValueRange st) -> SmallVector<Value> {
            Value row = kb.imul(r, dh);
            Value seen = kb.icmp(arith::CmpIPredicate::uge, query, w.row);
            Value score = kb.mul(lanes.dot(k, qTile, row), kb.f32(scale));
            Value dp = lanes.dot(v, dTile, row);
            Value lse = kb.load(sTile, kb.imul(r, 2));
            Value delta = kb.load(sTile, kb.iadd(kb.imul(r, 2), 1));
            auto [p, ds] = gradient(seen, score, dp, lse, delta);
            SmallVector<Value> next;
            for (int64_t c = 0; c < lanes.n; ++c)
              next.push_back(kb.add(st[c], kb.mul(ds, lanes.load(qTile, row, c))));
            for (int64_t c = 0; c < lanes.n; ++c)
              next.push_back(kb.add(st[lanes.n + c], kb.mul(p, lanes.load(dTile, row, c))));
            return next;
          });
      w.store(kb, ArrayRef<Value>(acc).take_front(lanes.n), dk);
      w.store(kb, ArrayRef<Value>(acc).drop_front(lanes.n), dv);
    });
  }

  /// 3. Per query i: dq_i over the keys j <= i, replacing the parked stats.
  void queryGradients() {
    kb.rows(blocks, threads, [&](Value id) {
      WarpRow w(kb, id, t, d, h, warps);
      LaneChannels &lanes = w.lanes;
      Value lse = kb.load(dq, w.base), delta = kb.load(dq, kb.iadd(w.base, 1));
      kb.rowSync(); // every warp has read its stats before any writes dq
      SmallVector<Value> q = lanes.loadAll(qm, w.base), dOut = lanes.loadAll(dout, w.base);
      Value kTile = kb.sharedBuffer(tile * dh), vTile = kb.sharedBuffer(tile * dh);
      SmallVector<Value> acc = streamTiles(
          kb, w.rows, t, dh, tile, kb.index(0), w.last(kb, t), {km, vm},
          {kTile, vTile}, Value(), Value(), zeros(lanes.n),
          [&](Value key, Value r, ValueRange st) -> SmallVector<Value> {
            Value row = kb.imul(r, dh);
            Value seen = kb.icmp(arith::CmpIPredicate::ule, key, w.row);
            Value score = kb.mul(lanes.dot(q, kTile, row), kb.f32(scale));
            Value dp = lanes.dot(dOut, vTile, row);
            Value ds = gradient(seen, score, dp, lse, delta).second;
            SmallVector<Value> next;
            for (int64_t c = 0; c < lanes.n; ++c)
              next.push_back(kb.add(st[c], kb.mul(ds, lanes.load(kTile, row, c))));
            return next;
          });
      w.store(kb, acc, dq);
    });
  }
};
} // namespace

FailureOr<func::FuncOp> mlir::fbt::buildAttentionGradGpu(KernelBuilder &kb,
                                                         int64_t bsz, int64_t t,
                                                         int64_t d, int64_t h) {
  AttentionGradGpu g(kb, bsz, t, d, h);
  g.statistics();
  g.keyGradients();
  g.queryGradients();
  func::FuncOp fn = kb.finish();
  // The contract of the parked statistics, for the plan to keep and the
  // loader to check: dq is written while the operands are still being read,
  // so it may share no byte with them.
  fn.setArgAttr(5, kEarlyWriteAttr, UnitAttr::get(fn.getContext()));
  return fn;
}
