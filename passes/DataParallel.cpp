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
//===----------------------------------------------------------------------===//

#include "dialect/FbtOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

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
      if (isa<AllReduceOp>(op))
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
      insertReduction(body, losses, bucket++);
    // Buckets in the order the gradients become ready; a layer boundary
    // closes one once it is large enough.
    llvm::stable_sort(grads, [](const Reduced &a, const Reduced &b) {
      return a.position < b.position;
    });
    SmallVector<Reduced> open;
    int64_t openBytes = 0;
    for (const Reduced &g : grads) {
      if (!open.empty() && g.layer != open.back().layer && openBytes >= minBucketBytes) {
        insertReduction(body, open, bucket++);
        open.clear();
        openBytes = 0;
      }
      open.push_back(g);
      openBytes += bytesOf(g.value);
    }
    insertReduction(body, open, bucket++);
    return success();
  }

  /// One all_reduce of `values`, right after the last of them is defined;
  /// every later use reads its result.
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
    auto reduce = AllReduceOp::create(b, values.front().value.getLoc(), types, inputs,
                                      b.getStringAttr("mean"), b.getI64IntegerAttr(bucket),
                                      b.getStrArrayAttr(names));
    for (auto [in, out] : llvm::zip(inputs, reduce.getResults()))
      in.replaceUsesWithIf(out, [&](OpOperand &use) {
        Operation *user = body.findAncestorOpInBlock(*use.getOwner());
        return user && user != reduce && reduce->isBeforeInBlock(user);
      });
  }
};
} // namespace
