//===- InferenceWeights.cpp - inference steps read narrow weights ---------===//
//
// In every inference step (eval, prefill, decode: not the training steps,
// whose AdamW updates the f32 master weights), each library GEMM by a weight
// matrix, x @ W^T with W a parameter, reads W in the chosen form instead: a
// step input of its own (runtime/format/WeightNames.h), which the runtime
// fills from the parameter when it loads the model. A GEMM of few rows
// (decoding: the batch) becomes fbt.quantized_matmul, a generated kernel
// that dequantizes each weight as it streams it; a wider one (a prefill's
// prompt) dequantizes the weight into the arena and keeps its library GEMM,
// which is faster there than any one-row kernel. With int8 activations
// every product is a quantized_matmul, multiplying in integers at any width.
//
//===----------------------------------------------------------------------===//

#include "dialect/FbtOps.h"
#include "passes/Passes.h"
#include "runtime/format/WeightNames.h"

#include <map>

namespace mlir::fbt {
#define GEN_PASS_DEF_FBTINFERENCEWEIGHTS
#include "passes/Passes.h.inc"
} // namespace mlir::fbt

using namespace mlir;
using namespace mlir::fbt;

namespace {
struct InferenceWeights : mlir::fbt::impl::FbtInferenceWeightsBase<InferenceWeights> {
  using Base::Base;

  void runOnOperation() override {
    std::optional<::fbt::WeightForm> parsed = ::fbt::parseKind<::fbt::WeightForm>(weights);
    if (!parsed) {
      getOperation().emitError() << "fbt-inference-weights: weights must be one of "
                                 << ::fbt::kindNames<::fbt::WeightForm>() << ", not '"
                                 << weights << "'";
      return signalPassFailure();
    }
    form = *parsed;
    std::optional<::fbt::WeightForm> acts = ::fbt::parseKind<::fbt::WeightForm>(activations);
    if (!acts || *acts == ::fbt::WeightForm::BF16 ||
        (*acts == ::fbt::WeightForm::Int8 && form != ::fbt::WeightForm::Int8)) {
      getOperation().emitError() << "fbt-inference-weights: activations must be \"f32\", or "
                                    "\"int8\" with int8 weights, not '"
                                 << activations << "'";
      return signalPassFailure();
    }
    int8Activations = *acts == ::fbt::WeightForm::Int8;
    if (form == ::fbt::WeightForm::F32 && !f32Products)
      return;
    for (auto fn : getOperation().getOps<func::FuncOp>())
      if (isInferenceStep(fn) && failed(rewrite(fn)))
        return signalPassFailure();
  }

  static bool isInferenceStep(func::FuncOp fn) {
    auto kind = fn->getAttrOfType<StringAttr>("fbt.step");
    if (!kind)
      return false;
    auto k = ::fbt::parseKind<::fbt::StepKind>(kind.getValue().str());
    return k && *k != ::fbt::StepKind::Train && *k != ::fbt::StepKind::Grads;
  }

  /// The parameter `w` is, if it is one: its argument number.
  static std::optional<unsigned> parameter(func::FuncOp fn, Value w) {
    auto arg = dyn_cast<BlockArgument>(w);
    if (!arg || arg.getOwner() != &fn.getBody().front() ||
        !fn.getArgAttr(arg.getArgNumber(), "fbt.param"))
      return std::nullopt;
    auto t = cast<RankedTensorType>(w.getType());
    if (t.getRank() != 2 || !t.getElementType().isF32())
      return std::nullopt;
    return arg.getArgNumber();
  }

  LogicalResult rewrite(func::FuncOp fn) {
    std::map<unsigned, std::pair<Value, Value>> narrow; // parameter -> weight, scales
    SmallVector<GemmOp> gemms;
    fn.walk([&](GemmOp g) { gemms.push_back(g); });
    for (GemmOp gemm : gemms) {
      if (!gemm.getTransposeRhs() || gemm.getTransposeLhs())
        continue;
      std::optional<unsigned> p = parameter(fn, gemm.getRhs());
      if (!p)
        continue;
      // int8 activations: every product multiplies in integers, as
      // llama.cpp's Q8_0 does, so that a prompt's rows and a decode step's
      // round alike (the kernel quantizes a block of rows at a time).
      bool few = gemm.getM() <= gemvRows || int8Activations;
      // f32: the parameter itself is the weight, and only the few-row
      // products change, to the generated kernel (a GEMV at decode), which
      // streams W once where BLAS's GEMM of one row does not keep up.
      if (form == ::fbt::WeightForm::F32 && !few)
        continue;
      Value weight = gemm.getRhs(), scales;
      if (form != ::fbt::WeightForm::F32) {
        auto it = narrow.find(*p);
        if (it == narrow.end()) {
          FailureOr<std::pair<Value, Value>> inputs = addInputs(fn, *p);
          if (failed(inputs))
            return failure();
          it = narrow.insert({*p, *inputs}).first;
        }
        std::tie(weight, scales) = it->second;
      }
      OpBuilder b(gemm);
      if (few) {
        auto q = QuantizedMatmulOp::create(b, gemm.getLoc(), gemm.getType(), gemm.getLhs(),
                                           weight, scales, int8Activations);
        gemm.replaceAllUsesWith(q.getResult());
        gemm.erase();
        continue;
      }
      // One dequantized copy per GEMM, not per step: it lives only until
      // its GEMM has run, so the arena holds one at a time.
      auto wide = DequantizeOp::create(b, gemm.getLoc(), gemm.getRhs().getType(), weight,
                                       scales);
      gemm.getRhsMutable().assign(wide.getResult());
    }
    // A parameter the step now reads only narrow is no longer its input: the
    // plan's inputs then say what an inference step reads (fbt quantize
    // stores such a matrix narrow alone).
    llvm::BitVector unused(fn.getNumArguments());
    for (auto &[p, inputs] : narrow)
      if (fn.getArgument(p).use_empty())
        unused.set(p);
    return dropArguments(fn, unused);
  }

  /// Erases `fn`'s arguments in `erased`, renumbering the results'
  /// `fbt.updates` (the argument a result replaces: a cache) to match.
  static LogicalResult dropArguments(func::FuncOp fn, const llvm::BitVector &erased) {
    Builder b(fn.getContext());
    for (unsigned r = 0; r < fn.getNumResults(); ++r) {
      auto updates = fn.getResultAttrOfType<IntegerAttr>(r, "fbt.updates");
      if (!updates)
        continue;
      int64_t arg = updates.getInt();
      if (erased.test(arg))
        return fn.emitError() << "fbt-inference-weights: result #" << r
                              << " updates a parameter it reads narrow";
      int64_t before = 0;
      for (int64_t i = 0; i < arg; ++i)
        before += erased.test(i);
      fn.setResultAttr(r, "fbt.updates", b.getI64IntegerAttr(arg - before));
    }
    if (failed(fn.eraseArguments(erased)))
      return fn.emitError() << "fbt-inference-weights: cannot drop the f32 inputs it replaced";
    return success();
  }

  /// Appends parameter `p`'s inputs in the chosen form to `fn`.
  FailureOr<std::pair<Value, Value>> addInputs(func::FuncOp fn, unsigned p) {
    auto name = fn.getArgAttrOfType<StringAttr>(p, "fbt.name");
    if (!name)
      return fn.emitError() << "fbt-inference-weights: parameter #" << p << " has no fbt.name";
    auto t = cast<RankedTensorType>(fn.getArgument(p).getType());
    Builder b(fn.getContext());
    SmallVector<Type> types;
    if (form == ::fbt::WeightForm::Int8) {
      types.push_back(t.clone(b.getIntegerType(8)));
      types.push_back(RankedTensorType::get(
          {t.getDimSize(0), ::fbt::weights::groupsOf(t.getDimSize(1))}, b.getF16Type()));
    } else {
      types.push_back(t.clone(b.getBF16Type()));
    }
    std::vector<std::string> names = ::fbt::weights::inputsOf(form, name.str());
    SmallVector<Value> added;
    for (auto [type, input] : llvm::zip_equal(types, names)) {
      unsigned at = fn.getNumArguments();
      auto attrs = b.getDictionaryAttr(b.getNamedAttr("fbt.name", b.getStringAttr(input)));
      if (failed(fn.insertArgument(at, type, attrs, fn.getLoc())))
        return fn.emitError() << "fbt-inference-weights: cannot add input '" << input << "'";
      added.push_back(fn.getArgument(at));
    }
    return std::pair{added[0], added.size() > 1 ? added[1] : Value()};
  }

  ::fbt::WeightForm form = ::fbt::WeightForm::F32;
  bool int8Activations = false;
};
} // namespace
