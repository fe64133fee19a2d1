//===- KernelBuilder.cpp - a small DSL for writing kernels in IR ----------===//

#include "codegen/kernels/KernelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/AsmParser/AsmParser.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

#include <limits>

using namespace mlir;
using namespace mlir::fbt;

KernelBuilder::KernelBuilder(OpBuilder &builder, Location loc, StringRef name,
                             ArrayRef<Type> elementTypes,
                             ArrayRef<int64_t> sizes, KernelTarget target)
    : b(builder), loc(loc), target(target) {
  SmallVector<Type> args;
  for (auto [t, n] : llvm::zip(elementTypes, sizes)) {
    args.push_back(MemRefType::get({n}, t));
    largest = std::max(largest, n);
  }
  fn = func::FuncOp::create(b, loc, name, b.getFunctionType(args, {}));
  fn->setAttr("fbt.kernel", b.getUnitAttr());
  if (!gpu())
    b.getContext()->getOrLoadDialect<vector::VectorDialect>();
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
}

int64_t KernelBuilder::knob(Knob k, int64_t fallback) {
  auto it = config.find(k);
  int64_t v = it == config.end() ? fallback : it->second;
  used.emplace(k, v); // the first ask fixes it for the whole kernel
  return used[k];
}

void KernelBuilder::askParallel(int64_t fallback) {
  if (!gpu() && largest >= kCpuParallelMinElements)
    knob(Knob::Parallel, fallback);
}

func::FuncOp KernelBuilder::finish() {
  func::ReturnOp::create(b, loc);
  if (!used.empty())
    fn->setAttr(kConfigAttr, toAttr(b.getContext(), used));
  b.setInsertionPointAfter(fn);
  return fn;
}

Value KernelBuilder::index(int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}
Value KernelBuilder::f32(double v) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(v));
}
Value KernelBuilder::i64(int64_t v) {
  return arith::ConstantOp::create(b, loc, b.getI64IntegerAttr(v));
}

Value KernelBuilder::load(Value mem, Value idx) {
  Value v = memref::LoadOp::create(b, loc, mem, ValueRange{idx});
  // bf16 storage, an f16 KV cache: arithmetic is f32 throughout.
  if (v.getType().isBF16() || v.getType().isF16())
    v = arith::ExtFOp::create(b, loc, b.getF32Type(), v);
  return v;
}
Value KernelBuilder::loadVector(Value mem, Value idx) {
  Type element = cast<MemRefType>(mem.getType()).getElementType();
  Value v = vector::LoadOp::create(b, loc, VectorType::get({kVector}, element), mem,
                                   ValueRange{idx});
  if (!element.isF32())
    v = arith::ExtFOp::create(b, loc, VectorType::get({kVector}, b.getF32Type()), v);
  return v;
}
void KernelBuilder::prefetch(Value mem, Value idx) {
  memref::PrefetchOp::create(b, loc, mem, ValueRange{idx}, /*isWrite=*/false,
                             /*localityHint=*/3, /*isDataCache=*/true);
}
void KernelBuilder::store(Value v, Value mem, Value idx) {
  Type element = cast<MemRefType>(mem.getType()).getElementType();
  if ((element.isBF16() || element.isF16()) && v.getType().isF32())
    v = arith::TruncFOp::create(b, loc, element, v); // round to nearest even
  memref::StoreOp::create(b, loc, v, mem, ValueRange{idx});
}

void KernelBuilder::parallel(int64_t n, function_ref<void(Value)> body) {
  // The knobs of the lowerings (CpuTarget's OpenMP schedule, GpuKernels'
  // blocks): asked for here so that only kernels they affect vary them.
  if (gridDepth == 0 && !rowBody) {
    // A generator may have asked for Knob::Parallel first.
    if (!gpu() && largest >= kCpuParallelMinElements && !runsSerially(used))
      knob(Knob::Grain, 0);
    if (gpu()) {
      knob(Knob::BlockThreads, kGpuBlockThreads);
      knob(Knob::PerThread, kGpuPerThread);
    }
  }
  ++gridDepth;
  scf::ParallelOp::create(b, loc, ValueRange{index(0)}, ValueRange{index(n)},
                          ValueRange{index(1)},
                          [&](OpBuilder &nested, Location, ValueRange ivs) {
                            OpBuilder::InsertionGuard g(b);
                            b.setInsertionPoint(nested.getInsertionBlock(),
                                                nested.getInsertionPoint());
                            body(ivs[0]);
                          });
  --gridDepth;
}

void KernelBuilder::loop(int64_t n, function_ref<void(Value)> body) {
  loop(index(0), index(n), body);
}

void KernelBuilder::loop(Value lo, Value hi, function_ref<void(Value)> body) {
  loop(lo, hi, index(1), body);
}

void KernelBuilder::loop(Value lo, Value hi, Value step,
                         function_ref<void(Value)> body) {
  scf::ForOp::create(b, loc, lo, hi, step, ValueRange{},
                     [&](OpBuilder &nested, Location, Value iv, ValueRange) {
                       OpBuilder::InsertionGuard g(b);
                       b.setInsertionPoint(nested.getInsertionBlock(),
                                           nested.getInsertionPoint());
                       body(iv);
                       scf::YieldOp::create(b, loc);
                     });
}

void KernelBuilder::elements(int64_t rows, int64_t cols,
                             function_ref<void(Value, Value)> body) {
  if (!gpu()) {
    parallel(rows, [&](Value r) { loop(cols, [&](Value c) { body(r, c); }); });
    return;
  }
  parallel(rows * cols, [&](Value i) { body(idiv(i, cols), irem(i, cols)); });
}

void KernelBuilder::rows(int64_t n, int64_t blockThreads,
                         function_ref<void(Value)> body) {
  if (!gpu())
    return parallel(n, body);
  assert(blockThreads % 32 == 0 && blockThreads <= 1024 && "bad block size");
  auto par = scf::ParallelOp::create(
      b, loc, ValueRange{index(0)}, ValueRange{index(n)}, ValueRange{index(1)},
      [&](OpBuilder &nested, Location, ValueRange ivs) {
        OpBuilder::InsertionGuard g(b);
        b.setInsertionPoint(nested.getInsertionBlock(),
                            nested.getInsertionPoint());
        threads = blockThreads;
        rowBody = nested.getInsertionBlock();
        rowScratch = nullptr;
        body(ivs[0]);
        threads = 1;
        rowBody = nullptr;
        rowScratch = nullptr;
      });
  par->setAttr("fbt.map", b.getStringAttr("rows"));
  par->setAttr("fbt.threads", b.getI64IntegerAttr(blockThreads));
}

Value KernelBuilder::rowThread() {
  if (!gpu())
    return index(0);
  return gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
}

void KernelBuilder::rowLoop(int64_t n, function_ref<void(Value)> body) {
  if (!gpu())
    return loop(n, body);
  loop(rowThread(), index(n), index(threads), body);
}

Value KernelBuilder::rowSum(int64_t n, function_ref<Value(Value)> term) {
  if (!gpu())
    return sum(n, term);
  Value part = fold(rowThread(), index(n), index(threads), {f32(0)},
                    [&](Value i, ValueRange acc) -> SmallVector<Value> {
                      return {add(acc[0], term(i))};
                    })[0];
  return blockReduce(part, /*isMax=*/false);
}

Value KernelBuilder::rowMax(int64_t n, function_ref<Value(Value)> term) {
  Value ninf = f32(-std::numeric_limits<float>::infinity());
  Value part = fold(rowThread(), index(n), index(rowThreads()), {ninf},
                    [&](Value i, ValueRange acc) -> SmallVector<Value> {
                      return {max(acc[0], term(i))};
                    })[0];
  if (!gpu())
    return part;
  return blockReduce(part, /*isMax=*/true);
}

void KernelBuilder::rowSync() {
  if (gpu())
    gpu::BarrierOp::create(b, loc);
}

void KernelBuilder::rowLeader(function_ref<void()> then) {
  if (!gpu())
    return then();
  ifThen(icmp(arith::CmpIPredicate::eq, rowThread(), index(0)), then);
}

Value KernelBuilder::warpSum(Value v) {
  if (!gpu())
    return v;
  // A butterfly: after log2(32) exchanges every lane holds the total.
  for (int32_t offset = 16; offset >= 1; offset /= 2) {
    auto shfl = gpu::ShuffleOp::create(b, loc, v, offset, 32,
                                       gpu::ShuffleMode::XOR);
    v = add(v, shfl.getShuffleResult());
  }
  return v;
}

Value KernelBuilder::scratch(int64_t n) { return scratch(n, b.getF32Type()); }

Value KernelBuilder::scratch(int64_t n, Type element) {
  assert(!gpu() && "GPU kernels use registers or sharedBuffer");
  return memref::AllocaOp::create(b, loc, MemRefType::get({n}, element));
}

Value KernelBuilder::sharedBuffer(int64_t n) {
  assert(gpu() && rowBody && "shared memory belongs to a GPU row grid");
  // Allocated at the top of the row grid's body; the GPU target turns it
  // into the kernel's workgroup memory.
  OpBuilder::InsertionGuard g(b);
  b.setInsertionPointToStart(rowBody);
  auto space = gpu::AddressSpaceAttr::get(b.getContext(),
                                          gpu::AddressSpace::Workgroup);
  auto type = MemRefType::get({n}, b.getF32Type(), MemRefLayoutAttrInterface(),
                              space);
  return memref::AllocaOp::create(b, loc, type);
}

Value KernelBuilder::scratch() {
  // One 32-float buffer per row grid, for the reductions.
  if (!rowScratch)
    rowScratch = sharedBuffer(32);
  return rowScratch;
}

Value KernelBuilder::blockReduce(Value v, bool isMax) {
  auto combine = [&](Value x, Value y) { return isMax ? max(x, y) : add(x, y); };
  for (int32_t offset = 16; offset >= 1; offset /= 2) {
    auto shfl = gpu::ShuffleOp::create(b, loc, v, offset, 32,
                                       gpu::ShuffleMode::XOR);
    v = combine(v, shfl.getShuffleResult());
  }
  if (threads == 32)
    return v;
  // Lane 0 of each warp posts its warp's result; after the barrier every
  // thread combines them; the second barrier keeps the next reduction from
  // overwriting the posts before all threads have read them.
  Value sh = scratch();
  Value tid = rowThread();
  Value warp = idiv(tid, 32);
  ifThen(icmp(arith::CmpIPredicate::eq, irem(tid, 32), index(0)),
         [&] { store(v, sh, warp); });
  rowSync();
  Value total = fold(index(1), index(threads / 32), {load(sh, index(0))},
                     [&](Value w, ValueRange acc) -> SmallVector<Value> {
                       return {combine(acc[0], load(sh, w))};
                     })[0];
  rowSync();
  return total;
}

void KernelBuilder::atomicAdd(Value v, Value mem, Value idx) {
  assert(cast<MemRefType>(mem.getType()).getElementType().isF32() &&
         "sums are kept in f32");
  if (!gpu())
    return store(add(load(mem, idx), v), mem, idx);
  memref::AtomicRMWOp::create(b, loc, arith::AtomicRMWKind::addf, v, mem,
                              ValueRange{idx});
}

SmallVector<Value>
KernelBuilder::fold(Value lo, Value hi, ValueRange init,
                    function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  return fold(lo, hi, index(1), init, body);
}

SmallVector<Value>
KernelBuilder::fold(Value lo, Value hi, Value step, ValueRange init,
                    function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  auto forOp = scf::ForOp::create(
      b, loc, lo, hi, step, init,
      [&](OpBuilder &nested, Location, Value iv, ValueRange carried) {
        OpBuilder::InsertionGuard g(b);
        b.setInsertionPoint(nested.getInsertionBlock(),
                            nested.getInsertionPoint());
        scf::YieldOp::create(b, loc, body(iv, carried));
      });
  return SmallVector<Value>(forOp.getResults());
}

Value KernelBuilder::dot(Value x, Value xBase, Value y, Value yBase, int64_t n) {
  if (gpu() || n < kVector)
    return sum(n, [&](Value c) {
      return mul(load(x, iadd(xBase, c)), load(y, iadd(yBase, c)));
    });
  SmallVector<Value> terms;
  for (int64_t c = 0; c + kVector <= n; c += kVector)
    terms.push_back(mul(loadVector(x, iadd(xBase, c)), loadVector(y, iadd(yBase, c))));
  while (terms.size() > 1) { // a tree: adds of one level are independent
    SmallVector<Value> next;
    for (size_t i = 0; i + 1 < terms.size(); i += 2)
      next.push_back(add(terms[i], terms[i + 1]));
    if (terms.size() % 2)
      next.push_back(terms.back());
    terms = std::move(next);
  }
  Value total = vector::ReductionOp::create(
      b, loc, vector::CombiningKind::ADD, terms.front(),
      arith::FastMathFlags::reassoc | arith::FastMathFlags::nsz);
  for (int64_t c = n / kVector * kVector; c < n; ++c)
    total = add(total, mul(load(x, iadd(xBase, c)), load(y, iadd(yBase, c))));
  return total;
}

void KernelBuilder::axpy(Value alpha, Value x, Value xBase, Value y, Value yBase,
                         int64_t n) {
  axpy(ArrayRef<Value>{alpha}, x, ArrayRef<Value>{xBase}, y, yBase, n);
}

void KernelBuilder::axpy(ArrayRef<Value> alphas, Value x, ArrayRef<Value> xBases,
                         Value y, Value yBase, int64_t n) {
  auto scalar = [&](Value c) {
    Value yi = iadd(yBase, c), acc = load(y, yi);
    for (auto [alpha, xBase] : llvm::zip_equal(alphas, xBases))
      acc = add(acc, mul(alpha, load(x, iadd(xBase, c))));
    store(acc, y, yi);
  };
  if (gpu() || n < kVector)
    return loop(n, scalar);
  auto vt = VectorType::get({kVector}, b.getF32Type());
  SmallVector<Value> a;
  for (Value alpha : alphas)
    a.push_back(vector::BroadcastOp::create(b, loc, vt, alpha));
  // contract: one fused multiply-add per lane and term.
  auto fma = arith::FastMathFlags::contract;
  for (int64_t c = 0; c + kVector <= n; c += kVector) {
    Value yi = iadd(yBase, c);
    Value acc = vector::LoadOp::create(b, loc, vt, y, ValueRange{yi});
    for (auto [av, xBase] : llvm::zip_equal(a, xBases)) {
      Value ax = arith::MulFOp::create(b, loc, av, loadVector(x, iadd(xBase, c)), fma);
      acc = arith::AddFOp::create(b, loc, acc, ax, fma);
    }
    vector::StoreOp::create(b, loc, acc, y, ValueRange{yi});
  }
  for (int64_t c = n / kVector * kVector; c < n; ++c)
    scalar(index(c));
}

SmallVector<Value>
KernelBuilder::foldRows(Value lo, Value hi, ValueRange init,
                        function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  SmallVector<Value> results = fold(lo, hi, init, body);
  if (!gpu() && !results.empty()) {
    // convert-scf-to-cf carries the LLVM dialect's attributes of a loop to
    // its back edge, where LLVM reads them as the loop's metadata.
    MLIRContext *ctx = b.getContext();
    ctx->getOrLoadDialect<LLVM::LLVMDialect>();
    Attribute noVector =
        parseAttribute("#llvm.loop_annotation<vectorize = <disable = true>>", ctx);
    results.front().getDefiningOp()->setAttr("loop_annotation", noVector);
  }
  return results;
}

Value KernelBuilder::sum(int64_t n, function_ref<Value(Value)> term) {
  return fold(index(0), index(n), {f32(0)},
              [&](Value iv, ValueRange acc) -> SmallVector<Value> {
                return {accumulate(acc[0], term(iv))};
              })[0];
}

Value KernelBuilder::accumulate(Value acc, Value v) {
  // LLVM calls an add associative only with nsz too.
  auto flags = arith::FastMathFlagsAttr::get(
      b.getContext(), gpu() ? arith::FastMathFlags::none
                            : arith::FastMathFlags::reassoc |
                                  arith::FastMathFlags::nsz |
                                  arith::FastMathFlags::contract);
  return arith::AddFOp::create(b, loc, acc, v, flags);
}

void KernelBuilder::ifThen(Value cond, function_ref<void()> then) {
  scf::IfOp::create(b, loc, cond, [&](OpBuilder &nested, Location) {
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPoint(nested.getInsertionBlock(), nested.getInsertionPoint());
    then();
    scf::YieldOp::create(b, loc);
  });
}

Value KernelBuilder::select(Value c, Value x, Value y) {
  return arith::SelectOp::create(b, loc, c, x, y);
}

Value KernelBuilder::iadd(Value x, Value y) { return arith::AddIOp::create(b, loc, x, y); }
Value KernelBuilder::isub(Value x, Value y) { return arith::SubIOp::create(b, loc, x, y); }
Value KernelBuilder::imul(Value x, Value y) { return arith::MulIOp::create(b, loc, x, y); }
Value KernelBuilder::idiv(Value x, int64_t y) {
  return arith::DivUIOp::create(b, loc, x, index(y));
}
Value KernelBuilder::irem(Value x, int64_t y) {
  return arith::RemUIOp::create(b, loc, x, index(y));
}
Value KernelBuilder::icmp(arith::CmpIPredicate p, Value x, Value y) {
  return arith::CmpIOp::create(b, loc, p, x, y);
}
Value KernelBuilder::toIndex(Value v) {
  if (v.getType().isIndex())
    return v;
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), v);
}
Value KernelBuilder::toF32(Value v) {
  if (v.getType().isIndex())
    v = arith::IndexCastOp::create(b, loc, b.getI64Type(), v);
  return arith::SIToFPOp::create(b, loc, b.getF32Type(), v);
}

Value KernelBuilder::add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
Value KernelBuilder::sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
Value KernelBuilder::mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
Value KernelBuilder::div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
Value KernelBuilder::neg(Value x) { return arith::NegFOp::create(b, loc, x); }
Value KernelBuilder::max(Value x, Value y) { return arith::MaximumFOp::create(b, loc, x, y); }
Value KernelBuilder::min(Value x, Value y) { return arith::MinimumFOp::create(b, loc, x, y); }
Value KernelBuilder::exp(Value x) { return math::ExpOp::create(b, loc, x); }
Value KernelBuilder::log(Value x) { return math::LogOp::create(b, loc, x); }
Value KernelBuilder::sqrt(Value x) { return math::SqrtOp::create(b, loc, x); }
Value KernelBuilder::rsqrt(Value x) { return math::RsqrtOp::create(b, loc, x); }
Value KernelBuilder::cos(Value x) { return math::CosOp::create(b, loc, x); }
Value KernelBuilder::sin(Value x) { return math::SinOp::create(b, loc, x); }
Value KernelBuilder::sigmoid(Value x) {
  return div(f32(1), add(f32(1), exp(neg(x))));
}
Value KernelBuilder::fcmp(arith::CmpFPredicate p, Value x, Value y) {
  return arith::CmpFOp::create(b, loc, p, x, y);
}

// splitmix64's finalizer, in wrapping 64-bit arithmetic.
Value KernelBuilder::mix(Value z) {
  auto shr = [&](Value v, int64_t s) {
    return arith::ShRUIOp::create(b, loc, v, i64(s)).getResult();
  };
  auto xorv = [&](Value x, Value y) {
    return arith::XOrIOp::create(b, loc, x, y).getResult();
  };
  auto mulc = [&](Value v, uint64_t c) {
    return arith::MulIOp::create(b, loc, v, i64((int64_t)c)).getResult();
  };
  z = arith::AddIOp::create(b, loc, z, i64((int64_t)0x9E3779B97F4A7C15ULL));
  z = mulc(xorv(z, shr(z, 30)), 0xBF58476D1CE4E5B9ULL);
  z = mulc(xorv(z, shr(z, 27)), 0x94D049BB133111EBULL);
  return xorv(z, shr(z, 31));
}

Value KernelBuilder::uniform(Value seed, Value stream, Value counter) {
  Value salt = arith::MulIOp::create(b, loc, stream,
                                     i64((int64_t)0xD1B54A32D192ED03ULL));
  Value key = mix(arith::XOrIOp::create(b, loc, seed, salt));
  Value c = arith::IndexCastOp::create(b, loc, b.getI64Type(), counter);
  Value z = mix(arith::AddIOp::create(b, loc, key, c));
  Value top = arith::ShRUIOp::create(b, loc, z, i64(40));
  Value f = arith::UIToFPOp::create(b, loc, b.getF32Type(), top);
  return mul(f, f32(1.0 / 16777216.0));
}
