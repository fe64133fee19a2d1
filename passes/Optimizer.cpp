//===- Optimizer.cpp - gradient clipping and AdamW as IR ------------------===//
//
// Turns a differentiated training step into the whole training step:
//   (params, batch, seed, m, v, lr, step)
//     -> (loss, pass_losses, grad_norm, params', m', v')
// Each updated value is marked with the argument it replaces (`fbt.updates`)
// so the runtime can keep parameters and moments in place.
//
//===----------------------------------------------------------------------===//

#include "dialect/FbtOps.h"
#include "passes/Passes.h"
#include "runtime/format/StepNames.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::fbt {
#define GEN_PASS_DEF_FBTOPTIMIZER
#include "passes/Passes.h.inc"
} // namespace mlir::fbt

using namespace mlir;
using namespace mlir::fbt;

namespace {
struct Optimizer : mlir::fbt::impl::FbtOptimizerBase<Optimizer> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> steps;
    for (auto fn : module.getOps<func::FuncOp>()) {
      auto step = fn->getAttrOfType<StringAttr>("fbt.step");
      if (step && step.getValue() == "train" &&
          fn->hasAttr("fbt.differentiated") && !fn->hasAttr("fbt.optimizer"))
        steps.push_back(fn);
    }
    for (func::FuncOp fn : steps) {
      if (keepGradientStep) {
        OpBuilder b(fn);
        b.setInsertionPointAfter(fn);
        auto copy = cast<func::FuncOp>(b.clone(*fn));
        copy.setSymName((fn.getSymName() + ::fbt::step::kGradsSuffix).str());
        copy->setAttr("fbt.step", b.getStringAttr("grads"));
      }
      if (failed(addOptimizer(fn)))
        return signalPassFailure();
    }
  }

  static std::string paramName(func::FuncOp fn, unsigned arg) {
    auto n = fn.getArgAttrOfType<StringAttr>(arg, "fbt.name");
    return n ? n.str() : std::to_string(arg);
  }
  static DictionaryAttr named(OpBuilder &b, StringRef name) {
    return b.getDictionaryAttr(b.getNamedAttr("fbt.name", b.getStringAttr(name)));
  }

  LogicalResult addOptimizer(func::FuncOp fn) {
    OpBuilder b(fn.getContext());
    Location loc = fn.getLoc();
    auto ret = cast<func::ReturnOp>(fn.getBody().front().getTerminator());

    SmallVector<unsigned> params;
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      if (fn.getArgAttr(i, "fbt.param"))
        params.push_back(i);
    unsigned numKept = ret.getNumOperands() - params.size();
    if (numKept != 2)
      return fn.emitOpError() << "fbt-optimizer expects (loss, pass_losses, "
                                 "one gradient per parameter), got "
                              << ret.getNumOperands() << " results for "
                              << params.size() << " parameters";
    ValueRange grads = ret.getOperands().drop_front(numKept);

    FailureOr<unsigned> firstMoment = addArguments(b, fn, params);
    if (failed(firstMoment))
      return failure();
    unsigned n = params.size();
    Value lr = fn.getArgument(*firstMoment + 2 * n);
    Value step = fn.getArgument(*firstMoment + 2 * n + 1);

    b.setInsertionPoint(ret);
    auto scalar = RankedTensorType::get({}, b.getF32Type());
    Value norm = GlobalNormOp::create(b, loc, scalar, grads);
    SmallVector<AdamWOp> updates;
    for (auto [i, p] : llvm::enumerate(params)) {
      Value param = fn.getArgument(p);
      bool decay = bool(fn.getArgAttr(p, "fbt.decay"));
      updates.push_back(AdamWOp::create(
          b, loc, param.getType(), param.getType(), param.getType(), param,
          grads[i], fn.getArgument(*firstMoment + i),
          fn.getArgument(*firstMoment + n + i), lr, step, norm,
          b.getF64FloatAttr(beta1), b.getF64FloatAttr(beta2),
          b.getF64FloatAttr(epsilon), b.getF64FloatAttr(decay ? weightDecay : 0.0),
          b.getF64FloatAttr(maxGradNorm)));
    }
    replaceReturn(b, fn, ret, params, *firstMoment, norm, updates);
    fn->setAttr("fbt.optimizer", b.getStringAttr("adamw"));
    return success();
  }

  /// New arguments: first and second moments per parameter, then lr and
  /// step. Returns the first moment's argument number.
  FailureOr<unsigned> addArguments(OpBuilder &b, func::FuncOp fn,
                                   ArrayRef<unsigned> params) {
    Location loc = fn.getLoc();
    auto scalar = RankedTensorType::get({}, b.getF32Type());
    SmallVector<unsigned> at;
    SmallVector<Type> types;
    SmallVector<DictionaryAttr> attrs;
    SmallVector<Location> locs;
    for (StringRef moment : {"adam_m.", "adam_v."})
      for (unsigned p : params) {
        at.push_back(fn.getNumArguments());
        types.push_back(fn.getArgument(p).getType());
        attrs.push_back(named(b, (moment + paramName(fn, p)).str()));
        locs.push_back(loc);
      }
    for (StringRef name : {"lr", "step"}) {
      at.push_back(fn.getNumArguments());
      types.push_back(scalar);
      attrs.push_back(named(b, name));
      locs.push_back(loc);
    }
    unsigned firstMoment = fn.getNumArguments();
    if (failed(fn.insertArguments(at, types, attrs, locs)))
      return fn.emitOpError() << "cannot add the optimizer's arguments";
    return firstMoment;
  }

  /// The step's results become (loss, pass_losses, grad_norm, params', m',
  /// v'), each update marked with the argument it replaces.
  void replaceReturn(OpBuilder &b, func::FuncOp fn, func::ReturnOp ret,
                     ArrayRef<unsigned> params, unsigned firstMoment, Value norm,
                     SmallVectorImpl<AdamWOp> &adam) {
    unsigned n = params.size();
    SmallVector<Value> results = {ret.getOperand(0), ret.getOperand(1), norm};
    SmallVector<DictionaryAttr> resultAttrs = {fn.getResultAttrDict(0),
                                               fn.getResultAttrDict(1),
                                               named(b, "grad_norm")};
    auto updates = [&](StringRef name, unsigned arg) {
      return b.getDictionaryAttr(
          {b.getNamedAttr("fbt.name", b.getStringAttr(name)),
           b.getNamedAttr("fbt.updates", b.getI64IntegerAttr(arg))});
    };
    for (auto [i, p] : llvm::enumerate(params)) {
      results.push_back(adam[i].getNewParam());
      resultAttrs.push_back(updates(paramName(fn, p), p));
    }
    for (auto [i, p] : llvm::enumerate(params)) {
      results.push_back(adam[i].getNewM());
      resultAttrs.push_back(updates("adam_m." + paramName(fn, p), firstMoment + i));
    }
    for (auto [i, p] : llvm::enumerate(params)) {
      results.push_back(adam[i].getNewV());
      resultAttrs.push_back(
          updates("adam_v." + paramName(fn, p), firstMoment + n + i));
    }
    func::ReturnOp::create(b, ret.getLoc(), results);
    ret.erase();
    fn.setFunctionType(FunctionType::get(fn.getContext(), fn.getArgumentTypes(),
                                         TypeRange(ValueRange(results))));
    fn.setAllResultAttrs(resultAttrs);
  }
};
} // namespace
