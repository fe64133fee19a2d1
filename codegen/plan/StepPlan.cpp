//===- StepPlan.cpp - buffers and calls of a compiled step ----------------===//

#include "codegen/plan/StepPlan.h"

#include "dialect/FbtOps.h"

#include "llvm/ADT/DenseMap.h"

#include <algorithm>
#include <map>
#include <optional>

using namespace mlir;
using namespace mlir::fbt;
using ::fbt::CollectiveKind;
using ::fbt::StepKind;

namespace {
constexpr int64_t kAlign = 64;

/// The plan's reduction for the IR's: the same case, by name.
::fbt::Reduction reductionOf(ReductionKind kind) {
  return *::fbt::parseKind<::fbt::Reduction>(stringifyReductionKind(kind).str());
}

int64_t alignUp(int64_t v) { return (v + kAlign - 1) / kAlign * kAlign; }

} // namespace

::fbt::DType mlir::fbt::planDType(Type t) {
  if (auto shaped = dyn_cast<ShapedType>(t))
    t = shaped.getElementType();
  if (t.isInteger(32))
    return ::fbt::DType::I32;
  if (t.isInteger(64))
    return ::fbt::DType::I64;
  if (t.isInteger(8))
    return ::fbt::DType::I8;
  if (t.isBF16())
    return ::fbt::DType::BF16;
  if (t.isF16())
    return ::fbt::DType::F16;
  return ::fbt::DType::F32;
}

namespace {

bool plannable(Type t) {
  if (auto tt = dyn_cast<RankedTensorType>(t))
    t = tt.getElementType();
  return t.isF32() || t.isBF16() || t.isF16() || t.isInteger(8) || t.isInteger(32) ||
         t.isInteger(64);
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

TensorSpec infoOf(Type t, StringRef name) {
  TensorSpec info;
  info.name = name.str();
  info.dtype = planDType(t);
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

/// A splat constant's value, filled once at load.
FailureOr<ConstantSpec> constantSpec(arith::ConstantOp c) {
  ConstantSpec info;
  info.dtype = planDType(c.getType());
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
  return info;
}

/// First fit: each tenant (in order of definition) at the lowest offset
/// free of every tenant still live when it is defined. Returns the arena's
/// size.
int64_t placeInArena(ArrayRef<Tenant> tenants, DenseMap<Value, BufferRef> &where) {
  struct Live {
    int64_t offset, bytes, end;
  };
  std::vector<Live> live;
  int64_t arenaBytes = 0;
  for (const Tenant &t : tenants) {
    llvm::erase_if(live, [&](const Live &l) { return l.end < t.def; });
    llvm::sort(live, [](const Live &a, const Live &b) { return a.offset < b.offset; });
    int64_t offset = 0;
    for (const Live &l : live) {
      if (l.offset - offset >= t.bytes)
        break;
      offset = std::max(offset, l.offset + l.bytes);
    }
    live.push_back({offset, t.bytes, t.end});
    arenaBytes = std::max(arenaBytes, offset + t.bytes);
    where[t.value] = {BufferRef::Kind::Arena, 0, offset, bytesOf(t.value.getType())};
  }
  return arenaBytes;
}

std::vector<std::string> strings(ArrayAttr names) {
  std::vector<std::string> out;
  for (StringRef n : names.getAsValueRange<StringAttr>())
    out.push_back(n.str());
  return out;
}

/// The values from `arg` to `v` along which each may be written over the
/// one before (InPlaceOpInterface): [v] when v's producer updates `arg`
/// itself, [v, u] when it updates u, which updates `arg` (ZeRO-1: the
/// all_gather over AdamW's parameter), ... Each value between is read by
/// the next link alone. Empty when there is no such chain.
SmallVector<Value> inPlaceChain(Value v, Value arg) {
  SmallVector<Value> chain;
  for (Value cur = v; cur != arg;) {
    auto result = dyn_cast<OpResult>(cur);
    auto inPlace = result ? dyn_cast<InPlaceOpInterface>(result.getOwner()) : nullptr;
    int64_t tied = inPlace ? inPlace.getTiedOperand(result.getResultNumber()) : -1;
    if (tied < 0)
      return {};
    Value from = result.getOwner()->getOperand(tied);
    if (!writesInPlace(result.getOwner(), result.getResultNumber(), from) ||
        (from != arg && !from.hasOneUse()))
      return {};
    chain.push_back(cur);
    cur = from;
  }
  return chain;
}

/// The call `op` makes: a GEMM or a kernel, its operands and results where
/// `where` put them. Constants and packs make none (nullopt).
FailureOr<std::optional<PlanOp>> planCall(Operation *op,
                                          const DenseMap<Value, BufferRef> &where) {
  PlanOp p;
  if (auto gemm = dyn_cast<GemmOp>(op)) {
    p.m = gemm.getM();
    p.n = gemm.getN();
    p.k = gemm.getK();
    p.transposeLhs = gemm.getTransposeLhs();
    p.transposeRhs = gemm.getTransposeRhs();
    p.lhsType = planDType(gemm.getLhs().getType());
    p.rhsType = planDType(gemm.getRhs().getType());
    p.resultType = planDType(gemm.getType());
  } else if (auto call = dyn_cast<CallKernelOp>(op)) {
    p.kind = PlanOp::Kind::Kernel;
    p.kernel = call.getKernel().str();
    if (auto shard = op->getAttrOfType<StringAttr>("fbt.shard")) {
      p.shard = shard.str();
      for (unsigned r = 0; r < op->getNumResults(); ++r)
        p.tied.push_back(call.getTiedOperand(r));
    }
  } else if (auto reduce = dyn_cast<AllReduceOp>(op)) {
    p.kind = PlanOp::Kind::Collective;
    p.collective = CollectiveKind::AllReduce;
    p.reduction = reductionOf(reduce.getReduction());
    p.bucket = reduce.getBucket();
    p.names = strings(reduce.getNames());
  } else if (auto scatter = dyn_cast<ReduceScatterOp>(op)) {
    p.kind = PlanOp::Kind::Collective;
    p.collective = CollectiveKind::ReduceScatter;
    p.reduction = reductionOf(scatter.getReduction());
    p.bucket = scatter.getBucket();
    p.names = strings(scatter.getNames());
    p.shards = strings(scatter.getShards());
  } else if (auto gather = dyn_cast<AllGatherOp>(op)) {
    p.kind = PlanOp::Kind::Collective;
    p.collective = CollectiveKind::AllGather;
    p.bucket = gather.getBucket();
    p.names = strings(gather.getNames());
    p.shards = strings(gather.getShards());
  } else if (isa<arith::ConstantOp, PackOp>(op)) {
    return std::optional<PlanOp>();
  } else {
    return op->emitOpError() << "cannot be planned: run fbt-to-kernels first";
  }
  for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults()))
    p.args.push_back(where.lookup(v));
  return std::optional<PlanOp>(std::move(p));
}
} // namespace

namespace {
/// Plans one step in phases, each a method: what the step is, where its
/// inputs, results and constants live, when each collective's results are
/// waited for, where the arena holds every other value, and the calls.
class StepPlanner {
public:
  explicit StepPlanner(func::FuncOp fn)
      : fn(fn), body(fn.getBody().front()), ret(cast<func::ReturnOp>(body.getTerminator())) {}

  FailureOr<StepPlan> run() {
    if (failed(readStep()))
      return failure();
    planInputs();
    planResults();
    if (failed(planConstants()))
      return failure();
    findWaits();
    placeInArenaAndSlots();
    // Outputs no op writes (constants, inputs, a value returned twice).
    for (auto [j, v] : deferredCopies)
      plan.copies.push_back({j, where.lookup(v)});
    if (failed(planCalls()))
      return failure();
    return std::move(plan);
  }

private:
  func::FuncOp fn;
  Block &body;
  func::ReturnOp ret;
  StepPlan plan;
  SmallVector<Operation *> ops;
  DenseMap<Operation *, int64_t> position;
  int64_t endOfStep = 0;
  DenseMap<Value, BufferRef> where;
  SmallVector<std::pair<int64_t, Value>> deferredCopies;
  DenseMap<Operation *, int64_t> waitAt;
  std::map<int64_t, SmallVector<int64_t>> bucketsReadyAt; // position -> buckets

  /// The step's name, kind and passes; its types; its ops in order.
  LogicalResult readStep() {
    plan.name = fn.getSymName().str();
    // fbt.step is verified to name a kind (FbtDialect.cpp).
    std::optional<StepKind> kind;
    if (auto attr = fn->getAttrOfType<StringAttr>("fbt.step"))
      kind = ::fbt::parseKind<StepKind>(attr.getValue().str());
    if (!kind)
      return fn.emitOpError() << "cannot be planned: it has no fbt.step";
    plan.kind = *kind;
    if (auto k = fn->getAttrOfType<IntegerAttr>("fbt.passes"))
      plan.passes = k.getInt();
    for (Type t : fn.getFunctionType().getInputs())
      if (!plannable(t))
        return fn.emitOpError() << "takes " << t << ": a bundle holds f32, bf16, i32 and i64";
    for (Operation &op : body)
      for (Type t : op.getResultTypes())
        if (!plannable(t))
          return op.emitOpError() << "yields " << t << ": a bundle holds f32, bf16, i32 and i64";
    for (Operation &op : body.without_terminator()) {
      position[&op] = ops.size();
      ops.push_back(&op);
    }
    endOfStep = ops.size();
    return success();
  }

  void planInputs() {
    for (BlockArgument arg : fn.getArguments()) {
      auto name = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "fbt.name");
      TensorSpec info = infoOf(arg.getType(), name ? name.getValue() : "");
      info.param = bool(fn.getArgAttr(arg.getArgNumber(), "fbt.param"));
      plan.inputs.push_back(info);
      where[arg] = {BufferRef::Kind::Input, arg.getArgNumber(), 0, info.bytes};
    }
  }

  /// Results: in place into the input they update where the producer allows
  /// it and nothing reads the input afterwards, else an output buffer.
  void planResults() {
    DenseSet<int64_t> updated; // inputs that already hold a result
    for (auto [j, v] : llvm::enumerate(ret.getOperands())) {
      auto name = fn.getResultAttrOfType<StringAttr>(j, "fbt.name");
      TensorSpec info = infoOf(v.getType(), name ? name.getValue() : "");
      bool seen = where.count(v); // an argument, or returned twice
      if (auto upd = fn.getResultAttrOfType<IntegerAttr>(j, "fbt.updates")) {
        Value arg = fn.getArgument(upd.getInt());
        SmallVector<Value> chain = seen ? SmallVector<Value>() : inPlaceChain(v, arg);
        // The chain's first link is the input's last reader, and the step
        // does not also return the input itself (copied out after the step).
        Operation *first = chain.empty() ? nullptr : chain.back().getDefiningOp();
        bool lastReader = first && llvm::all_of(arg.getUsers(), [&](Operation *u) {
                            return u != ret && position.lookup(u) <= position.lookup(first);
                          });
        if (lastReader && !updated.count(upd.getInt())) {
          updated.insert(upd.getInt()); // one result per input
          info.updates = upd.getInt();
          for (Value link : chain)
            where[link] = {BufferRef::Kind::Input, upd.getInt(), 0, info.bytes};
        }
      }
      bool computed = v.getDefiningOp() && !isa<arith::ConstantOp>(v.getDefiningOp());
      if (!computed || seen)
        deferredCopies.push_back({(int64_t)j, v});
      else if (!where.count(v))
        where[v] = {BufferRef::Kind::Output, (int64_t)j, 0, info.bytes};
      plan.outputs.push_back(info);
    }
  }

  /// Constants are filled once at load.
  LogicalResult planConstants() {
    for (Operation *op : ops)
      if (auto c = dyn_cast<arith::ConstantOp>(op)) {
        FailureOr<ConstantSpec> info = constantSpec(c);
        if (failed(info))
          return failure();
        where[c] = {BufferRef::Kind::Const, (int64_t)plan.constants.size(), 0,
                    bytesOf(c.getType())};
        plan.constants.push_back(*info);
      }
    return success();
  }

  /// A collective runs from where it stands to just before the first use of
  /// any of its results (its wait), reading its operands all along.
  void findWaits() {
    for (Operation *op : ops) {
      std::optional<int64_t> bucket;
      if (auto c = dyn_cast<AllReduceOp>(op))
        bucket = c.getBucket();
      if (auto c = dyn_cast<ReduceScatterOp>(op))
        bucket = c.getBucket();
      if (auto c = dyn_cast<AllGatherOp>(op))
        bucket = c.getBucket();
      if (!bucket)
        continue;
      int64_t first = endOfStep;
      for (Value r : op->getResults())
        for (Operation *u : r.getUsers())
          first = std::min(first, u == ret ? endOfStep : position.lookup(u));
      waitAt[op] = first;
      bucketsReadyAt[first].push_back(*bucket);
    }
  }

  /// Liveness: the last op reading `v` (a collective reads until its wait).
  int64_t lastUse(Value v) {
    int64_t end = position.count(v.getDefiningOp()) ? position[v.getDefiningOp()] : 0;
    for (Operation *u : v.getUsers())
      end = std::max(end, u == ret                ? endOfStep
                          : waitAt.count(u) ? waitAt.lookup(u)
                                            : position.lookup(u));
    return end;
  }

  /// Every other value is an arena tenant; a pack's operands live in its
  /// slots.
  void placeInArenaAndSlots() {
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
    llvm::stable_sort(tenants, [](const Tenant &a, const Tenant &b) { return a.def < b.def; });
    plan.arenaBytes = placeInArena(tenants, where);
    for (auto &[operand, slot] : slotOf) {
      BufferRef ref = where[slot.first];
      ref.offset += slot.second;
      ref.bytes = 4;
      where[operand] = ref;
    }
  }

  /// The calls, each collective's wait before the first reader of its
  /// results.
  LogicalResult planCalls() {
    auto waitsAt = [&](int64_t at) {
      auto ready = bucketsReadyAt.find(at);
      if (ready == bucketsReadyAt.end())
        return;
      for (int64_t bucket : ready->second) {
        PlanOp wait;
        wait.kind = PlanOp::Kind::Wait;
        wait.bucket = bucket;
        plan.ops.push_back(std::move(wait));
      }
    };
    for (Operation *op : ops) {
      waitsAt(position[op]);
      FailureOr<std::optional<PlanOp>> call = planCall(op, where);
      if (failed(call))
        return failure();
      if (*call)
        plan.ops.push_back(std::move(**call));
    }
    waitsAt(endOfStep);
    return success();
  }
};
} // namespace

FailureOr<StepPlan> mlir::fbt::planStep(func::FuncOp fn) { return StepPlanner(fn).run(); }
