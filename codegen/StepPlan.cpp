//===- StepPlan.cpp - buffers and calls of a compiled step ----------------===//

#include "codegen/StepPlan.h"

#include "dialect/FbtOps.h"

#include "llvm/ADT/DenseMap.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::fbt;

namespace {
constexpr int64_t kAlign = 64;

int64_t alignUp(int64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

std::string dtypeOf(Type t) {
  if (auto tt = dyn_cast<RankedTensorType>(t))
    t = tt.getElementType();
  if (t.isF32())
    return "f32";
  if (t.isInteger(32))
    return "i32";
  if (t.isInteger(64))
    return "i64";
  if (t.isBF16())
    return "bf16";
  return "unsupported";
}

int64_t bytesOf(Type t) {
  int64_t n = 1;
  Type e = t;
  if (auto tt = dyn_cast<RankedTensorType>(t)) {
    n = tt.getNumElements();
    e = tt.getElementType();
  }
  return n * std::max<int64_t>(1, e.getIntOrFloatBitWidth() / 8);
}

TensorInfo infoOf(Type t, StringRef name) {
  TensorInfo info;
  info.name = name.str();
  info.dtype = dtypeOf(t);
  if (auto tt = dyn_cast<RankedTensorType>(t))
    info.shape.assign(tt.getShape().begin(), tt.getShape().end());
  info.bytes = bytesOf(t);
  return info;
}

/// An arena tenant: a value (or a packed vector and its slots) with the op
/// range it must survive.
struct Tenant {
  Value value;
  int64_t def = 0, end = 0, bytes = 0;
};

/// Whether `op` may write result `result` into the buffer of `operand`
/// (InPlaceOpInterface: AdamW, KV writes, and kernel calls with `tied`).
/// Not if the op also reads `operand` as another operand: the tie promises
/// only that each element of the tied operand is read before it is written.
bool writesInPlace(Operation *op, unsigned result, Value operand) {
  auto inPlace = dyn_cast<InPlaceOpInterface>(op);
  if (!inPlace)
    return false;
  int64_t tied = inPlace.getTiedOperand(result);
  return tied >= 0 && op->getOperand(tied) == operand &&
         llvm::count(op->getOperands(), operand) == 1;
}
} // namespace

FailureOr<StepPlan> mlir::fbt::planStep(func::FuncOp fn) {
  StepPlan plan;
  plan.name = fn.getSymName().str();
  if (auto kind = fn->getAttrOfType<StringAttr>("fbt.step"))
    plan.kind = kind.str();
  if (auto k = fn->getAttrOfType<IntegerAttr>("fbt.passes"))
    plan.passes = k.getInt();

  Block &body = fn.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  SmallVector<Operation *> ops;
  DenseMap<Operation *, int64_t> position;
  for (Operation &op : body.without_terminator()) {
    position[&op] = ops.size();
    ops.push_back(&op);
  }
  const int64_t endOfStep = ops.size();

  DenseMap<Value, BufferRef> where;
  for (BlockArgument arg : fn.getArguments()) {
    auto name = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "fbt.name");
    TensorInfo info = infoOf(arg.getType(), name ? name.getValue() : "");
    info.param = bool(fn.getArgAttr(arg.getArgNumber(), "fbt.param"));
    plan.inputs.push_back(info);
    where[arg] = {BufferRef::Kind::Input, arg.getArgNumber(), 0, info.bytes};
  }

  SmallVector<std::pair<int64_t, Value>> deferredCopies;
  DenseSet<int64_t> updated; // inputs that already hold a result
  // Results: in place into the input they update where the producer allows
  // it and nothing reads the input afterwards, else an output buffer.
  for (auto [j, v] : llvm::enumerate(ret.getOperands())) {
    auto name = fn.getResultAttrOfType<StringAttr>(j, "fbt.name");
    TensorInfo info = infoOf(v.getType(), name ? name.getValue() : "");
    bool seen = where.count(v); // an argument, or returned twice
    if (auto upd = fn.getResultAttrOfType<IntegerAttr>(j, "fbt.updates")) {
      Value arg = fn.getArgument(upd.getInt());
      Operation *producer = v.getDefiningOp();
      // The producer is the input's last reader, and the step does not
      // also return the input itself (copied out after the step).
      bool lastReader =
          producer && llvm::all_of(arg.getUsers(), [&](Operation *u) {
            return u != ret && position.lookup(u) <= position.lookup(producer);
          });
      if (!seen && lastReader && !updated.count(upd.getInt()) &&
          writesInPlace(producer, cast<OpResult>(v).getResultNumber(), arg)) {
        updated.insert(upd.getInt()); // one result per input
        info.updates = upd.getInt();
        where[v] = {BufferRef::Kind::Input, upd.getInt(), 0, info.bytes};
      }
    }
    bool computed = v.getDefiningOp() && !isa<arith::ConstantOp>(v.getDefiningOp());
    if (!computed || seen)
      deferredCopies.push_back({(int64_t)j, v});
    else if (!where.count(v))
      where[v] = {BufferRef::Kind::Output, (int64_t)j, 0, info.bytes};
    plan.outputs.push_back(info);
  }

  // Constants are filled once at load.
  for (Operation *op : ops)
    if (auto c = dyn_cast<arith::ConstantOp>(op)) {
      ConstantInfo info;
      info.dtype = dtypeOf(c.getType());
      auto tt = dyn_cast<RankedTensorType>(c.getType());
      info.count = tt ? tt.getNumElements() : 1;
      if (auto dense = dyn_cast<DenseElementsAttr>(c.getValue())) {
        if (!dense.isSplat())
          return c.emitOpError() << "only splat constants can be planned";
        if (isa<FloatType>(dense.getElementType()))
          info.value = dense.getSplatValue<APFloat>().convertToDouble();
        else
          info.value = (double)dense.getSplatValue<APInt>().getSExtValue();
      } else if (auto i = dyn_cast<IntegerAttr>(c.getValue())) {
        info.value = (double)i.getInt();
      } else if (auto f = dyn_cast<FloatAttr>(c.getValue())) {
        info.value = f.getValueAsDouble();
      }
      where[c] = {BufferRef::Kind::Constant, (int64_t)plan.constants.size(), 0,
                  bytesOf(c.getType())};
      plan.constants.push_back(info);
    }

  // Liveness: the last op reading each value.
  auto lastUse = [&](Value v) {
    int64_t end = position.count(v.getDefiningOp()) ? position[v.getDefiningOp()] : 0;
    for (Operation *u : v.getUsers())
      end = std::max(end, u == ret ? endOfStep : position.lookup(u));
    return end;
  };

  // Arena tenants; a pack's operands live in its slots.
  SmallVector<Tenant> tenants;
  DenseMap<Value, std::pair<Value, int64_t>> slotOf; // operand -> (pack, byte offset)
  for (Operation *op : ops)
    if (auto pack = dyn_cast<PackOp>(op))
      for (auto [i, in] : llvm::enumerate(pack.getInputs()))
        slotOf[in] = {pack.getResult(), (int64_t)i * 4};
  for (Operation *op : ops) {
    if (isa<arith::ConstantOp>(op))
      continue;
    for (Value r : op->getResults()) {
      if (where.count(r) || slotOf.count(r))
        continue;
      Tenant t{r, position[op], lastUse(r), alignUp(bytesOf(r.getType()))};
      if (auto pack = dyn_cast<PackOp>(op))
        for (Value in : pack.getInputs()) {
          t.def = std::min(t.def, position[in.getDefiningOp()]);
          t.end = std::max(t.end, lastUse(in));
        }
      tenants.push_back(t);
    }
  }
  // Packs that are results: their operands' lifetimes need nothing more.
  llvm::stable_sort(tenants, [](const Tenant &a, const Tenant &b) {
    return a.def < b.def;
  });

  // First fit into the gaps between live tenants.
  struct Live { int64_t offset, bytes, end; };
  std::vector<Live> live;
  for (Tenant &t : tenants) {
    llvm::erase_if(live, [&](const Live &l) { return l.end < t.def; });
    llvm::sort(live, [](const Live &a, const Live &b) { return a.offset < b.offset; });
    int64_t offset = 0;
    for (const Live &l : live) {
      if (l.offset - offset >= t.bytes)
        break;
      offset = std::max(offset, l.offset + l.bytes);
    }
    live.push_back({offset, t.bytes, t.end});
    plan.arenaBytes = std::max(plan.arenaBytes, offset + t.bytes);
    where[t.value] = {BufferRef::Kind::Arena, 0, offset, bytesOf(t.value.getType())};
  }
  for (auto &[operand, slot] : slotOf) {
    BufferRef ref = where[slot.first];
    ref.offset += slot.second;
    ref.bytes = 4;
    where[operand] = ref;
  }

  // Outputs no op writes (constants, inputs, a value returned twice).
  for (auto [j, v] : deferredCopies)
    plan.copies.push_back({j, where.lookup(v)});

  // The calls.
  for (Operation *op : ops) {
    PlanOp p;
    if (auto gemm = dyn_cast<GemmOp>(op)) {
      p.m = gemm.getM();
      p.n = gemm.getN();
      p.k = gemm.getK();
      p.transposeLhs = gemm.getTransposeLhs();
      p.transposeRhs = gemm.getTransposeRhs();
      p.lhsType = dtypeOf(gemm.getLhs().getType());
      p.rhsType = dtypeOf(gemm.getRhs().getType());
      p.resultType = dtypeOf(gemm.getType());
    } else if (auto call = dyn_cast<CallKernelOp>(op)) {
      p.kernel = call.getKernel().str();
    } else if (isa<arith::ConstantOp, PackOp>(op)) {
      continue;
    } else {
      return op->emitOpError() << "cannot be planned: run fbt-to-kernels first";
    }
    for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults()))
      p.args.push_back(where.lookup(v));
    plan.ops.push_back(std::move(p));
  }
  return plan;
}

static llvm::json::Value refJson(const BufferRef &r) {
  static const char *kinds[] = {"input", "output", "const", "arena"};
  return llvm::json::Array{kinds[(int)r.kind], r.index, r.offset, r.bytes};
}

static llvm::json::Value tensorJson(const TensorInfo &t) {
  llvm::json::Object o{{"name", t.name},
                       {"dtype", t.dtype},
                       {"shape", llvm::json::Array(t.shape)},
                       {"bytes", t.bytes}};
  if (t.param)
    o["param"] = true;
  if (t.updates >= 0)
    o["updates"] = t.updates;
  return o;
}

llvm::json::Value mlir::fbt::toJson(const StepPlan &plan) {
  llvm::json::Array inputs, outputs, constants, ops;
  for (const TensorInfo &t : plan.inputs)
    inputs.push_back(tensorJson(t));
  for (const TensorInfo &t : plan.outputs)
    outputs.push_back(tensorJson(t));
  for (const ConstantInfo &c : plan.constants)
    constants.push_back(llvm::json::Object{
        {"dtype", c.dtype}, {"count", c.count}, {"value", c.value}});
  for (const PlanOp &p : plan.ops) {
    llvm::json::Array args;
    for (const BufferRef &r : p.args)
      args.push_back(refJson(r));
    if (p.kernel.empty()) {
      llvm::json::Object gemm{{"gemm", llvm::json::Array{p.m, p.n, p.k}},
                              {"transpose", llvm::json::Array{p.transposeLhs, p.transposeRhs}},
                              {"args", std::move(args)}};
      // Element types only where they are not all f32 (bf16 storage).
      if (p.lhsType != "f32" || p.rhsType != "f32" || p.resultType != "f32")
        gemm["types"] = llvm::json::Array{p.lhsType, p.rhsType, p.resultType};
      ops.push_back(std::move(gemm));
    } else
      ops.push_back(llvm::json::Object{{"kernel", p.kernel}, {"args", std::move(args)}});
  }
  llvm::json::Array copies;
  for (const OutputCopy &c : plan.copies)
    copies.push_back(llvm::json::Object{{"output", c.output}, {"from", refJson(c.source)}});
  return llvm::json::Object{{"name", plan.name},
                            {"copies", std::move(copies)},
                            {"kind", plan.kind},
                            {"passes", plan.passes},
                            {"arena_bytes", plan.arenaBytes},
                            {"inputs", std::move(inputs)},
                            {"outputs", std::move(outputs)},
                            {"constants", std::move(constants)},
                            {"ops", std::move(ops)}};
}
