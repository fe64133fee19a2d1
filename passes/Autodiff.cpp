//===- Autodiff.cpp - reverse-mode differentiation of a training step -----===//
//
// Walks a training step's straight-line body backwards from the loss. Each
// op's gradient rule (DifferentiableOpInterface) turns the gradients of its
// results into gradients of its operands; a value used several times (the
// tied embedding, weights shared by every pass, a carried state feeding the
// next pass) has its contributions summed with fbt.add. The step then also
// returns one gradient per parameter, in parameter order.
//
//===----------------------------------------------------------------------===//

#include "dialect/FbtOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::fbt {
#define GEN_PASS_DEF_FBTAUTODIFF
#include "passes/Passes.h.inc"
} // namespace mlir::fbt

using namespace mlir;
using namespace mlir::fbt;

namespace {
Value splat(OpBuilder &b, Location loc, Type type, double v) {
  auto t = cast<RankedTensorType>(type);
  auto attr = DenseElementsAttr::get(
      t, FloatAttr::get(t.getElementType(), v).getValue());
  return arith::ConstantOp::create(b, loc, t, attr);
}

LogicalResult differentiate(func::FuncOp fn) {
  Block &body = fn.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  if (ret.getNumOperands() == 0 ||
      cast<ShapedType>(ret.getOperand(0).getType()).getRank() != 0)
    return fn.emitOpError() << "a training step must return its scalar loss "
                               "first";

  OpBuilder b(ret);
  Location loc = fn.getLoc();
  DenseMap<Value, Value> grads;
  auto accumulate = [&](Value v, Value g) {
    auto [it, inserted] = grads.try_emplace(v, g);
    if (!inserted)
      it->second = AddOp::create(b, loc, g.getType(), it->second, g);
  };
  accumulate(ret.getOperand(0), splat(b, loc, ret.getOperand(0).getType(), 1.0));

  SmallVector<Operation *> forward;
  for (Operation &op : body.without_terminator())
    forward.push_back(&op);
  for (Operation *op : llvm::reverse(forward)) {
    SmallVector<Value> resultGrads;
    bool any = false;
    for (Value r : op->getResults()) {
      resultGrads.push_back(grads.lookup(r));
      any |= bool(resultGrads.back());
    }
    if (!any)
      continue;
    if (op->hasTrait<OpTrait::ConstantLike>())
      continue;
    auto rule = dyn_cast<DifferentiableOpInterface>(op);
    if (!rule)
      return op->emitOpError()
             << "is on the gradient path of the loss and has no gradient "
                "rule (fbt-autodiff)";
    SmallVector<Value> operandGrads;
    if (failed(rule.buildGradients(b, resultGrads, operandGrads)))
      return failure();
    assert(operandGrads.size() == op->getNumOperands() &&
           "a gradient rule returns one entry per operand");
    for (auto [operand, g] : llvm::zip(op->getOperands(), operandGrads))
      if (g)
        accumulate(operand, g);
  }

  // One gradient per parameter, zeros for one the loss does not reach (the
  // feedback weights of a single-pass step).
  SmallVector<Value> results(ret.getOperands());
  SmallVector<Attribute> names;
  for (BlockArgument arg : fn.getArguments()) {
    if (!fn.getArgAttr(arg.getArgNumber(), "fbt.param"))
      continue;
    Value g = grads.lookup(arg);
    results.push_back(g ? g : splat(b, loc, arg.getType(), 0.0));
    auto name = fn.getArgAttrOfType<StringAttr>(arg.getArgNumber(), "fbt.name");
    names.push_back(b.getStringAttr("grad." + (name ? name.str()
                                                    : std::to_string(arg.getArgNumber()))));
  }
  SmallVector<DictionaryAttr> resultAttrs;
  for (unsigned i = 0; i < ret.getNumOperands(); ++i)
    resultAttrs.push_back(fn.getResultAttrDict(i));
  for (Attribute name : names)
    resultAttrs.push_back(
        b.getDictionaryAttr(b.getNamedAttr("fbt.name", name)));
  func::ReturnOp::create(b, ret.getLoc(), results);
  ret.erase();
  fn.setFunctionType(FunctionType::get(fn.getContext(), fn.getArgumentTypes(),
                                       TypeRange(ValueRange(results))));
  fn.setAllResultAttrs(resultAttrs);
  fn->setAttr("fbt.differentiated", b.getUnitAttr());
  return success();
}

struct Autodiff : fbt::impl::FbtAutodiffBase<Autodiff> {
  using Base::Base;
  void runOnOperation() override {
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      auto step = fn->getAttrOfType<StringAttr>("fbt.step");
      if (!step || step.getValue() != "train" ||
          fn->hasAttr("fbt.differentiated"))
        continue;
      if (!fn.getBody().hasOneBlock())
        return fn.emitOpError() << "fbt-autodiff needs a single-block body",
               signalPassFailure();
      bool nested = false;
      fn.walk([&](MultipassOp) { nested = true; });
      if (nested) {
        fn.emitOpError() << "still holds fbt.multipass: run "
                            "fbt-expand-multipass before fbt-autodiff";
        return signalPassFailure();
      }
      if (failed(differentiate(fn)))
        return signalPassFailure();
    }
  }
};
} // namespace
