//===- KernelsQuant.cpp - products by narrow weights, and their widening --===//
//
// Inference weights (DESIGN.md §8): a weight matrix W [N, K] stored as int8
// values with an f16 scale per group of 32 along each row (the last group
// of a row may be shorter), as bf16, or as the f32 parameter itself. Both
// kernels dequantize as they read, so W crosses memory once, in its own
// width:
//
//   quantized_matmul  y[m, n] = sum_k x[m, k] * W[n, k], f32 arithmetic.
//                     CPU: a grid over the rows of W (threads split them,
//                     or not: Knob::Parallel; narrow rows prefetched
//                     ahead of their reads: Knob::Prefetch),
//                     each row read once for every row of x, in vectors of
//                     8 lanes (16 where the CPU has AVX-512: CpuVectors)
//                     widened in registers, a group's products summed
//                     before its scale multiplies them. GPU: a block
//                     per row of W, its threads striding along K (adjacent
//                     threads read adjacent bytes), a block reduction.
//                     With int8_activations (CPU, any number of rows): x's
//                     rows quantized per group of 32, 32 rows at a time,
//                     then integer dot products scaled by both groups'
//                     scales. W is then bound interleaved 16 rows at a
//                     time (WeightNames.h): a grid over its blocks, where
//                     4 bytes of x broadcast meet 4 columns of 16 rows
//                     (VNNI's vpdpbusd on w + 128, or AVX2's pmaddubsw and
//                     pmaddwd as ggml's Q8_0) and each row's sum lands in
//                     its own lane: BlockDotInt8. The rows after the
//                     blocks, and weights whose K is not whole 4-byte
//                     chunks, go by row (with AVX-512, two groups per 64
//                     bytes; VNNI's vpdpbusd on w xor 0x80).
//   quantized_matmuls several products of one input (CPU): one grid over
//                     all the weights' rows, the input quantized once.
//   dequantize        W as f32, for the library GEMMs of wide prefills.
//
//===----------------------------------------------------------------------===//

#include "codegen/kernels/KernelBuilder.h"
#include "codegen/kernels/Kernels.h"
#include "dialect/FbtOps.h"
#include "runtime/format/WeightNames.h"

#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::fbt;

namespace {
constexpr int64_t kGroup = ::fbt::weights::kGroup;
constexpr int64_t kLanes = KernelBuilder::kVector;
/// Knob::Prefetch's default for narrow weights, in bytes.
constexpr int64_t kDefaultPrefetch = 8192;
/// Rows of x quantized at a time by a product with int8 activations (a
/// prompt's), each block then multiplied by every weight row.
constexpr int64_t kRowBlock = 32;
/// Rows of a block that multiply one weight row at once, its bytes read
/// and prepared once for all of them, where the CPU has AVX-512's 32
/// vector registers: AVX2's 16 spill with two rows' accumulators and
/// scales (bench/results/ab-small-a8-rows.md).
int64_t rowsAtOnce(KernelBuilder &kb) { return kb.cpuVectors() == CpuVectors::Avx2 ? 1 : 2; }

using Values = SmallVector<Value>;

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

/// The sum of `v`'s lanes, in whatever order is fastest (CPU).
Value laneSum(KernelBuilder &kb, Value v) {
  return vector::ReductionOp::create(kb.builder(), kb.location(), vector::CombiningKind::ADD, v,
                                     arith::FastMathFlags::reassoc | arith::FastMathFlags::nsz);
}

/// W's element at flat index `at`, as f32 and unscaled.
Value loadValue(KernelBuilder &kb, const NarrowWeight &w, Value at) {
  OpBuilder &b = kb.builder();
  Value v = memref::LoadOp::create(b, kb.location(), w.values, ValueRange{at});
  if (w.int8())
    return arith::SIToFPOp::create(b, kb.location(), b.getF32Type(), v);
  return v.getType().isF32() ? v : arith::ExtFOp::create(b, kb.location(), b.getF32Type(), v);
}

/// W's elements [at, at + 8) as f32 lanes, unscaled (CPU).
Value loadLanes(KernelBuilder &kb, const NarrowWeight &w, Value at) {
  if (!w.int8())
    return kb.loadVector(w.values, at); // f32, or bf16 widened
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  Value v = vector::LoadOp::create(b, loc, VectorType::get({kLanes}, b.getI8Type()), w.values,
                                   ValueRange{at});
  return arith::SIToFPOp::create(b, loc, VectorType::get({kLanes}, b.getF32Type()), v);
}

/// The scale of row `n`'s group `g`, as f32.
Value scaleOf(KernelBuilder &kb, const NarrowWeight &w, Value n, Value g) {
  OpBuilder &b = kb.builder();
  Value at = kb.iadd(kb.imul(n, w.groups()), g);
  Value s = memref::LoadOp::create(b, kb.location(), w.scales, ValueRange{at});
  return arith::ExtFOp::create(b, kb.location(), b.getF32Type(), s);
}

/// The scales of row `n`'s groups [g0, g0 + 8) as f32 lanes (CPU).
Value scaleLanes(KernelBuilder &kb, const NarrowWeight &w, Value n, Value g0) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  Type half = cast<MemRefType>(w.scales.getType()).getElementType();
  Value at = kb.iadd(kb.imul(n, w.groups()), g0);
  Value s = vector::LoadOp::create(b, loc, VectorType::get({kLanes}, half), w.scales,
                                   ValueRange{at});
  return arith::ExtFOp::create(b, loc, VectorType::get({kLanes}, b.getF32Type()), s);
}

/// Prefetches the `bytes` bytes of W's row data from flat index `at`,
/// `ahead` bytes (Knob::Prefetch) further on: a line of 64 bytes at a time.
void prefetchAhead(KernelBuilder &kb, const NarrowWeight &w, Value at, int64_t bytes,
                   int64_t ahead) {
  if (ahead <= 0)
    return;
  int64_t size = cast<MemRefType>(w.values.getType()).getElementTypeBitWidth() / 8;
  for (int64_t c = 0; c < bytes; c += 64)
    kb.prefetch(w.values, kb.iadd(at, (ahead + c) / size));
}

/// An int8 row's scales of groups [g0, g0 + 8) as f32 lanes (scaleLanes),
/// its weights of those groups prefetched `ahead` bytes on: a group of
/// int8 is half a line, so prefetching per group would ask for each line
/// twice. (Rows of fewer than 8 groups, short enough to stay cached, take
/// their scales one at a time and prefetch nothing.)
Value chunkScales(KernelBuilder &kb, const NarrowWeight &w, Value n, Value g0, int64_t ahead) {
  prefetchAhead(kb, w, kb.iadd(kb.imul(n, w.k), kb.imul(g0, kGroup)), kLanes * kGroup, ahead);
  return scaleLanes(kb, w, n, g0);
}

/// Per accumulator of `accs` (one per row of x the caller multiplies at
/// once, each callback giving a value per accumulator): acc + sum over
/// the `whole` whole groups g of term(g) (a vector as wide as acc) times
/// g's scale broadcast, in the order of g (CPU). A scale
/// loaded, widened and broadcast one group at a time costs as many
/// instructions as the group's int8 dot product: here lanes(g0) gives the
/// scales of 8 groups [g0, g0 + 8) as one vector, each group's lane
/// broadcast by a shuffle; the groups after the last 8 take their lanes
/// from the 8 that end at `whole`. Rows of fewer than 8 groups take
/// single(g), one scale. With `per` = 2, term(g) covers groups g and g + 1,
/// half its lanes each (a 64-byte int8 dot), their scales broadcast into
/// the same halves; `whole` is then even and at least 8. chunkTerm(g0, seen),
/// where given, is added once per 8 groups, right after lanes(g0): `seen` is
/// how many of those 8 an earlier chunk already covered (the last chunk's
/// overlap), whose lanes it must leave out.
Values sumScaledGroups(KernelBuilder &kb, Values accs, int64_t whole,
                       function_ref<Values(Value)> term, function_ref<Values(Value)> lanes,
                       function_ref<Values(Value)> single, int64_t per = 1,
                       function_ref<Values(Value, int64_t)> chunkTerm = nullptr) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  auto wide = cast<VectorType>(accs.front().getType());
  int64_t width = wide.getNumElements();
  auto fma = arith::FastMathFlags::contract;
  auto addAll = [&](Values &to, const Values &terms, const Values &scales) {
    for (auto [a, t, sc] : llvm::zip(to, terms, scales))
      a = arith::AddFOp::create(b, loc, a, arith::MulFOp::create(b, loc, t, sc, fma), fma);
  };
  auto addTerms = [&](Values &to, const Values &terms) {
    for (auto [a, t] : llvm::zip(to, terms))
      a = arith::AddFOp::create(b, loc, a, t, fma);
  };
  auto lane = [&](const Values &scales, int64_t i) {
    SmallVector<int64_t> mask;
    for (int64_t j = 0; j < per; ++j)
      mask.append(width / per, i + j);
    Values out;
    for (Value sc : scales)
      out.push_back(vector::ShuffleOp::create(b, loc, sc, sc, mask));
    return out;
  };
  assert(whole % per == 0 && (per == 1 || whole >= kLanes) && "whole pairs of 8 groups or more");
  if (whole < kLanes) {
    for (int64_t g = 0; g < whole; ++g) {
      Values broadcast;
      for (Value sc : single(kb.index(g)))
        broadcast.push_back(vector::BroadcastOp::create(b, loc, wide, sc));
      addAll(accs, term(kb.index(g)), broadcast);
    }
    return accs;
  }
  int64_t chunks = whole / kLanes;
  accs = kb.fold(kb.index(0), kb.index(chunks), accs,
                 [&](Value c, ValueRange carried) -> Values {
    Value g0 = kb.imul(c, kLanes);
    Values scales = lanes(g0), a(carried.begin(), carried.end());
    if (chunkTerm)
      addTerms(a, chunkTerm(g0, 0));
    for (int64_t i = 0; i < kLanes; i += per)
      addAll(a, term(kb.iadd(g0, i)), lane(scales, i));
    return a;
  });
  if (int64_t first = chunks * kLanes; first < whole) {
    Values scales = lanes(kb.index(whole - kLanes));
    if (chunkTerm)
      addTerms(accs, chunkTerm(kb.index(whole - kLanes), first - (whole - kLanes)));
    for (int64_t g = first; g < whole; g += per)
      addAll(accs, term(kb.index(g)), lane(scales, g - (whole - kLanes)));
  }
  return accs;
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
    total = laneSum(kb, terms.front());
  }
  for (int64_t c = len / kLanes * kLanes; c < len; ++c)
    total = kb.add(total, kb.mul(kb.load(x, kb.iadd(xBase, c)),
                                 loadValue(kb, w, kb.iadd(wBase, c))));
  return total;
}

/// sum_k x[xBase + k] * W[n, k] on the CPU: per whole group, the 32
/// products summed in vector lanes (AVX2: 4 vectors of 8 lanes as a tree;
/// AVX-512: 2 of 16, a multiply and a multiply-add), then added, or for
/// int8 scaled (one multiply-add per group; the scales 8 groups at a time,
/// sumScaledGroups), into a vector accumulator of the same lanes, summed
/// once per row; the last, shorter group after.
Value rowDotCpu(KernelBuilder &kb, const NarrowWeight &w, Value x, Value xBase, Value n,
                int64_t prefetch) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  int64_t lanes = kb.cpuVectors() == CpuVectors::Avx2 ? kLanes : 2 * kLanes;
  auto wide = VectorType::get({lanes}, b.getF32Type());
  auto fma = arith::FastMathFlags::contract;
  Value wBase = kb.imul(n, w.k);
  int64_t whole = w.k / kGroup, rest = w.k % kGroup;
  Value total = kb.f32(0);
  int64_t size = cast<MemRefType>(w.values.getType()).getElementTypeBitWidth() / 8;
  Type element = cast<MemRefType>(w.values.getType()).getElementType();
  auto groupDot = [&](Value g) { // the group's 32 products, unscaled, in `lanes` lanes
    Value off = kb.imul(g, kGroup);
    if (!w.int8()) // int8 rows prefetch 8 groups at a time (chunkScales)
      prefetchAhead(kb, w, kb.iadd(wBase, off), kGroup * size, prefetch);
    SmallVector<Value> terms;
    for (int64_t c = 0; c < kGroup; c += lanes) {
      Value at = kb.iadd(off, c);
      Value xv = vector::LoadOp::create(b, loc, wide, x, ValueRange{kb.iadd(xBase, at)});
      Value wv = vector::LoadOp::create(b, loc, VectorType::get({lanes}, element), w.values,
                                        ValueRange{kb.iadd(wBase, at)});
      if (w.int8())
        wv = arith::SIToFPOp::create(b, loc, wide, wv);
      else if (!element.isF32())
        wv = arith::ExtFOp::create(b, loc, wide, wv);
      terms.push_back(arith::MulFOp::create(b, loc, xv, wv, fma));
    }
    while (terms.size() > 1) { // a tree: the adds of one level are independent
      SmallVector<Value> next;
      for (size_t i = 0; i + 1 < terms.size(); i += 2)
        next.push_back(arith::AddFOp::create(b, loc, terms[i], terms[i + 1], fma));
      terms = std::move(next);
    }
    return terms.front();
  };
  if (whole > 0) {
    Value zero = vector::BroadcastOp::create(b, loc, wide, kb.f32(0));
    Value acc =
        w.int8()
            ? sumScaledGroups(
                  kb, {zero}, whole, [&](Value g) -> Values { return {groupDot(g)}; },
                  [&](Value g0) -> Values { return {chunkScales(kb, w, n, g0, prefetch)}; },
                  [&](Value g) -> Values { return {scaleOf(kb, w, n, g)}; })[0]
            : kb.fold(kb.index(0), kb.index(whole), ValueRange{zero},
                      [&](Value g, ValueRange carried) -> SmallVector<Value> {
                        return {arith::AddFOp::create(b, loc, carried[0], groupDot(g), fma)};
                      })[0];
    total = laneSum(kb, acc);
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

/// x's `count` rows of `k` values from row `first` quantized per group of 32
/// into `xq` (int8) and `dx` (f32, a scale per group), from their row 0:
/// d = max|x| / 127, q = x / d rounded to nearest even (x86's rounding, as
/// ggml's AVX2 quantizes activations), 0 where the group is all zero. Whole
/// groups in vectors, the last lane by lane. With `offsets` (VNNI's unsigned weights, rowsDotInt8), each whole
/// group's -128 * d * sum(q) too: what w + 128 adds to the group's dot.
/// With `sums` (i32, the interleaved layout's BlockDotInt8), every group's
/// -128 * sum(q), the last one's included: the same, before its scales.
namespace {
/// quantizeRows' phases: a row's whole groups in vectors (wholeGroup), its
/// last, shorter group lane by lane (lastGroup), each storing its scale,
/// its q and, where asked, its sums.
struct RowQuantizer {
  KernelBuilder &kb;
  Value x, xq, dx, offsets, sums;
  int64_t k, groups;
  VectorType wide, narrow, ints;
  Value magnitudeMask;

  RowQuantizer(KernelBuilder &kb, Value x, int64_t k, Value xq, Value dx, Value offsets,
               Value sums)
      : kb(kb), x(x), xq(xq), dx(dx), offsets(offsets), sums(sums), k(k),
        groups(::fbt::weights::groupsOf(k)) {
    OpBuilder &b = kb.builder();
    wide = VectorType::get({kLanes}, b.getF32Type());
    narrow = VectorType::get({kLanes}, b.getI8Type());
    ints = VectorType::get({kLanes}, b.getI32Type());
    magnitudeMask = arith::ConstantOp::create(
        b, kb.location(),
        DenseElementsAttr::get(ints, Attribute(b.getI32IntegerAttr(0x7fffffff))));
  }
  /// d, and 1 / d (0 for an all-zero group).
  std::pair<Value, Value> scaleOfMax(Value amax) {
    Value d = kb.div(amax, kb.f32(127));
    Value positive = kb.fcmp(arith::CmpFPredicate::OGT, amax, kb.f32(0));
    return {d, kb.select(positive, kb.div(kb.f32(1), d), kb.f32(0))};
  }
  Value toInt8(Value v) {
    OpBuilder &b = kb.builder();
    return arith::FPToSIOp::create(b, kb.location(),
                                   isa<VectorType>(v.getType()) ? Type(narrow) : b.getI8Type(),
                                   math::RoundEvenOp::create(b, kb.location(), v));
  }
  /// -128 * sum(q), exactly, as i32.
  void storeSum(Value qsum, Value at) {
    OpBuilder &b = kb.builder();
    Location loc = kb.location();
    Value whole = arith::FPToSIOp::create(b, loc, b.getI32Type(), qsum);
    kb.store(arith::MulIOp::create(b, loc, whole, arith::ConstantIntOp::create(b, loc, -128, 32)),
             sums, at);
  }
  /// Group g of row m (x's row at `from`), whole.
  void wholeGroup(Value m, Value from, Value g) {
    OpBuilder &b = kb.builder();
    Location loc = kb.location();
    Value base = kb.iadd(kb.imul(m, k), kb.imul(g, kGroup));
    Value xBase = kb.iadd(from, kb.imul(g, kGroup));
    // max|x| in the integers: with the sign bit cleared, a float's bits
    // order as its magnitude does, and a NaN's above infinity's, so the
    // max is maximumf's (a NaN still propagates) in a few integer
    // instructions, where maximumf's own reduction takes about a hundred.
    SmallVector<Value> xs;
    Value bits;
    for (int64_t c = 0; c < kGroup; c += kLanes) {
      xs.push_back(vector::LoadOp::create(b, loc, wide, x, ValueRange{kb.iadd(xBase, c)}));
      Value a = arith::AndIOp::create(b, loc, arith::BitcastOp::create(b, loc, ints, xs.back()),
                                      magnitudeMask);
      bits = bits ? arith::MaxUIOp::create(b, loc, bits, a).getResult() : a;
    }
    Value amax = arith::BitcastOp::create(
        b, loc, b.getF32Type(),
        vector::ReductionOp::create(b, loc, vector::CombiningKind::MAXUI, bits));
    auto [d, inv] = scaleOfMax(amax);
    kb.store(d, dx, kb.iadd(kb.imul(m, groups), g));
    Value invs = vector::BroadcastOp::create(b, loc, wide, inv);
    Value qsum;
    for (int64_t c = 0; c < kGroup; c += kLanes) {
      Value q = math::RoundEvenOp::create(b, loc, kb.mul(xs[c / kLanes], invs));
      vector::StoreOp::create(b, loc, toInt8(q), xq, ValueRange{kb.iadd(base, c)});
      if (offsets || sums) // the group's sum only where VNNI reads it
        qsum = qsum ? arith::AddFOp::create(b, loc, qsum, q).getResult() : q;
    }
    // The sum of q is exact in f32 (at most 32 * 127).
    if (offsets)
      kb.store(kb.mul(laneSum(kb, qsum), kb.mul(d, kb.f32(-128))), offsets,
               kb.iadd(kb.imul(m, groups), g));
    if (sums)
      storeSum(laneSum(kb, qsum), kb.iadd(kb.imul(m, groups), g));
  }
  /// Row m's last group, of `rest` values after `whole` whole ones.
  void lastGroup(Value m, Value from, int64_t whole, int64_t rest) {
    OpBuilder &b = kb.builder();
    Location loc = kb.location();
    Value base = kb.iadd(kb.imul(m, k), whole * kGroup);
    Value xBase = kb.iadd(from, whole * kGroup);
    Value amax = kb.fold(kb.index(0), kb.index(rest), ValueRange{kb.f32(0)},
                         [&](Value c, ValueRange carried) -> SmallVector<Value> {
      Value a = math::AbsFOp::create(b, loc, kb.load(x, kb.iadd(xBase, c)));
      return {kb.max(carried[0], a)};
    })[0];
    auto [d, inv] = scaleOfMax(amax);
    kb.store(d, dx, kb.iadd(kb.imul(m, groups), whole));
    // The group's q, and their sum where `sums` takes it.
    SmallVector<Value> total = kb.fold(
        kb.index(0), kb.index(rest), sums ? ValueRange{kb.f32(0)} : ValueRange{},
        [&](Value c, ValueRange carried) -> SmallVector<Value> {
      Value q = math::RoundEvenOp::create(b, loc, kb.mul(kb.load(x, kb.iadd(xBase, c)), inv));
      memref::StoreOp::create(b, loc, toInt8(q), xq, ValueRange{kb.iadd(base, c)});
      return sums ? SmallVector<Value>{kb.add(carried[0], q)} : SmallVector<Value>{};
    });
    if (sums)
      storeSum(total[0], kb.iadd(kb.imul(m, groups), whole));
  }
};
} // namespace

void quantizeRows(KernelBuilder &kb, Value x, Value first, Value count, int64_t k, Value xq,
                  Value dx, Value offsets, Value sums) {
  RowQuantizer rows(kb, x, k, xq, dx, offsets, sums);
  int64_t whole = k / kGroup, rest = k % kGroup;
  kb.loop(kb.index(0), count, [&](Value m) {
    Value from = kb.imul(kb.iadd(first, m), k); // x's row
    kb.loop(whole, [&](Value g) { rows.wholeGroup(m, from, g); });
    if (rest > 0)
      rows.lastGroup(m, from, whole, rest);
  });
}

/// An x86 intrinsic (the CPU target is x86-64 with AVX2 at least: fbtc
/// refuses int8 activations for a CPU without it).
Value x86(KernelBuilder &kb, StringRef intrinsic, Type result, ValueRange args) {
  return LLVM::CallIntrinsicOp::create(kb.builder(), kb.location(), result,
                                       kb.builder().getStringAttr(intrinsic), args)
      .getResult(0);
}

/// The 64 products of groups g and g + 1 of W's row (flat offset `wBase`)
/// and of each row of x (flat offsets `xBases`), unscaled: per row, 16
/// lanes of f32, each group's in 8 (AVX-512BW, and VNNI where the CPU has
/// it). W's bytes are read and prepared once for every row.
Values pairDot(KernelBuilder &kb, const NarrowWeight &w, Value xq, Value wBase,
               ArrayRef<Value> xBases, Value g) {
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  auto bytes = VectorType::get({2 * kGroup}, b.getI8Type());
  auto ints = VectorType::get({2 * kLanes}, b.getI32Type());
  auto floats = VectorType::get({2 * kLanes}, b.getF32Type());
  Value off = kb.imul(g, kGroup);
  Value wv = vector::LoadOp::create(b, loc, bytes, w.values, ValueRange{kb.iadd(wBase, off)});
  auto xAt = [&](Value xBase) {
    return vector::LoadOp::create(b, loc, bytes, xq, ValueRange{kb.iadd(xBase, off)});
  };
  Values out;
  if (kb.cpuVectors() == CpuVectors::Avx512Vnni) {
    // w + 128 as unsigned bytes (w xor 0x80) times x as it is: no sign to
    // move, and x's own -128 * sum added back per group (quantizeRows'
    // offsets, rowsDotInt8).
    Value bias = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(bytes, Attribute(b.getI8IntegerAttr(-128))));
    Value none = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(ints, Attribute(b.getI32IntegerAttr(0))));
    Value unsignedW = arith::XOrIOp::create(b, loc, wv, bias);
    for (Value xBase : xBases)
      out.push_back(arith::SIToFPOp::create(
          b, loc, floats,
          x86(kb, "llvm.x86.avx512.vpdpbusd.512", ints, {none, unsignedW, xAt(xBase)})));
    return out;
  }
  Value zero = arith::ConstantOp::create(b, loc, DenseElementsAttr::get(
                                                     bytes, Attribute(b.getI8IntegerAttr(0))));
  Value magnitude = math::AbsIOp::create(b, loc, wv);
  Value negative = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, wv, zero);
  auto shorts = VectorType::get({kGroup}, b.getI16Type());
  Value ones = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(shorts, Attribute(b.getI16IntegerAttr(1))));
  for (Value xBase : xBases) {
    Value xv = xAt(xBase);
    Value signedX = arith::SelectOp::create(b, loc, negative,
                                            arith::SubIOp::create(b, loc, zero, xv), xv);
    Value pairs = x86(kb, "llvm.x86.avx512.pmaddubs.w.512", shorts, {magnitude, signedX});
    Value sum = x86(kb, "llvm.x86.avx512.pmaddw.d.512", ints, {pairs, ones});
    out.push_back(arith::SIToFPOp::create(b, loc, floats, sum));
  }
  return out;
}

/// For each row m of `ms`: sum_k xq[m, k] * W[n, k] times their scales
/// (int8 activations, CPU), W's row read and its bytes prepared once for
/// all of them (a prompt's rows share them: rowsAtOnce), as
/// ggml's AVX2 Q8_0 dot: per whole group, the 32 bytes of each side in one
/// vector; |w| (unsigned) times x with w's sign moved onto it, adjacent
/// pairs summed in i16 (pmaddubsw: exact, as |w| <= 128 and |x| <= 127),
/// then adjacent i16 pairs in i32 (pmaddwd by ones); the 8 lanes converted
/// to f32 and scaled by both groups' scales into a vector accumulator. The
/// last, shorter group lane by lane in integers (its sum is exact: 31
/// products of at most 128 * 127). Where the CPU has AVX-512 (CpuVectors) and
/// a row has 8 whole groups or more, two groups at a time in 64 bytes: x's
/// sign flipped where w is negative by a masked subtraction (AVX-512 has no
/// psignb), then pmaddubsw and pmaddwd, the same integers as AVX2's. With
/// VNNI, vpdpbusd multiplies w + 128 (unsigned, w xor 0x80) by x as it is,
/// 4 bytes into each i32 without saturating; the 128 * sum(x) that adds to
/// a group comes back out in f32, x's offsets (quantizeRows) times w's
/// scales, 8 groups per multiply-add: an xor per 64 bytes instead of an
/// abs, a compare and a masked subtraction (the f32 result differs from
/// the exact integers' by the rounding of that subtraction). Its phases:
/// wholeGroups(), then restGroup(); rowsDotInt8 runs them.
struct RowsDotInt8 {
  KernelBuilder &kb;
  const NarrowWeight &w;
  Value xq, dx, offsets, n;
  int64_t prefetch;
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  VectorType wide = VectorType::get({kLanes}, b.getF32Type());
  Value wBase;
  Values xBases, scaleBases; // each row's bytes and scales in xq and dx
  Value wScales;             // the last chunk's (lanes), for its offsets

  RowsDotInt8(KernelBuilder &kb, const NarrowWeight &w, Value xq, Value dx, Value offsets,
              ArrayRef<Value> ms, Value n, int64_t prefetch)
      : kb(kb), w(w), xq(xq), dx(dx), offsets(offsets), n(n), prefetch(prefetch) {
    wBase = kb.imul(n, w.k);
    for (Value m : ms) {
      xBases.push_back(kb.imul(m, w.k));
      scaleBases.push_back(kb.imul(m, w.groups()));
    }
  }

  Value zero() { return vector::BroadcastOp::create(b, loc, wide, kb.f32(0)); }

  /// Group g's scale of w times each row's.
  Values scale(Value g) {
    Value sw = scaleOf(kb, w, n, g);
    Values out;
    for (Value at : scaleBases)
      out.push_back(kb.mul(sw, kb.load(dx, kb.iadd(at, g))));
    return out;
  }

  /// Group g's 32 products in 8 lanes per row, unscaled (AVX2's dot).
  Values groupDot(Value g) {
    auto bytes = VectorType::get({kGroup}, b.getI8Type());
    auto shorts = VectorType::get({kGroup / 2}, b.getI16Type());
    auto ints = VectorType::get({kGroup / 4}, b.getI32Type());
    static_assert(kGroup / 4 == kLanes, "a group's i32 pair sums fill one f32 vector");
    Value ones = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(shorts, Attribute(b.getI16IntegerAttr(1))));
    Value off = kb.imul(g, kGroup);
    Value wv = vector::LoadOp::create(b, loc, bytes, w.values, ValueRange{kb.iadd(wBase, off)});
    Value magnitude = x86(kb, "llvm.x86.avx2.psign.b", bytes, {wv, wv});
    Values out;
    for (Value xBase : xBases) {
      Value xv = vector::LoadOp::create(b, loc, bytes, xq, ValueRange{kb.iadd(xBase, off)});
      Value signedX = x86(kb, "llvm.x86.avx2.psign.b", bytes, {xv, wv});
      Value pairs = x86(kb, "llvm.x86.avx2.pmadd.ub.sw", shorts, {magnitude, signedX});
      Value sum = x86(kb, "llvm.x86.avx2.pmadd.wd", ints, {pairs, ones});
      out.push_back(arith::SIToFPOp::create(b, loc, wide, sum));
    }
    return out;
  }

  /// w's scales of groups [g0, g0 + 8) times each row's.
  Values lanes(Value g0) {
    wScales = chunkScales(kb, w, n, g0, prefetch);
    Values out;
    for (Value at : scaleBases)
      out.push_back(arith::MulFOp::create(
          b, loc, wScales, vector::LoadOp::create(b, loc, wide, dx, ValueRange{kb.iadd(at, g0)})));
    return out;
  }

  /// VNNI's pairs read w + 128 (pairDot): each group's dot then carries x's
  /// offset, 128 * sum(q), which the chunk's w scales times quantizeRows'
  /// offsets take back out, 8 groups in one multiply-add (the `seen`
  /// groups an earlier chunk covered left out), in 16 lanes per row.
  Values offsetTerm(Value g0, int64_t seen) {
    Value mask, none = zero();
    if (seen > 0) {
      SmallVector<bool> fresh;
      for (int64_t i = 0; i < kLanes; ++i)
        fresh.push_back(i >= seen);
      mask = arith::ConstantOp::create(
          b, loc, DenseElementsAttr::get(VectorType::get({kLanes}, b.getI1Type()),
                                         ArrayRef<bool>(fresh)));
    }
    SmallVector<int64_t> widen; // its 8 lanes, then 8 zeros
    for (int64_t i = 0; i < 2 * kLanes; ++i)
      widen.push_back(i);
    Values out;
    for (Value at : scaleBases) {
      Value o = vector::LoadOp::create(b, loc, wide, offsets, ValueRange{kb.iadd(at, g0)});
      Value t = arith::MulFOp::create(b, loc, wScales, o);
      if (mask)
        t = arith::SelectOp::create(b, loc, mask, t, none);
      out.push_back(vector::ShuffleOp::create(b, loc, t, none, widen));
    }
    return out;
  }

  Values sums(const Values &accs) {
    Values out;
    for (Value a : accs)
      out.push_back(laneSum(kb, a));
    return out;
  }

  /// The whole groups' scaled sums per row: AVX-512's pairs of groups
  /// (and the last of an odd count as AVX2's), or AVX2's groups.
  Values wholeGroups() {
    int64_t whole = w.k / kGroup, rows = xBases.size();
    auto groups = [&](Value g) { return groupDot(g); };
    auto eight = [&](Value g0) { return lanes(g0); };
    auto one = [&](Value g) { return scale(g); };
    if (kb.cpuVectors() == CpuVectors::Avx2 || whole < kLanes)
      return sums(sumScaledGroups(kb, Values(rows, zero()), whole, groups, eight, one));
    int64_t paired = whole / 2 * 2;
    auto pairs = [&](Value g) { return pairDot(kb, w, xq, wBase, xBases, g); };
    auto offset = [&](Value g0, int64_t seen) { return offsetTerm(g0, seen); };
    Value zero16 =
        vector::BroadcastOp::create(b, loc, VectorType::get({2 * kLanes}, b.getF32Type()),
                                    kb.f32(0));
    Values totals = sums(sumScaledGroups(
        kb, Values(rows, zero16), paired, pairs, eight, one, /*per=*/2,
        kb.cpuVectors() == CpuVectors::Avx512Vnni ? function_ref<Values(Value, int64_t)>(offset)
                                                  : nullptr));
    if (paired < whole) { // the last whole group of an odd count
      Values dots = sums(groupDot(kb.index(paired))), scales = scale(kb.index(paired));
      for (auto [t, d, sc] : llvm::zip(totals, dots, scales))
        t = kb.add(t, kb.mul(d, sc));
    }
    return totals;
  }

  /// The last, shorter group's scaled sum per row, lane by lane in integers.
  Values restGroup() {
    int64_t whole = w.k / kGroup, rest = w.k % kGroup;
    Value off = kb.index(whole * kGroup);
    Values zeros(xBases.size(), arith::ConstantIntOp::create(b, loc, 0, 32));
    Values isums = kb.fold(kb.index(0), kb.index(rest), zeros,
                           [&](Value c, ValueRange carried) -> Values {
      auto widened = [&](Value mem, Value base) {
        Value v = memref::LoadOp::create(b, loc, mem, ValueRange{kb.iadd(kb.iadd(base, off), c)});
        return arith::ExtSIOp::create(b, loc, b.getI32Type(), v).getResult();
      };
      Value wi = widened(w.values, wBase);
      Values next;
      for (auto [acc, xBase] : llvm::zip(carried, xBases))
        next.push_back(
            arith::AddIOp::create(b, loc, acc, arith::MulIOp::create(b, loc, wi, widened(xq, xBase))));
      return next;
    });
    Values out;
    for (auto [isum, sc] : llvm::zip(isums, scale(kb.index(whole))))
      out.push_back(kb.mul(arith::SIToFPOp::create(b, loc, b.getF32Type(), isum), sc));
    return out;
  }
};

Values rowsDotInt8(KernelBuilder &kb, const NarrowWeight &w, Value xq, Value dx, Value offsets,
                   ArrayRef<Value> ms, Value n, int64_t prefetch) {
  RowsDotInt8 dot(kb, w, xq, dx, offsets, ms, n, prefetch);
  Values totals(ms.size(), kb.f32(0));
  if (w.k >= kGroup)
    totals = dot.wholeGroups();
  if (w.k % kGroup)
    for (auto [t, r] : llvm::zip(totals, dot.restGroup()))
      t = kb.add(t, r);
  return totals;
}

/// Row m of xq times block `block` of W's interleaved rows (WeightNames.h:
/// 16 rows, each 4-byte chunk of their columns in 64 bytes as q + 128),
/// scaled: the 16 rows' results as f32 lanes. Per group, each chunk takes 4
/// columns of the 16 rows against 4 bytes of x broadcast, the products of a
/// row summed into its own i32 lane, so each lane ends as its row's exact
/// integer dot; then one convert, and both scales (the block's 16 row
/// scales of the group, x's broadcast) in a multiply and a multiply-add.
/// With VNNI, a chunk is one vpdpbusd of q + 128 as it is stored, from x's
/// offset (-128 * sum(q): `sums`, quantizeRows); without, AVX2's dot in
/// two halves of 8 rows (q from q + 128 by an xor, |q| times x with q's
/// sign moved onto it, pairs in i16 and then in i32), from 0. Where the row
/// layout spends a convert, a shuffle and a multiply-add per 32 or 64 bytes
/// summing lanes across, this spends them once per group of 16 rows.
/// Its phases: xAt() and chunk() per 4 columns, group() per group of 32,
/// sum() over the row.
struct BlockDotInt8 {
  static constexpr int64_t rows = ::fbt::weights::kInterleave;
  KernelBuilder &kb;
  const NarrowWeight &w;
  Value xq, dx, sums;
  int64_t prefetch;
  OpBuilder &b = kb.builder();
  Location loc = kb.location();
  bool vnni = kb.cpuVectors() == CpuVectors::Avx512Vnni;
  // The lanes of one accumulator: 16 rows with VNNI, else 8 (of two).
  int64_t lanes = vnni ? rows : rows / 2, parts = rows / lanes;
  VectorType bytes = VectorType::get({4 * lanes}, b.getI8Type());
  VectorType ints = VectorType::get({lanes}, b.getI32Type());
  VectorType floats = VectorType::get({lanes}, b.getF32Type());
  VectorType shorts = VectorType::get({2 * lanes}, b.getI16Type());
  Value bias, ones;                   // AVX2's dot's
  Value wBase, sBase, xBase, xGroups; // the block's bytes and scales, x's row

  BlockDotInt8(KernelBuilder &kb, const NarrowWeight &w, Value xq, Value dx, Value sums,
               Value m, Value block, int64_t prefetch)
      : kb(kb), w(w), xq(xq), dx(dx), sums(sums), prefetch(prefetch) {
    if (!vnni) {
      bias = constant(bytes, b.getI8IntegerAttr(-128));
      ones = constant(shorts, b.getI16IntegerAttr(1));
    }
    wBase = kb.imul(block, rows * w.k);
    sBase = kb.imul(block, rows * w.groups());
    xBase = kb.imul(m, w.k);
    xGroups = kb.imul(m, w.groups());
  }

  Value constant(VectorType t, Attribute a) {
    return arith::ConstantOp::create(b, loc, DenseElementsAttr::get(t, a));
  }

  /// The 4 bytes of x at chunk c, broadcast to every lane.
  Value xAt(Value chunk) {
    Value x4 = vector::LoadOp::create(b, loc, VectorType::get({4}, b.getI8Type()), xq,
                                      ValueRange{kb.iadd(xBase, kb.imul(chunk, 4))});
    Value x1 = vector::ExtractOp::create(
        b, loc, vector::BitCastOp::create(b, loc, VectorType::get({1}, b.getI32Type()), x4),
        ArrayRef<int64_t>{0});
    return vector::BitCastOp::create(b, loc, bytes, vector::BroadcastOp::create(b, loc, ints, x1));
  }

  /// One part's chunk (`lanes` rows of it at `at`) times x into `acc`.
  Value chunk(Value acc, Value at, Value xv) {
    Value wv = vector::LoadOp::create(b, loc, bytes, w.values, ValueRange{at});
    if (vnni)
      return x86(kb, "llvm.x86.avx512.vpdpbusd.512", ints, {acc, wv, xv});
    Value q = arith::XOrIOp::create(b, loc, wv, bias);
    Value magnitude = x86(kb, "llvm.x86.avx2.psign.b", bytes, {q, q});
    Value signedX = x86(kb, "llvm.x86.avx2.psign.b", bytes, {xv, q});
    Value pairs = x86(kb, "llvm.x86.avx2.pmadd.ub.sw", shorts, {magnitude, signedX});
    return arith::AddIOp::create(b, loc, acc,
                                 x86(kb, "llvm.x86.avx2.pmadd.wd", ints, {pairs, ones}));
  }

  /// Group g's chunks [g * 8, g * 8 + count) as exact integers per row,
  /// then scaled into the accumulators.
  SmallVector<Value> group(Value g, int64_t count, ValueRange accs) {
    Value start = vnni ? vector::BroadcastOp::create(b, loc, ints,
                                                     kb.load(sums, kb.iadd(xGroups, g)))
                             .getResult()
                       : constant(ints, b.getI32IntegerAttr(0));
    SmallVector<Value> dots(parts, start);
    Value first = kb.imul(g, kGroup / 4);
    for (int64_t c = 0; c < count; ++c) {
      Value at = kb.iadd(wBase, kb.imul(kb.iadd(first, c), 4 * rows));
      if (prefetch > 0)
        kb.prefetch(w.values, kb.iadd(at, prefetch));
      Value xv = xAt(kb.iadd(first, c));
      for (int64_t p = 0; p < parts; ++p)
        dots[p] = chunk(dots[p], kb.iadd(at, 4 * lanes * p), xv);
    }
    auto fma = arith::FastMathFlags::contract;
    Type half = cast<MemRefType>(w.scales.getType()).getElementType();
    Value dxv = vector::BroadcastOp::create(b, loc, floats, kb.load(dx, kb.iadd(xGroups, g)));
    SmallVector<Value> next;
    for (int64_t p = 0; p < parts; ++p) {
      Value sw = vector::LoadOp::create(
          b, loc, VectorType::get({lanes}, half), w.scales,
          ValueRange{kb.iadd(sBase, kb.iadd(kb.imul(g, rows), kb.index(lanes * p)))});
      Value scaled = arith::MulFOp::create(
          b, loc, arith::SIToFPOp::create(b, loc, floats, dots[p]), dxv, fma);
      next.push_back(arith::AddFOp::create(
          b, loc, accs[p],
          arith::MulFOp::create(b, loc, scaled, arith::ExtFOp::create(b, loc, floats, sw), fma),
          fma));
    }
    return next;
  }

  /// The whole groups, then the shorter last one; the parts' lanes as one.
  Value sum() {
    SmallVector<Value> accs(parts, vector::BroadcastOp::create(b, loc, floats, kb.f32(0)));
    int64_t whole = w.k / kGroup;
    if (whole > 0)
      accs = kb.fold(kb.index(0), kb.index(whole), accs,
                     [&](Value g, ValueRange carried) -> SmallVector<Value> {
        return group(g, kGroup / 4, carried);
      });
    if (int64_t rest = w.k / 4 - whole * (kGroup / 4); rest > 0)
      accs = group(kb.index(whole), rest, accs);
    if (parts == 1)
      return accs.front();
    SmallVector<int64_t> both; // the two halves' lanes, in order
    for (int64_t i = 0; i < rows; ++i)
      both.push_back(i);
    return vector::ShuffleOp::create(b, loc, accs[0], accs[1], both);
  }
};

/// Threads per row block on the GPU: a warp per 32 groups of 8 elements
/// of K, at most 256.
int64_t rowThreads(KernelBuilder &kb, int64_t k) {
  return kb.knob(Knob::RowThreads,
                 std::clamp<int64_t>((k / 8 + 31) / 32 * 32, 32, 256));
}

/// The CPU's products of x by each weight of `ws` into its result in `ys`,
/// for rows [first, first + count) of x: one grid over all the weights'
/// rows, one weight after another, each weight's interleaved blocks
/// (WeightNames.h) then its other rows one by one. Its phases: rows() and
/// block() per grid iteration, unit() to tell them apart, grid().
struct CpuProducts {
  KernelBuilder &kb;
  Value x;
  ArrayRef<NarrowWeight> ws;
  ArrayRef<Value> ys;
  int64_t prefetch;
  bool interleaved;       ///< int8 weights interleaved 16 rows at a time
  /// x quantized (int8 activations, set by buildCpuProducts), else null.
  Value xq = {}, dx = {}, offsets = {}, sums = {};
  Value first = {}, count = {}; ///< the rows of x grid() multiplies

  int64_t k() const { return ws.front().k; }
  int64_t packedRows(const NarrowWeight &w) const {
    return interleaved ? ::fbt::weights::interleavedRows(w.n, w.k) : 0;
  }
  int64_t blocks(const NarrowWeight &w) const {
    return packedRows(w) / ::fbt::weights::kInterleave;
  }
  /// The grid's iterations for w: its blocks, then its rows after them.
  int64_t units(const NarrowWeight &w) const { return blocks(w) + w.n - packedRows(w); }

  void store(const NarrowWeight &w, Value y, Value m, Value n, Value dot) {
    kb.store(dot, y, kb.iadd(kb.imul(kb.iadd(first, m), w.n), n));
  }

  /// Row n of w, by every row of x.
  void rows(const NarrowWeight &w, Value y, Value n) {
    if (!xq)
      return kb.loop(kb.index(0), count, [&](Value m) {
        store(w, y, m, n, rowDotCpu(kb, w, x, kb.imul(m, k()), n, prefetch));
      });
    // rowsAtOnce rows at a time share W's row, then the rest one by one
    // (a decode step's one row: the first loop folds away).
    int64_t atOnce = rowsAtOnce(kb);
    Value together = kb.isub(count, arith::RemUIOp::create(kb.builder(), kb.location(), count,
                                                           kb.index(atOnce)));
    kb.loop(kb.index(0), together, kb.index(atOnce), [&](Value m) {
      Values ms;
      for (int64_t i = 0; i < atOnce; ++i)
        ms.push_back(kb.iadd(m, kb.index(i)));
      Values dots = rowsDotInt8(kb, w, xq, dx, offsets, ms, n, prefetch);
      for (auto [row, dot] : llvm::zip(ms, dots))
        store(w, y, row, n, dot);
    });
    kb.loop(together, count, [&](Value m) {
      store(w, y, m, n, rowsDotInt8(kb, w, xq, dx, offsets, {m}, n, prefetch)[0]);
    });
  }

  /// Interleaved block `blk` of w (16 rows), by every row of x.
  void block(const NarrowWeight &w, Value y, Value blk) {
    kb.loop(kb.index(0), count, [&](Value m) {
      Value dots = BlockDotInt8(kb, w, xq, dx, sums, m, blk, prefetch).sum();
      Value at = kb.iadd(kb.imul(kb.iadd(first, m), w.n),
                         kb.imul(blk, ::fbt::weights::kInterleave));
      vector::StoreOp::create(kb.builder(), kb.location(), dots, y, ValueRange{at});
    });
  }

  /// Iteration u of w's: a block of interleaved rows, or one row after them.
  void unit(const NarrowWeight &w, Value y, Value u) {
    int64_t n = blocks(w);
    if (n == 0)
      return rows(w, y, u);
    Value isBlock = kb.icmp(arith::CmpIPredicate::ult, u, kb.index(n));
    kb.ifThen(isBlock, [&] { block(w, y, u); });
    if (units(w) > n)
      kb.ifThen(kb.icmp(arith::CmpIPredicate::uge, u, kb.index(n)),
                [&] { rows(w, y, kb.iadd(kb.isub(u, kb.index(n)), packedRows(w))); });
  }

  /// Rows [first, first + count) of x (count <= the scratch's rows):
  /// quantized (int8 activations), then the grid over every weight's units.
  void grid(Value from, Value rowCount) {
    first = from;
    count = rowCount;
    if (xq)
      quantizeRows(kb, x, first, count, k(), xq, dx, offsets, sums);
    int64_t total = 0;
    for (const NarrowWeight &w : ws)
      total += units(w);
    kb.parallel(total, [&](Value r) {
      if (ws.size() == 1)
        return unit(ws.front(), ys.front(), r);
      int64_t before = 0; // the iterations of the weights before w
      for (auto [w, y] : llvm::zip(ws, ys)) {
        Value u = kb.isub(r, kb.index(before)); // wraps below 0: then not below units(w)
        kb.ifThen(kb.icmp(arith::CmpIPredicate::ult, u, kb.index(units(w))),
                  [&] { unit(w, y, u); });
        before += units(w);
      }
    });
  }
};

/// The CPU's products of x (`rows` rows of K) by each weight of `ws` into
/// its result in `ys` (CpuProducts). With int8 activations x is quantized
/// by the calling thread before the grid, into its frame (scratch outside a
/// grid), which the grid's threads share: kRowBlock rows at a time, a grid
/// per block, so that a prompt's product keeps a bounded frame and its
/// block of rows in cache while the weights stream past.
func::FuncOp buildCpuProducts(KernelBuilder &kb, Value x, int64_t rows,
                              ArrayRef<NarrowWeight> ws, ArrayRef<Value> ys,
                              bool int8Activations) {
  // Splitting a decode step's product (a few microseconds at small's
  // shapes) among threads gains less than the fork and join cost where the
  // cores are shared or few: `fbt tune` measures both ways.
  kb.askParallel(1);
  // A thread streaming narrow weights waits on memory more than on its
  // arithmetic (bench/results/ab-small-prefetch); f32's rows gained
  // nothing over the hardware's prefetchers, so theirs is no knob.
  Type element = cast<MemRefType>(ws.front().values.getType()).getElementType();
  CpuProducts p{kb, x, ws, ys, element.isF32() ? 0 : kb.knob(Knob::Prefetch, kDefaultPrefetch),
                ws.front().int8() && interleavesInt8(int8Activations)};
  int64_t block = int8Activations ? std::min(rows, kRowBlock) : rows;
  if (int8Activations) {
    int64_t groups = block * ws.front().groups();
    bool vnni = kb.cpuVectors() == CpuVectors::Avx512Vnni;
    p.xq = kb.scratch(block * p.k(), kb.builder().getI8Type());
    p.dx = kb.scratch(groups);
    if (vnni) // rowsDotInt8's offsets
      p.offsets = kb.scratch(groups);
    if (vnni && p.interleaved) // BlockDotInt8's
      p.sums = kb.scratch(groups, kb.builder().getI32Type());
  }
  if (block == rows) {
    p.grid(kb.index(0), kb.index(rows));
  } else {
    kb.loop(kb.index(0), kb.index(rows), kb.index(block), [&](Value first) {
      p.grid(first, arith::MinUIOp::create(kb.builder(), kb.location(), kb.index(block),
                                           kb.isub(kb.index(rows), first)));
    });
  }
  return kb.finish();
}

FailureOr<func::FuncOp> buildQuantizedMatmul(KernelBuilder &kb, QuantizedMatmulOp op) {
  NarrowWeight w = weightOf(kb, op.getWeight(), op.getScales(), 1);
  Value x = kb.arg(0), y = kb.arg(op.getScales() ? 3 : 2);
  int64_t rows = cast<RankedTensorType>(op.getInput().getType()).getNumElements() / w.k;
  if (!kb.gpu())
    return buildCpuProducts(kb, x, rows, {w}, {y}, op.getInt8Activations());
  if (op.getInt8Activations())
    return op.emitOpError() << "int8_activations is for the CPU target";
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

/// quantized_matmuls (CPU): its operands are x, the weights, their scales
/// (int8), then its results.
FailureOr<func::FuncOp> buildQuantizedMatmuls(KernelBuilder &kb, QuantizedMatmulsOp op) {
  if (kb.gpu())
    return op.emitOpError() << "is for the CPU target (fbt-fuse-products)";
  unsigned count = op.getWeights().size();
  bool int8 = !op.getScales().empty();
  SmallVector<NarrowWeight> ws;
  SmallVector<Value> ys;
  for (unsigned i = 0; i < count; ++i) {
    auto t = cast<RankedTensorType>(op.getWeights()[i].getType());
    ws.push_back({kb.arg(1 + i), int8 ? kb.arg(1 + count + i) : Value(), t.getDimSize(0),
                  t.getDimSize(1)});
    ys.push_back(kb.arg(1 + (int8 ? 2 : 1) * count + i));
  }
  int64_t rows = cast<RankedTensorType>(op.getInput().getType()).getNumElements() / ws.front().k;
  return buildCpuProducts(kb, kb.arg(0), rows, ws, ys, op.getInt8Activations());
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
  if (auto q = dyn_cast<QuantizedMatmulsOp>(op))
    return buildQuantizedMatmuls(kb, q);
  if (auto d = dyn_cast<DequantizeOp>(op))
    return buildDequantize(kb, d);
  return failure();
}
