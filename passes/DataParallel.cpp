//===- DataParallel.cpp - gradients reduced over the ranks ----------------===//
//
// Every rank runs the same training step on its own micro-batch; before the
// optimizer reads them, the gradients become the global batch's: the mean
// over every rank's (and every micro-batch each accumulated). Stated here
// as fbt.all_reduce, bucketed per layer in the order the backward produces
// the gradients, each bucket placed right after its last gradient so the
// runtime can reduce it while the backward of the layers below runs. The
// loss and per-pass losses are reduced too, so what a step reports is the
// global batch's.
//
// ZeRO-1 (zero=1) keeps every rank's AdamW state to its share of the
// parameters, whole tensors each (the runtime's partition by bytes,
// runtime/format/ZeroShards.h): the gradient buckets are reduce-scattered
// onto their owners, each rank sums the squares of the gradients it owns
// and one scalar all-reduce makes the global norm, AdamW runs on the owner
// (`fbt.shard`), and each bucket's updated parameters are all-gathered as
// soon as its last AdamW is done.
//
//===----------------------------------------------------------------------===//

#include "dialect/FbtOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <type_traits>

#include <optional>

namespace mlir::fbt {
#define GEN_PASS_DEF_FBTDATAPARALLEL
#include "passes/Passes.h.inc"
} // namespace mlir::fbt

using namespace mlir;
using namespace mlir::fbt;

namespace {

/// A value to reduce, with the name the gradient-only step gives it.
struct Reduced {
  Value value;
  std::string name;
  int64_t position = -1; ///< of its defining op in the block; -1: an argument
  std::optional<int64_t> layer;
};

/// The layer index in a parameter name ("model.layers.3.mlp..." -> 3).
std::optional<int64_t> layerOf(StringRef name) {
  size_t at = name.find("layers.");
  if (at == StringRef::npos)
    return std::nullopt;
  StringRef rest = name.drop_front(at + 7);
  int64_t layer;
  if (rest.consumeInteger(10, layer) || !rest.starts_with("."))
    return std::nullopt;
  return layer;
}

int64_t bytesOf(Value v) {
  auto t = cast<RankedTensorType>(v.getType());
  return t.getNumElements() * std::max<int64_t>(1, t.getElementTypeBitWidth() / 8);
}

struct DataParallel : mlir::fbt::impl::FbtDataParallelBase<DataParallel> {
  using Base::Base;

  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (fn->hasAttr("fbt.optimizer") && failed(reduce(fn)))
        return signalPassFailure();
  }

  LogicalResult reduce(func::FuncOp fn) {
    Block &body = fn.getBody().front();
    for (Operation &op : body)
      if (isa<AllReduceOp, ReduceScatterOp>(op))
        return success(); // already reduced
    DenseMap<Operation *, int64_t> position;
    for (auto [i, op] : llvm::enumerate(body))
      position[&op] = i;
    auto positionOf = [&](Value v) -> int64_t {
      Operation *def = v.getDefiningOp();
      return def && def->getBlock() == &body ? position.lookup(def) : -1;
    };

    // Gradients, named after the parameter each AdamW updates.
    SmallVector<Reduced> grads;
    DenseSet<Value> seen;
    for (Operation &op : body) {
      auto adam = dyn_cast<AdamWOp>(op);
      if (!adam)
        continue;
      auto param = dyn_cast<BlockArgument>(adam.getParam());
      auto name = param ? fn.getArgAttrOfType<StringAttr>(param.getArgNumber(), "fbt.name")
                        : StringAttr();
      if (!name)
        return adam.emitOpError() << "fbt-data-parallel: updates a value that is not a "
                                     "named parameter";
      if (!seen.insert(adam.getGrad()).second)
        continue;
      grads.push_back({adam.getGrad(), "grad." + name.str(), positionOf(adam.getGrad()),
                       layerOf(name.getValue())});
    }
    if (grads.empty())
      return fn.emitOpError() << "fbt-data-parallel: an optimizer step without AdamW";

    // The reported losses: results named loss and pass_losses.
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    SmallVector<Reduced> losses;
    for (auto [j, v] : llvm::enumerate(ret.getOperands())) {
      auto name = fn.getResultAttrOfType<StringAttr>(j, "fbt.name");
      if (name && (name.getValue() == "loss" || name.getValue() == "pass_losses"))
        losses.push_back({v, name.str(), positionOf(v), std::nullopt});
    }

    int64_t bucket = 0;
    if (!losses.empty())
      insertReduction<AllReduceOp>(body, losses, bucket++);
    // Buckets in the order the gradients become ready; a layer boundary
    // closes one once it is large enough.
    llvm::stable_sort(grads, [](const Reduced &a, const Reduced &b) {
      return a.position < b.position;
    });
    SmallVector<SmallVector<Reduced>> buckets(1);
    int64_t openBytes = 0;
    for (const Reduced &g : grads) {
      if (!buckets.back().empty() && g.layer != buckets.back().back().layer &&
          openBytes >= minBucketBytes) {
        buckets.emplace_back();
        openBytes = 0;
      }
      buckets.back().push_back(g);
      openBytes += bytesOf(g.value);
    }
    for (ArrayRef<Reduced> b : buckets) {
      if (zero == 0)
        insertReduction<AllReduceOp>(body, b, bucket++);
      else
        insertReduction<ReduceScatterOp>(body, b, bucket++);
    }
    if (zero == 0)
      return success();
    return shardOptimizer(fn, buckets, bucket);
  }

  /// ZeRO-1 past the reduce-scatters: the global norm from each rank's
  /// owned gradients, AdamW on the owner, the parameters all-gathered.
  LogicalResult shardOptimizer(func::FuncOp fn, ArrayRef<SmallVector<Reduced>> buckets,
                               int64_t bucket) {
    Block &body = fn.getBody().front();
    SmallVector<AdamWOp> adams(body.getOps<AdamWOp>());
    DenseMap<Value, std::string> paramOf; // reduced gradient -> its parameter
    for (AdamWOp adam : adams) {
      auto param = cast<BlockArgument>(adam.getParam());
      std::string name =
          fn.getArgAttrOfType<StringAttr>(param.getArgNumber(), "fbt.name").str();
      paramOf[adam.getGrad()] = name;
      adam->setAttr("fbt.shard", StringAttr::get(&getContext(), name));
    }
    // The norm: squares of the owned gradients, in the order the global
    // norm reads them, then one scalar summed over the ranks.
    SmallVector<GlobalNormOp> norms(body.getOps<GlobalNormOp>());
    if (norms.size() != 1)
      return fn.emitOpError() << "fbt-data-parallel: ZeRO-1 expects one global norm, found "
                              << norms.size();
    GlobalNormOp norm = norms.front();
    OpBuilder b(norm);
    Location loc = norm.getLoc();
    auto scalar = cast<RankedTensorType>(norm.getType());
    Value acc = arith::ConstantOp::create(
        b, loc, scalar, DenseElementsAttr::get(scalar, b.getF32FloatAttr(0).getValue()));
    for (Value g : norm.getInputs()) {
      auto owner = paramOf.find(g);
      if (owner == paramOf.end())
        return norm.emitOpError() << "fbt-data-parallel: a gradient no AdamW reads";
      auto link = AccumulateSquaresOp::create(b, loc, scalar, g, acc);
      link->setAttr("fbt.shard", b.getStringAttr(owner->second));
      acc = link.getResult();
    }
    auto total = AllReduceOp::create(b, loc, TypeRange{scalar}, ValueRange{acc},
                                     ReductionKindAttr::get(b.getContext(), ReductionKind::sum),
                                     b.getI64IntegerAttr(bucket++), b.getStrArrayAttr({""}));
    Value root = SqrtOp::create(b, loc, scalar, total.getResult(0));
    norm.replaceAllUsesWith(root);
    norm.erase();

    // Each bucket's updated parameters, gathered after its last AdamW.
    DenseMap<StringRef, AdamWOp> adamOf;
    for (AdamWOp adam : adams)
      adamOf[adam->getAttrOfType<StringAttr>("fbt.shard").getValue()] = adam;
    for (ArrayRef<Reduced> grads : buckets) {
      SmallVector<Value> inputs;
      SmallVector<Type> types;
      SmallVector<StringRef> names;
      AdamWOp last;
      for (const Reduced &g : grads) {
        StringRef param = StringRef(g.name).drop_front(5); // "grad."
        AdamWOp adam = adamOf.lookup(param);
        if (!adam)
          return fn.emitOpError() << "fbt-data-parallel: no AdamW updates " << param;
        inputs.push_back(adam.getNewParam());
        types.push_back(adam.getNewParam().getType());
        names.push_back(param);
        if (!last || last->isBeforeInBlock(adam))
          last = adam;
      }
      b.setInsertionPointAfter(last);
      auto gather = AllGatherOp::create(b, last.getLoc(), types, inputs,
                                        b.getI64IntegerAttr(bucket++), b.getStrArrayAttr(names),
                                        b.getStrArrayAttr(names));
      for (auto [in, out] : llvm::zip(inputs, gather.getResults()))
        in.replaceAllUsesExcept(out, gather);
    }
    return success();
  }

  /// One collective (all_reduce or reduce_scatter) of `values`, right
  /// after the last of them is defined; every later use reads its result.
  template <typename Collective>
  void insertReduction(Block &body, ArrayRef<Reduced> values, int64_t bucket) {
    const Reduced *last = &values.front();
    for (const Reduced &r : values)
      if (r.position > last->position)
        last = &r;
    OpBuilder b(&getContext());
    if (Operation *def = last->value.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(&body);
    SmallVector<Value> inputs;
    SmallVector<Type> types;
    SmallVector<StringRef> names;
    for (const Reduced &r : values) {
      inputs.push_back(r.value);
      types.push_back(r.value.getType());
      names.push_back(r.name);
    }
    Operation *reduce;
    if constexpr (std::is_same_v<Collective, AllReduceOp>) {
      reduce = AllReduceOp::create(b, values.front().value.getLoc(), types, inputs,
                                   ReductionKindAttr::get(b.getContext(), ReductionKind::mean),
                                   b.getI64IntegerAttr(bucket),
                                   b.getStrArrayAttr(names));
    } else {
      SmallVector<StringRef> shards;
      for (StringRef name : names)
        shards.push_back(name.drop_front(5)); // "grad."
      reduce = ReduceScatterOp::create(b, values.front().value.getLoc(), types, inputs,
                                       ReductionKindAttr::get(b.getContext(), ReductionKind::mean),
                                       b.getI64IntegerAttr(bucket), b.getStrArrayAttr(names),
                                       b.getStrArrayAttr(shards));
    }
    for (auto [in, out] : llvm::zip(inputs, reduce->getResults()))
      in.replaceUsesWithIf(out, [&](OpOperand &use) {
        Operation *user = body.findAncestorOpInBlock(*use.getOwner());
        return user && user != reduce && reduce->isBeforeInBlock(user);
      });
  }
};
} // namespace
