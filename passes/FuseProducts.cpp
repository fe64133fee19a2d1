//===- FuseProducts.cpp - products of one input as one call ---------------===//
//
// A decode step multiplies each layer's normed input by q, k and v, and its
// post-attention norm by gate and up: after fbt-inference-weights, separate
// fbt.quantized_matmul ops of one input. On the CPU each is a kernel call
// that forks and joins the thread pool, and with int8 activations
// quantizes the input again; one fbt.quantized_matmuls does both once.
//
//===----------------------------------------------------------------------===//

#include "dialect/FbtOps.h"
#include "passes/Passes.h"

#include <map>
#include <tuple>

namespace mlir::fbt {
#define GEN_PASS_DEF_FBTFUSEPRODUCTS
#include "passes/Passes.h.inc"
} // namespace mlir::fbt

using namespace mlir;
using namespace mlir::fbt;

namespace {
struct FuseProducts : mlir::fbt::impl::FbtFuseProductsBase<FuseProducts> {
  void runOnOperation() override {
    SmallVector<Block *> blocks;
    for (auto fn : getOperation().getOps<func::FuncOp>())
      fn.walk([&](Block *block) { blocks.push_back(block); });
    for (Block *block : blocks)
      fuse(block);
  }

  /// What products must share to fuse: the input, the weights' form (its
  /// element type: int8 comes with scales) and the activations' form.
  using Key = std::tuple<const void *, const void *, bool>;
  static Key keyOf(QuantizedMatmulOp q) {
    Type form = cast<RankedTensorType>(q.getWeight().getType()).getElementType();
    return {q.getInput().getAsOpaquePointer(), form.getAsOpaquePointer(),
            q.getInt8Activations()};
  }

  static void fuse(Block *block) {
    std::map<Key, SmallVector<QuantizedMatmulOp>> groups;
    SmallVector<Key> order;
    for (auto q : block->getOps<QuantizedMatmulOp>()) {
      auto [it, fresh] = groups.try_emplace(keyOf(q));
      if (fresh)
        order.push_back(it->first);
      it->second.push_back(q);
    }
    for (const Key &key : order) {
      SmallVector<QuantizedMatmulOp> &ops = groups[key];
      // The weights are step inputs (fbt-inference-weights), so they are
      // there before the first product; anything else is left alone.
      bool inputs = llvm::all_of(ops, [](QuantizedMatmulOp q) {
        return isa<BlockArgument>(q.getWeight()) &&
               (!q.getScales() || isa<BlockArgument>(q.getScales()));
      });
      if (ops.size() < 2 || !inputs)
        continue;
      // At the first product, which the shared input precedes.
      OpBuilder b(ops.front());
      SmallVector<Value> weights, scales;
      SmallVector<Type> types;
      for (QuantizedMatmulOp q : ops) {
        weights.push_back(q.getWeight());
        if (q.getScales())
          scales.push_back(q.getScales());
        types.push_back(q.getType());
      }
      auto fused = QuantizedMatmulsOp::create(b, ops.front().getLoc(), types,
                                              ops.front().getInput(), weights, scales,
                                              ops.front().getInt8Activations());
      for (auto [i, q] : llvm::enumerate(ops)) {
        q.getResult().replaceAllUsesWith(fused->getResult(i));
        q.erase();
      }
    }
  }
};
} // namespace
