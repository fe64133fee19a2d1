//===- KernelBuilder.cpp - a small DSL for writing kernels in IR ----------===//

#include "codegen/KernelBuilder.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

using namespace mlir;
using namespace mlir::fbt;

KernelBuilder::KernelBuilder(OpBuilder &builder, Location loc, StringRef name,
                             ArrayRef<Type> elementTypes,
                             ArrayRef<int64_t> sizes)
    : b(builder), loc(loc) {
  SmallVector<Type> args;
  for (auto [t, n] : llvm::zip(elementTypes, sizes))
    args.push_back(MemRefType::get({n}, t));
  fn = func::FuncOp::create(b, loc, name, b.getFunctionType(args, {}));
  fn->setAttr("fbt.kernel", b.getUnitAttr());
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
}

func::FuncOp KernelBuilder::finish() {
  func::ReturnOp::create(b, loc);
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
  return memref::LoadOp::create(b, loc, mem, ValueRange{idx});
}
void KernelBuilder::store(Value v, Value mem, Value idx) {
  memref::StoreOp::create(b, loc, v, mem, ValueRange{idx});
}

void KernelBuilder::parallel(int64_t n, function_ref<void(Value)> body) {
  scf::ParallelOp::create(b, loc, ValueRange{index(0)}, ValueRange{index(n)},
                          ValueRange{index(1)},
                          [&](OpBuilder &nested, Location, ValueRange ivs) {
                            OpBuilder::InsertionGuard g(b);
                            b.setInsertionPoint(nested.getInsertionBlock(),
                                                nested.getInsertionPoint());
                            body(ivs[0]);
                          });
}

void KernelBuilder::loop(int64_t n, function_ref<void(Value)> body) {
  loop(index(0), index(n), body);
}

void KernelBuilder::loop(Value lo, Value hi, function_ref<void(Value)> body) {
  scf::ForOp::create(b, loc, lo, hi, index(1), ValueRange{},
                     [&](OpBuilder &nested, Location, Value iv, ValueRange) {
                       OpBuilder::InsertionGuard g(b);
                       b.setInsertionPoint(nested.getInsertionBlock(),
                                           nested.getInsertionPoint());
                       body(iv);
                       scf::YieldOp::create(b, loc);
                     });
}

SmallVector<Value>
KernelBuilder::fold(Value lo, Value hi, ValueRange init,
                    function_ref<SmallVector<Value>(Value, ValueRange)> body) {
  auto forOp = scf::ForOp::create(
      b, loc, lo, hi, index(1), init,
      [&](OpBuilder &nested, Location, Value iv, ValueRange carried) {
        OpBuilder::InsertionGuard g(b);
        b.setInsertionPoint(nested.getInsertionBlock(),
                            nested.getInsertionPoint());
        scf::YieldOp::create(b, loc, body(iv, carried));
      });
  return SmallVector<Value>(forOp.getResults());
}

Value KernelBuilder::sum(int64_t n, function_ref<Value(Value)> term) {
  return fold(index(0), index(n), {f32(0)},
              [&](Value iv, ValueRange acc) -> SmallVector<Value> {
                return {add(acc[0], term(iv))};
              })[0];
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
