//===- ExpandMultipass.cpp - unroll the K-pass objective ------------------===//
//
// fbt.multipass states the objective once; this pass writes out the K
// passes as straight-line IR that autodiff and the kernel lowering see:
//
//   h_1, L_1 = body(input)
//   h_k, L_k = body(feedback(input, shift_right(h_{k-1})))     k = 2..K
//   loss, pass_losses = combine_losses(L_1..L_K)
//
// With grad_passes G, the passes before the last G (after pass 1) weigh
// nothing in the loss and the state leaving them is cut (stop_gradient), so
// autodiff, which starts from the loss, never reaches them: they run
// forward only and keep no activations for a backward.
//
// Parameters are captured from the enclosing function, so every pass uses
// the same SSA values: the IR grows linearly in K, the weights do not.
//
//===----------------------------------------------------------------------===//

#include "dialect/FbtOps.h"
#include "dialect/TruncatedPasses.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::fbt {
#define GEN_PASS_DEF_FBTEXPANDMULTIPASS
#include "passes/Passes.h.inc"
} // namespace mlir::fbt

using namespace mlir;
using namespace mlir::fbt;

namespace {
/// Clones a region's single block at the builder's point with `args` for its
/// arguments and returns what its fbt.yield yields. `stream` (>0) renumbers
/// the jitter streams of the copy so each pass draws its own noise.
SmallVector<Value> inlineRegion(OpBuilder &b, Region &region,
                                ValueRange args, int64_t stream) {
  Block &block = region.front();
  IRMapping map;
  map.map(block.getArguments(), args);
  for (Operation &op : block.without_terminator()) {
    Operation *copy = b.clone(op, map);
    if (auto jitter = dyn_cast<JitterOp>(copy); jitter && stream > 0)
      jitter.setStream(stream);
  }
  SmallVector<Value> results;
  for (Value v : cast<YieldOp>(block.getTerminator()).getValues())
    results.push_back(map.lookupOrDefault(v));
  return results;
}

struct ExpandMultipass
    : mlir::fbt::impl::FbtExpandMultipassBase<ExpandMultipass> {
  using Base::Base;

  void runOnOperation() override {
    if (passes < 0) {
      getOperation().emitError()
          << "fbt-expand-multipass: passes must be >= 1 (or 0 to keep each "
             "objective's own K), got "
          << static_cast<int64_t>(passes);
      return signalPassFailure();
    }
    SmallVector<MultipassOp> ops;
    getOperation().walk([&](MultipassOp op) { ops.push_back(op); });
    for (MultipassOp op : ops)
      if (failed(expand(op)))
        return signalPassFailure();
  }

  LogicalResult expand(MultipassOp op) {
    int64_t k = passes > 0 ? (int64_t)passes : (int64_t)op.getNumPasses();
    OpBuilder b(op);
    Location loc = op.getLoc();
    Value input = op.getInput();

    SmallVector<Value> losses;
    Value h;
    int64_t firstTrained = ::fbt::firstTrainedPass(k, op.getGradPasses());
    for (int64_t pass = 1; pass <= k; ++pass) {
      Value u = input;
      if (pass > 1) {
        Value s = ShiftRightOp::create(b, loc, h.getType(), h);
        // Entering the first trained pass after forward-only ones.
        bool cut = pass == firstTrained && firstTrained > 2;
        if (op.getDetachState() || cut)
          s = StopGradientOp::create(b, loc, s.getType(), s);
        u = inlineRegion(b, op.getFeedback(), {input, s}, pass)[0];
      }
      SmallVector<Value> out = inlineRegion(b, op.getBody(), {u}, 0);
      h = out[0];
      losses.push_back(out[1]);
    }

    auto weights = MultipassOp::lossWeights(
        k, op.getAuxLossWeight().convertToDouble(), op.getGradPasses());
    auto lossType = op.getLoss().getType();
    auto passType = RankedTensorType::get({k}, b.getF32Type());
    auto combined =
        CombineLossesOp::create(b, loc, TypeRange{lossType, passType}, losses,
                                b.getDenseF64ArrayAttr(weights));

    // The function's result types follow a K override.
    if (combined.getPassLosses().getType() != op.getPassLosses().getType()) {
      for (OpOperand &use : op.getPassLosses().getUses())
        if (!isa<func::ReturnOp>(use.getOwner()))
          return op.emitOpError()
                 << "passes=" << k << " changes the pass_losses type, but it "
                 << "is used by " << use.getOwner()->getName();
    }
    op.getLoss().replaceAllUsesWith(combined.getLoss());
    op.getPassLosses().replaceAllUsesWith(combined.getPassLosses());
    op.erase();
    if (auto fn = combined->getParentOfType<func::FuncOp>()) {
      auto ret = cast<func::ReturnOp>(fn.getBody().back().getTerminator());
      fn.setFunctionType(FunctionType::get(fn.getContext(),
                                           fn.getArgumentTypes(),
                                           ret.getOperandTypes()));
      if (passes > 0)
        fn->setAttr("fbt.passes", b.getI64IntegerAttr(k));
    }
    return success();
  }
};
} // namespace
