//===- FbtOps.cpp - fbt op verifiers --------------------------------------===//
//
// Every verifier names the offending operand and the shape it expected, so a
// frontend bug or a hand-written test reads like a type error, not a crash
// further down the pipeline. Dynamic dimensions (`?`) match anything.
//
//===----------------------------------------------------------------------===//

#include "dialect/FbtOps.h"
#include "dialect/TruncatedPasses.h"
#include "runtime/format/WeightNames.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::fbt;

#include "dialect/FbtEnums.cpp.inc"
#include "dialect/FbtInterfaces.cpp.inc"

#define GET_OP_CLASSES
#include "dialect/FbtOps.cpp.inc"

namespace {
constexpr int64_t kDyn = ShapedType::kDynamic;

std::string shapeStr(ArrayRef<int64_t> shape) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << "[";
  llvm::interleaveComma(shape, os, [&](int64_t d) {
    if (d == kDyn)
      os << "?";
    else
      os << d;
  });
  os << "]";
  return s;
}

ArrayRef<int64_t> shapeOf(Value v) {
  return cast<RankedTensorType>(v.getType()).getShape();
}

bool dimsMatch(int64_t a, int64_t b) { return a == kDyn || b == kDyn || a == b; }

bool shapesMatch(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  return a.size() == b.size() &&
         llvm::all_of(llvm::zip(a, b), [](auto p) {
           return dimsMatch(std::get<0>(p), std::get<1>(p));
         });
}

/// "operand #1 ('scale')" or "result ('result')": where the problem is.
std::string label(Operation *op, Value v, StringRef name) {
  for (OpOperand &use : op->getOpOperands())
    if (use.get() == v)
      return ("operand #" + Twine(use.getOperandNumber()) + " ('" + name + "')").str();
  return ("result ('" + name + "')").str();
}

/// Checks `v` has exactly `expected` (with `?` wildcards) and says why if not.
LogicalResult expectShape(Operation *op, Value v, StringRef name,
                          ArrayRef<int64_t> expected, StringRef why) {
  if (shapesMatch(shapeOf(v), expected))
    return success();
  return op->emitOpError() << label(op, v, name) << " must have shape "
                           << shapeStr(expected) << " (" << why << "), got "
                           << shapeStr(shapeOf(v));
}

LogicalResult expectRank(Operation *op, Value v, StringRef name, int64_t rank,
                         StringRef layout) {
  if ((int64_t)shapeOf(v).size() == rank)
    return success();
  return op->emitOpError() << label(op, v, name) << " must be rank " << rank
                           << " " << layout << ", got " << shapeStr(shapeOf(v));
}

LogicalResult expectMinRank(Operation *op, Value v, StringRef name,
                            int64_t rank, StringRef layout) {
  if ((int64_t)shapeOf(v).size() >= rank)
    return success();
  return op->emitOpError() << label(op, v, name) << " must have rank >= "
                           << rank << " " << layout << ", got "
                           << shapeStr(shapeOf(v));
}

/// The float tensors among `values` share one element type.
LogicalResult expectSameFloatType(Operation *op, ArrayRef<Value> values) {
  Type first;
  for (Value v : values) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t || !isa<FloatType>(t.getElementType()))
      continue;
    if (!first) {
      first = t.getElementType();
      continue;
    }
    if (t.getElementType() != first)
      return op->emitOpError()
             << "float operands and results must share one element type; got "
             << first << " and " << t.getElementType();
  }
  return success();
}

/// All float operands and results of `op` share one element type.
LogicalResult expectSameFloatType(Operation *op) {
  SmallVector<Value> all(op->getOperands());
  llvm::append_range(all, op->getResults());
  return expectSameFloatType(op, all);
}

/// Heads split the width evenly (and, for RoPE, into even halves).
LogicalResult expectHeads(Operation *op, int64_t width, int64_t heads,
                          bool needEvenHeadDim) {
  if (heads < 1)
    return op->emitOpError() << "num_heads must be >= 1, got " << heads;
  if (width == kDyn)
    return success();
  if (width % heads != 0)
    return op->emitOpError() << "width " << width
                             << " is not divisible by num_heads " << heads;
  if (needEvenHeadDim && (width / heads) % 2 != 0)
    return op->emitOpError() << "head dim " << width / heads
                             << " must be even for RoPE";
  return success();
}

/// Doubles in diagnostics read as the user wrote them ("-0.5", not "-5.0e-01").
std::string num(double d) { return llvm::formatv("{0}", d).str(); }

SmallVector<int64_t> withLast(ArrayRef<int64_t> shape, int64_t last) {
  SmallVector<int64_t> s(shape);
  s.back() = last;
  return s;
}
} // namespace

//===----------------------------------------------------------------------===//
// Embedding and head
//===----------------------------------------------------------------------===//

LogicalResult EmbeddingOp::verify() {
  if (failed(expectSameFloatType(*this)) ||
      failed(expectRank(*this, getTable(), "table", 2, "[V, D]")))
    return failure();
  SmallVector<int64_t> out(shapeOf(getIds()));
  out.push_back(shapeOf(getTable())[1]);
  return expectShape(*this, getResult(), "result", out, "ids shape + [D]");
}

LogicalResult LMHeadOp::verify() {
  if (failed(expectSameFloatType(*this)) ||
      failed(expectRank(*this, getTable(), "table", 2, "[V, D]")) ||
      failed(expectMinRank(*this, getInput(), "input", 1, "[..., D]")))
    return failure();
  ArrayRef<int64_t> table = shapeOf(getTable());
  if (failed(expectShape(*this, getInput(), "input",
                         withLast(shapeOf(getInput()), table[1]),
                         "last dim is the table width D")))
    return failure();
  return expectShape(*this, getResult(), "result",
                     withLast(shapeOf(getInput()), table[0]), "[..., V]");
}

//===----------------------------------------------------------------------===//
// Transformer primitives
//===----------------------------------------------------------------------===//

/// What rmsnorm and normalize share: one float type, rows of [..., D], and
/// an epsilon > 0.
static LogicalResult verifyRowNorm(Operation *op, Value input, APFloat epsilon) {
  if (failed(expectSameFloatType(op)) ||
      failed(expectMinRank(op, input, "input", 1, "[..., D]")))
    return failure();
  if (epsilon.convertToDouble() <= 0)
    return op->emitOpError() << "epsilon must be > 0, got "
                             << num(epsilon.convertToDouble());
  return success();
}

LogicalResult RMSNormOp::verify() {
  if (failed(verifyRowNorm(*this, getInput(), getEpsilon())))
    return failure();
  int64_t d = shapeOf(getInput()).back();
  if (failed(expectShape(*this, getScale(), "scale", {d},
                         "the last dim of the input")))
    return failure();
  return expectShape(*this, getResult(), "result", shapeOf(getInput()),
                     "same as the input");
}

LogicalResult NormalizeOp::verify() {
  if (failed(verifyRowNorm(*this, getInput(), getEpsilon())))
    return failure();
  return expectShape(*this, getResult(), "result", shapeOf(getInput()),
                     "same as the input");
}

LogicalResult MatmulOp::verify() {
  if (failed(expectSameFloatType(*this)) ||
      failed(expectMinRank(*this, getInput(), "input", 1, "[..., K]")) ||
      failed(expectRank(*this, getWeight(), "weight", 2, "[N, K]")))
    return failure();
  ArrayRef<int64_t> w = shapeOf(getWeight());
  if (failed(expectShape(*this, getWeight(), "weight",
                         {kDyn, shapeOf(getInput()).back()},
                         "[N, K] with K the last dim of the input")))
    return failure();
  return expectShape(*this, getResult(), "result",
                     withLast(shapeOf(getInput()), w[0]), "[..., N]");
}

LogicalResult RopeOp::verify() {
  if (failed(expectSameFloatType(*this)) ||
      failed(expectRank(*this, getInput(), "input", 3, "[B, T, D]")))
    return failure();
  ArrayRef<int64_t> x = shapeOf(getInput());
  if (failed(expectHeads(*this, x[2], getNumHeads(), /*even=*/true)))
    return failure();
  if (getTheta().convertToDouble() <= 0)
    return emitOpError() << "theta must be > 0, got "
                         << num(getTheta().convertToDouble());
  double scale = getPositionScale().convertToDouble();
  if (!(scale > 0 && scale <= 1))
    return emitOpError() << "position_scale must be in (0, 1], got " << num(scale);
  if (getPositions() &&
      failed(expectShape(*this, getPositions(), "positions", {x[0], x[1]},
                         "[B, T] of the input")))
    return failure();
  return expectShape(*this, getResult(), "result", x, "same as the input");
}

/// A KV cache's element type against the f32 (or bf16) values it holds:
/// the same, or f16 (a narrower cache, widened as it is read).
LogicalResult expectCacheType(Operation *op, Value cache, StringRef name, Value of) {
  Type element = cast<RankedTensorType>(cache.getType()).getElementType();
  Type value = cast<RankedTensorType>(of.getType()).getElementType();
  if (element == value || element.isF16())
    return success();
  return op->emitOpError() << "operand '" << name << "' must hold " << value
                           << " or f16, not " << element;
}

LogicalResult AttentionOp::verify() {
  // The keys and values may be f16, as an f16 KV cache stores them.
  if (failed(expectSameFloatType(getOperation(), {getQuery(), getResult()})) ||
      failed(expectSameFloatType(getOperation(), {getKey(), getValue()})) ||
      failed(expectCacheType(*this, getKey(), "key", getQuery())) ||
      failed(expectRank(*this, getQuery(), "query", 3, "[B, T, D]")) ||
      failed(expectRank(*this, getKey(), "key", 3, "[B, S, D]")))
    return failure();
  ArrayRef<int64_t> q = shapeOf(getQuery());
  ArrayRef<int64_t> k = shapeOf(getKey());
  if (failed(expectHeads(*this, q[2], getNumHeads(), /*even=*/false)))
    return failure();
  if (getQueryRows() && !getQueryPositions())
    return emitOpError() << "query_rows needs query_positions (a query reads "
                            "another row only against a KV cache)";
  int64_t s = getQueryPositions() ? k[1] : q[1];
  // With query_rows a query picks its row: the keys' rows are the cache's.
  int64_t rows = getQueryRows() ? kDyn : q[0];
  StringRef why = getQueryRows() ? "[R, S, D] with D of the query"
                  : getQueryPositions()
                      ? "[B, S, D] with B, D of the query"
                      : "[B, T, D] like the query: without query_positions "
                        "attention is causal over one sequence";
  if (failed(expectShape(*this, getKey(), "key", {rows, s, q[2]}, why)) ||
      failed(expectShape(*this, getValue(), "value", shapeOf(getKey()),
                         "same as the key")))
    return failure();
  if (getQueryPositions() &&
      failed(expectShape(*this, getQueryPositions(), "query_positions",
                         {q[0], q[1]}, "[B, T] of the query")))
    return failure();
  if (getQueryRows() &&
      failed(expectShape(*this, getQueryRows(), "query_rows", {q[0], q[1]},
                         "[B, T] of the query")))
    return failure();
  return expectShape(*this, getResult(), "result", q, "same as the query");
}

LogicalResult KVWriteOp::verify() {
  // An f16 cache takes f32 updates, rounded as they are written.
  if (failed(expectSameFloatType(getOperation(), {getCache(), getResult()})) ||
      failed(expectCacheType(*this, getCache(), "cache", getUpdate())) ||
      failed(expectRank(*this, getCache(), "cache", 3, "[B, S, D]")) ||
      failed(expectRank(*this, getUpdate(), "update", 3, "[B, T, D]")))
    return failure();
  ArrayRef<int64_t> c = shapeOf(getCache());
  ArrayRef<int64_t> u = shapeOf(getUpdate());
  if (!getPositions() && u[1] != kDyn && c[1] != kDyn && u[1] > c[1])
    return emitOpError() << "operand #1 ('update') has " << u[1]
                         << " positions, more than the cache's " << c[1];
  if (getRows() && !getPositions())
    return emitOpError() << "rows needs positions";
  if (failed(expectShape(*this, getUpdate(), "update",
                         {getRows() ? kDyn : c[0], kDyn, c[2]},
                         getRows() ? "[N, T, D] with D of the cache"
                                   : "[B, T, D] with B, D of the cache")) ||
      (getPositions() &&
       failed(expectShape(*this, getPositions(), "positions", {u[0], u[1]},
                          "[B, T] of the update"))) ||
      (getRows() && failed(expectShape(*this, getRows(), "rows", {u[0], u[1]},
                                       "[B, T] of the update"))))
    return failure();
  return expectShape(*this, getResult(), "result", c, "same as the cache");
}

LogicalResult SwiGLUOp::verify() {
  if (failed(expectSameFloatType(*this)) ||
      failed(expectShape(*this, getUp(), "up", shapeOf(getGate()),
                         "same as the gate")))
    return failure();
  return expectShape(*this, getResult(), "result", shapeOf(getGate()),
                     "same as the gate");
}

LogicalResult ResidualOp::verify() {
  if (failed(expectSameFloatType(*this)) ||
      failed(expectShape(*this, getBranch(), "branch", shapeOf(getStream()),
                         "same as the stream")))
    return failure();
  return expectShape(*this, getResult(), "result", shapeOf(getStream()),
                     "same as the stream");
}

LogicalResult GatherPositionsOp::verify() {
  if (failed(expectSameFloatType(*this)) ||
      failed(expectRank(*this, getInput(), "input", 3, "[B, T, D]")))
    return failure();
  ArrayRef<int64_t> x = shapeOf(getInput());
  if (failed(expectRank(*this, getIndex(), "index", 1, "[B]")))
    return failure();
  // One input row serves every index (a mixed batch's tokens).
  int64_t b = x[0] == 1 ? shapeOf(getIndex())[0] : x[0];
  if (failed(expectShape(*this, getIndex(), "index", {b},
                         "[B] of the input, or any [B] for an input of one row")))
    return failure();
  return expectShape(*this, getResult(), "result", {b, 1, x[2]}, "[B, 1, D]");
}

//===----------------------------------------------------------------------===//
// The feedback path
//===----------------------------------------------------------------------===//

LogicalResult FeedbackOp::verify() {
  if (failed(expectSameFloatType(*this)) ||
      failed(expectRank(*this, getEmbedding(), "embedding", 3, "[B, T, D]")))
    return failure();
  ArrayRef<int64_t> e = shapeOf(getEmbedding());
  int64_t d = e[2];
  if (failed(expectShape(*this, getState(), "state", e,
                         "same as the embedding")))
    return failure();

  SmallVector<std::pair<StringRef, SmallVector<int64_t>>> want;
  switch (getFusion()) {
  case FusionKind::glu:
    want = {{"W_U", {d, d}}, {"W_G", {d, d}}};
    break;
  case FusionKind::add:
    want = {{"W_U", {d, d}}};
    break;
  case FusionKind::concat:
    want = {{"W", {d, d == kDyn ? kDyn : 2 * d}}};
    break;
  }
  if (getWeights().size() != want.size())
    return emitOpError() << "fusion '" << stringifyFusionKind(getFusion())
                         << "' takes " << want.size() << " weight(s), got "
                         << getWeights().size();
  for (auto [w, spec] : llvm::zip(getWeights(), want))
    if (failed(expectShape(*this, w, spec.first, spec.second,
                           "the feedback weight of this fusion")))
      return failure();
  return expectShape(*this, getResult(), "result", e, "same as the embedding");
}

LogicalResult ShiftRightOp::verify() {
  if (failed(expectSameFloatType(*this)) ||
      failed(expectMinRank(*this, getInput(), "input", 2, "[B, T, ...]")))
    return failure();
  return expectShape(*this, getResult(), "result", shapeOf(getInput()),
                     "same as the input");
}

LogicalResult FeedbackMaskOp::verify() {
  if (failed(expectRank(*this, getIds(), "ids", 2, "[B, T]")))
    return failure();
  if (getPrefixMixin() && !getSeed())
    return emitOpError() << "prefix_mixin draws prefix lengths and needs a "
                            "seed operand";
  if ((int64_t)getBosTokenId() < 0)
    return emitOpError() << "bos_token_id must be >= 0, got "
                         << (int64_t)getBosTokenId();
  return expectShape(*this, getResult(), "result", shapeOf(getIds()),
                     "[B, T] of the ids");
}

LogicalResult JitterOp::verify() {
  if (failed(expectSameFloatType(*this)))
    return failure();
  if (getEpsilon().convertToDouble() < 0)
    return emitOpError() << "epsilon must be >= 0, got "
                         << num(getEpsilon().convertToDouble());
  if ((int64_t)getStream() < 0)
    return emitOpError() << "stream must be >= 0, got " << (int64_t)getStream();
  return expectShape(*this, getResult(), "result", shapeOf(getInput()),
                     "same as the input");
}

LogicalResult WhereOp::verify() {
  if (failed(expectSameFloatType(*this)) ||
      failed(expectRank(*this, getOnTrue(), "on_true", 3, "[B, T, D]")))
    return failure();
  ArrayRef<int64_t> x = shapeOf(getOnTrue());
  if (failed(expectShape(*this, getOnFalse(), "on_false", x,
                         "same as on_true")) ||
      failed(expectShape(*this, getMask(), "mask", {x[0], x[1]},
                         "[B, T] of on_true")))
    return failure();
  return expectShape(*this, getResult(), "result", x, "same as on_true");
}

//===----------------------------------------------------------------------===//
// Objective
//===----------------------------------------------------------------------===//

LogicalResult NTPLossOp::verify() {
  if (failed(expectRank(*this, getLogits(), "logits", 3, "[B, T, V]")))
    return failure();
  ArrayRef<int64_t> l = shapeOf(getLogits());
  return expectShape(*this, getTargets(), "targets", {l[0], l[1]},
                     "[B, T] of the logits");
}

LogicalResult MultipassOp::verify() {
  int64_t k = getNumPasses();
  if (k < 1)
    return emitOpError() << "num_passes must be >= 1, got " << k;
  double lambda = getAuxLossWeight().convertToDouble();
  if (!(lambda >= 0) || std::isinf(lambda))
    return emitOpError() << "aux_loss_weight must be finite and >= 0, got "
                         << num(lambda);
  if (getGradPasses() < 0)
    return emitOpError() << "grad_passes must be >= 0, got " << getGradPasses();
  if (failed(expectMinRank(*this, getInput(), "input", 2, "[B, T, ...]")))
    return failure();
  auto losses = cast<RankedTensorType>(getPassLosses().getType());
  if (!losses.getElementType().isF32())
    return emitOpError() << "result ('pass_losses') must hold f32, got "
                         << losses.getElementType();
  return expectShape(*this, getPassLosses(), "pass_losses", {k},
                     "[num_passes]");
}

SmallVector<double> MultipassOp::lossWeights(int64_t k, double lambda,
                                             int64_t gradPasses) {
  int64_t first = ::fbt::firstTrainedPass(k, gradPasses);
  SmallVector<double> w(k, 0.0);
  for (int64_t pass = first; pass <= k; ++pass)
    w[pass - 1] = lambda / double(k - first + 1);
  w[0] = 1.0;
  return w;
}

/// Checks a region's block arguments and what its fbt.yield returns.
static LogicalResult verifyRegion(MultipassOp op, Region &region,
                                  StringRef name, TypeRange args,
                                  TypeRange yields, StringRef meaning) {
  Block &block = region.front();
  if (block.getArgumentTypes() != args)
    return op.emitOpError() << "'" << name << "' region must take "
                            << args.size() << " argument(s) of type "
                            << args.front() << " (" << meaning << ")";
  auto yield = dyn_cast<YieldOp>(block.getTerminator());
  if (!yield)
    return op.emitOpError() << "'" << name
                            << "' region must end in fbt.yield";
  if (yield.getValues().getTypes() != yields) {
    auto diag = op.emitOpError() << "'" << name << "' region must yield (";
    llvm::interleaveComma(yields, diag);
    diag << ")";
    return diag;
  }
  return success();
}

LogicalResult MultipassOp::verifyRegions() {
  Type x = getInput().getType();
  auto loss = RankedTensorType::get({}, Float32Type::get(getContext()));
  if (failed(verifyRegion(*this, getBody(), "body", {x}, {x, loss},
                          "the pass input")))
    return failure();
  return verifyRegion(*this, getFeedback(), "feedback", {x, x}, {x},
                      "the plain input and the shifted states of the pass "
                      "before");
}

//===----------------------------------------------------------------------===//
// Arithmetic and gradient plumbing
//===----------------------------------------------------------------------===//

/// Ops whose operands (listed) and results all have one shape.
static LogicalResult verifySameShapes(Operation *op,
                                      ArrayRef<std::pair<Value, StringRef>> vs) {
  if (failed(expectSameFloatType(op)))
    return failure();
  ArrayRef<int64_t> first = shapeOf(vs.front().first);
  for (auto [v, name] : vs.drop_front())
    if (failed(expectShape(op, v, name, first,
                           ("same as '" + vs.front().second + "'").str())))
      return failure();
  for (Value r : op->getResults())
    if (failed(expectShape(op, r, "result", first,
                           ("same as '" + vs.front().second + "'").str())))
      return failure();
  return success();
}

LogicalResult AddOp::verify() {
  return verifySameShapes(*this, {{getLhs(), "lhs"}, {getRhs(), "rhs"}});
}

LogicalResult ScaleOp::verify() {
  return verifySameShapes(*this, {{getInput(), "input"}});
}

LogicalResult ConvertOp::verify() {
  return expectShape(*this, getResult(), "result", shapeOf(getInput()), "same as the input");
}

LogicalResult StopGradientOp::verify() {
  return verifySameShapes(*this, {{getInput(), "input"}});
}

LogicalResult ShiftLeftOp::verify() {
  if (failed(expectMinRank(*this, getInput(), "input", 2, "[B, T, ...]")))
    return failure();
  return verifySameShapes(*this, {{getInput(), "input"}});
}

LogicalResult CombineLossesOp::verify() {
  int64_t k = getLosses().size();
  if (k < 1)
    return emitOpError() << "needs at least one loss";
  if ((int64_t)getWeights().size() != k)
    return emitOpError() << "weights must have one entry per loss (" << k
                         << "), got " << getWeights().size();
  return expectShape(*this, getPassLosses(), "pass_losses", {k}, "[K]");
}

//===----------------------------------------------------------------------===//
// Gradients
//===----------------------------------------------------------------------===//

LogicalResult MatmulGradInputOp::verify() {
  if (failed(expectSameFloatType(*this)) ||
      failed(expectRank(*this, getWeight(), "weight", 2, "[N, K]")))
    return failure();
  ArrayRef<int64_t> w = shapeOf(getWeight());
  if (failed(expectShape(*this, getGrad(), "grad",
                         withLast(shapeOf(getGrad()), w[0]),
                         "[..., N] with N the weight's rows")))
    return failure();
  return expectShape(*this, getResult(), "result",
                     withLast(shapeOf(getGrad()), w[1]), "[..., K]");
}

LogicalResult MatmulGradWeightOp::verify() {
  if (failed(expectSameFloatType(*this)) ||
      failed(expectMinRank(*this, getGrad(), "grad", 1, "[..., N]")))
    return failure();
  ArrayRef<int64_t> g = shapeOf(getGrad()), x = shapeOf(getInput());
  if (failed(expectShape(*this, getInput(), "input", withLast(g, x.back()),
                         "[..., K] with the grad's leading dims")))
    return failure();
  return expectShape(*this, getResult(), "result", {g.back(), x.back()},
                     "[N, K]");
}

LogicalResult EmbeddingGradOp::verify() {
  if (failed(expectSameFloatType(*this)) ||
      failed(expectRank(*this, getResult(), "result", 2, "[V, D]")))
    return failure();
  SmallVector<int64_t> g(shapeOf(getIds()));
  g.push_back(shapeOf(getResult())[1]);
  return expectShape(*this, getGrad(), "grad", g, "ids shape + [D]");
}

LogicalResult RMSNormGradOp::verify() {
  if (failed(expectSameFloatType(*this)) ||
      failed(expectMinRank(*this, getInput(), "input", 1, "[..., D]")))
    return failure();
  ArrayRef<int64_t> x = shapeOf(getInput());
  if (failed(expectShape(*this, getGrad(), "grad", x, "same as the input")) ||
      failed(expectShape(*this, getScale(), "scale", {x.back()},
                         "the last dim of the input")) ||
      failed(expectShape(*this, getInputGrad(), "input_grad", x,
                         "same as the input")))
    return failure();
  return expectShape(*this, getScaleGrad(), "scale_grad", {x.back()},
                     "same as the scale");
}

LogicalResult NormalizeGradOp::verify() {
  if (failed(expectSameFloatType(*this)) ||
      failed(expectMinRank(*this, getInput(), "input", 1, "[..., D]")))
    return failure();
  ArrayRef<int64_t> x = shapeOf(getInput());
  if (failed(expectShape(*this, getGrad(), "grad", x, "same as the input")))
    return failure();
  return expectShape(*this, getInputGrad(), "input_grad", x,
                     "same as the input");
}

LogicalResult AttentionGradOp::verify() {
  if (failed(expectRank(*this, getQuery(), "query", 3, "[B, T, D]")) ||
      failed(expectHeads(*this, shapeOf(getQuery())[2], getNumHeads(), false)))
    return failure();
  return verifySameShapes(*this, {{getGrad(), "grad"},
                                  {getQuery(), "query"},
                                  {getKey(), "key"},
                                  {getValue(), "value"},
                                  {getOutput(), "output"}});
}

LogicalResult SwiGLUGradOp::verify() {
  return verifySameShapes(
      *this, {{getGrad(), "grad"}, {getGate(), "gate"}, {getUp(), "up"}});
}

LogicalResult WhereGradOp::verify() {
  if (failed(expectRank(*this, getGrad(), "grad", 3, "[B, T, D]")))
    return failure();
  ArrayRef<int64_t> g = shapeOf(getGrad());
  if (failed(expectShape(*this, getMask(), "mask", {g[0], g[1]},
                         "[B, T] of the grad")))
    return failure();
  for (Value r : getResults())
    if (failed(expectShape(*this, r, "result", g, "same as the grad")))
      return failure();
  return success();
}

LogicalResult NTPLossGradOp::verify() {
  if (failed(expectRank(*this, getLogits(), "logits", 3, "[B, T, V]")))
    return failure();
  ArrayRef<int64_t> l = shapeOf(getLogits());
  if (failed(expectShape(*this, getTargets(), "targets", {l[0], l[1]},
                         "[B, T] of the logits")))
    return failure();
  return expectShape(*this, getResult(), "result", l, "same as the logits");
}

LogicalResult FeedbackGradOp::verify() {
  if (failed(expectSameFloatType(*this)))
    return failure();
  ArrayRef<int64_t> e = shapeOf(getEmbedding());
  for (auto [v, name] : {std::pair<Value, StringRef>{getGrad(), "grad"},
                         {getState(), "state"},
                         {getEmbeddingGrad(), "embedding_grad"},
                         {getStateGrad(), "state_grad"}})
    if (failed(expectShape(*this, v, name, e, "same as the embedding")))
      return failure();
  if (getWeightGrads().size() != getWeights().size())
    return emitOpError() << "needs one weight gradient per weight ("
                         << getWeights().size() << "), got "
                         << getWeightGrads().size();
  for (auto [w, g] : llvm::zip(getWeights(), getWeightGrads()))
    if (failed(expectShape(*this, g, "weight_grads", shapeOf(w),
                           "same as its weight")))
      return failure();
  return success();
}

//===----------------------------------------------------------------------===//
// Fused feedback input, decomposition helpers, optimizer
//===----------------------------------------------------------------------===//

/// value, gate, embedding: [B, T, D]; mask: [B, T]; scale: [D].
static LogicalResult verifyGatedInput(Operation *op, Value value, Value gate,
                                      Value embedding, Value mask,
                                      Value scale) {
  if (failed(expectSameFloatType(op)) ||
      failed(expectRank(op, value, "value", 3, "[B, T, D]")))
    return failure();
  ArrayRef<int64_t> x = shapeOf(value);
  if (failed(expectShape(op, gate, "gate", x, "same as the value")) ||
      failed(expectShape(op, embedding, "embedding", x, "same as the value")) ||
      failed(expectShape(op, mask, "mask", {x[0], x[1]}, "[B, T] of the value")))
    return failure();
  return expectShape(op, scale, "scale", {x[2]}, "[D] of the value");
}

LogicalResult GatedInputNormOp::verify() {
  if (failed(verifyGatedInput(*this, getValue(), getGate(), getEmbedding(),
                              getMask(), getScale())))
    return failure();
  ArrayRef<int64_t> x = shapeOf(getValue());
  if (failed(expectShape(*this, getInput(), "input", x, "same as the value")))
    return failure();
  return expectShape(*this, getNormed(), "normed", x, "same as the value");
}

LogicalResult GatedInputNormGradOp::verify() {
  if (failed(verifyGatedInput(*this, getValue(), getGate(), getEmbedding(),
                              getMask(), getScale())))
    return failure();
  ArrayRef<int64_t> x = shapeOf(getValue());
  for (Value g : {getInputGrad(), getNormedGrad()})
    if (failed(expectShape(*this, g, "grad", x, "same as the value")))
      return failure();
  return expectShape(*this, getScaleGrad(), "scale_grad", {x[2]},
                     "same as the scale");
}

LogicalResult GluGateOp::verify() {
  return verifySameShapes(*this, {{getValue(), "value"}, {getGate(), "gate"}});
}

LogicalResult GluGateGradOp::verify() {
  return verifySameShapes(
      *this, {{getGrad(), "grad"}, {getValue(), "value"}, {getGate(), "gate"}});
}

LogicalResult ConcatOp::verify() {
  if (failed(expectSameFloatType(*this)) ||
      failed(expectMinRank(*this, getLhs(), "lhs", 1, "[..., A]")))
    return failure();
  ArrayRef<int64_t> a = shapeOf(getLhs()), b = shapeOf(getRhs());
  if (failed(expectShape(*this, getRhs(), "rhs", withLast(a, b.back()),
                         "the lhs's leading dims")))
    return failure();
  int64_t sum = a.back() == kDyn || b.back() == kDyn ? kDyn : a.back() + b.back();
  return expectShape(*this, getResult(), "result", withLast(a, sum),
                     "[..., A + B]");
}

LogicalResult SplitOp::verify() {
  if (failed(expectSameFloatType(*this)) ||
      failed(expectMinRank(*this, getInput(), "input", 1, "[..., 2N]")))
    return failure();
  ArrayRef<int64_t> x = shapeOf(getInput());
  if (x.back() != kDyn && x.back() % 2)
    return emitOpError() << "operand #0 ('input') must have an even last dim, "
                         << "got " << shapeStr(x);
  int64_t half = x.back() == kDyn ? kDyn : x.back() / 2;
  if (failed(expectShape(*this, getLhs(), "lhs", withLast(x, half),
                         "half of the input")))
    return failure();
  return expectShape(*this, getRhs(), "rhs", withLast(x, half),
                     "half of the input");
}

LogicalResult AdamWOp::verify() {
  if (failed(verifySameShapes(*this, {{getParam(), "param"},
                                      {getGrad(), "grad"},
                                      {getM(), "m"},
                                      {getV(), "v"}})))
    return failure();
  for (auto [name, v] : {std::pair<StringRef, double>{"beta1", getBeta1().convertToDouble()},
                         {"beta2", getBeta2().convertToDouble()}})
    if (!(v >= 0 && v < 1))
      return emitOpError() << name << " must be in [0, 1), got " << num(v);
  if (!(getEpsilon().convertToDouble() > 0))
    return emitOpError() << "epsilon must be > 0";
  if (!(getMaxGradNorm().convertToDouble() > 0))
    return emitOpError() << "max_grad_norm must be > 0";
  return success();
}

namespace {
/// What every collective checks: operands to reduce, one result and one
/// name (and shard, where it has them) per operand, of the operand's type.
LogicalResult verifyCollective(Operation *op, ValueRange inputs, ValueRange results,
                               ArrayAttr names, ArrayAttr shards, int64_t bucket) {
  if (inputs.empty())
    return op->emitOpError() << "has no operands";
  if (results.size() != inputs.size())
    return op->emitOpError() << "has " << inputs.size() << " operands but "
                             << results.size() << " results";
  for (auto [i, in, out] : llvm::enumerate(inputs, results))
    if (in.getType() != out.getType())
      return op->emitOpError() << "result " << i << " is " << out.getType()
                               << ", operand " << i << " is " << in.getType();
  if (names.size() != inputs.size())
    return op->emitOpError() << "names " << names.size() << " operands, it has "
                             << inputs.size();
  if (shards && shards.size() != inputs.size())
    return op->emitOpError() << "shards " << shards.size() << " operands, it has "
                             << inputs.size();
  if (shards)
    for (auto [i, s] : llvm::enumerate(shards.getAsValueRange<StringAttr>()))
      if (s.empty())
        return op->emitOpError() << "operand " << i << " belongs to no parameter";
  if (bucket < 0)
    return op->emitOpError() << "bucket must be >= 0, got " << bucket;
  return success();
}

} // namespace

LogicalResult AllReduceOp::verify() {
  return verifyCollective(*this, getInputs(), getResults(), getNames(), ArrayAttr(),
                          getBucket());
}

LogicalResult ReduceScatterOp::verify() {
  return verifyCollective(*this, getInputs(), getResults(), getNames(), getShards(),
                          getBucket());
}

LogicalResult AllGatherOp::verify() {
  return verifyCollective(*this, getInputs(), getResults(), getNames(), getShards(),
                          getBucket());
}

int64_t AllGatherOp::getTiedOperand(unsigned result) { return result; }

int64_t AccumulateSquaresOp::getTiedOperand(unsigned result) {
  return result == 0 ? 1 : -1; // acc
}

//===----------------------------------------------------------------------===//
// Kernel level
//===----------------------------------------------------------------------===//

namespace {
/// The checks quantized_matmul and dequantize share: a 2-D weight, scales
/// with int8 (one per group of 32 along a row) and none with bf16 or f32.
LogicalResult verifyNarrowWeight(Operation *op, Value weight, Value scales) {
  auto w = cast<RankedTensorType>(weight.getType());
  if (w.getRank() != 2)
    return op->emitOpError() << "weight must be a matrix [N, K], not " << w;
  bool int8 = w.getElementType().isInteger(8);
  if (int8 != bool(scales)) {
    if (int8)
      return op->emitOpError() << "an int8 weight needs scales";
    return op->emitOpError() << "a " << (w.getElementType().isBF16() ? "bf16" : "f32")
                             << " weight takes no scales";
  }
  if (!scales)
    return success();
  auto s = cast<RankedTensorType>(scales.getType());
  int64_t n = w.getDimSize(0), groups = ::fbt::weights::groupsOf(w.getDimSize(1));
  if (s.getRank() != 2 || s.getDimSize(0) != n || s.getDimSize(1) != groups)
    return op->emitOpError() << "scales must be [" << n << ", " << groups
                             << "] (one per group of 32 along a row), not " << s;
  return success();
}
} // namespace

namespace {
/// The checks of one product y = x @ W^T by a narrow weight: f32 in and
/// out, x's rows as long as W's, y as many rows of W's N. `which` is empty
/// for quantized_matmul, " #i" for a fused op's i-th weight and result.
LogicalResult verifyProduct(Operation *op, Value input, Value weight, Value result,
                            const std::string &which) {
  auto x = cast<RankedTensorType>(input.getType());
  auto w = cast<RankedTensorType>(weight.getType());
  auto y = cast<RankedTensorType>(result.getType());
  int64_t n = w.getDimSize(0), k = w.getDimSize(1);
  if (!x.getElementType().isF32() || !y.getElementType().isF32())
    return op->emitOpError() << "input and result" << which << " must be f32";
  if (x.getShape().back() != k)
    return op->emitOpError() << "input rows have " << x.getShape().back() << " elements, "
                             << (which.empty() ? "the weight" : "weight" + which) << "'s " << k;
  if (y.getShape().back() != n || y.getNumElements() / n != x.getNumElements() / k)
    return op->emitOpError() << "result" << which << " must be " << x.getNumElements() / k
                             << " rows of " << n << ", not " << y;
  return success();
}
} // namespace

LogicalResult QuantizedMatmulOp::verify() {
  if (failed(verifyNarrowWeight(*this, getWeight(), getScales())))
    return failure();
  if (getInt8Activations() && !getScales())
    return emitOpError() << "int8_activations needs int8 weights";
  return verifyProduct(*this, getInput(), getWeight(), getResult(), "");
}

LogicalResult QuantizedMatmulsOp::verify() {
  size_t n = getWeights().size();
  if (n < 2)
    return emitOpError() << "fuses two products or more, not " << n;
  if (getResults().size() != n)
    return emitOpError() << "has " << getResults().size() << " results for " << n
                         << " weights";
  if (!getScales().empty() && getScales().size() != n)
    return emitOpError() << "has " << getScales().size() << " scales for " << n
                         << " weights (one each, or none)";
  if (getInt8Activations() && getScales().empty())
    return emitOpError() << "int8_activations needs int8 weights";
  Type form = cast<RankedTensorType>(getWeights()[0].getType()).getElementType();
  for (size_t i = 0; i < n; ++i) {
    Value weight = getWeights()[i];
    if (failed(verifyNarrowWeight(*this, weight, getScales().empty() ? Value() : getScales()[i])))
      return failure();
    if (cast<RankedTensorType>(weight.getType()).getElementType() != form)
      return emitOpError() << "weights must share one form; #" << i << " is " << weight.getType();
    if (failed(verifyProduct(*this, getInput(), weight, getResults()[i],
                             " #" + std::to_string(i))))
      return failure();
  }
  return success();
}

LogicalResult DequantizeOp::verify() {
  if (failed(verifyNarrowWeight(*this, getWeight(), getScales())))
    return failure();
  auto w = cast<RankedTensorType>(getWeight().getType());
  auto y = cast<RankedTensorType>(getResult().getType());
  if (!y.getElementType().isF32() || y.getShape() != w.getShape())
    return emitOpError() << "result must be f32 of the weight's shape, not " << y;
  return success();
}

LogicalResult GemmOp::verify() {
  // The operands share one type; a bf16 GEMM may accumulate into an f32
  // result (bf16 storage keeps parameter gradients in f32).
  auto element = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getElementType();
  };
  Type in = element(getLhs()), out = element(getResult());
  if (element(getRhs()) != in)
    return emitOpError() << "operands must share one element type; got " << in
                         << " and " << element(getRhs());
  if (out != in && !(in.isBF16() && out.isF32()))
    return emitOpError() << "a " << in << " GEMM cannot produce " << out
                         << " (only bf16 operands may give an f32 result)";
  auto count = [](Value v) {
    return cast<RankedTensorType>(v.getType()).getNumElements();
  };
  int64_t m = getM(), n = getN(), k = getK();
  if (m < 1 || n < 1 || k < 1)
    return emitOpError() << "m, n and k must be >= 1";
  if (count(getLhs()) != m * k)
    return emitOpError() << "operand #0 ('lhs') holds " << count(getLhs())
                         << " elements, not m * k = " << m * k;
  if (count(getRhs()) != k * n)
    return emitOpError() << "operand #1 ('rhs') holds " << count(getRhs())
                         << " elements, not k * n = " << k * n;
  if (count(getResult()) != m * n)
    return emitOpError() << "result holds " << count(getResult())
                         << " elements, not m * n = " << m * n;
  return success();
}

LogicalResult
CallKernelOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto fn = symbols.lookupNearestSymbolFrom<func::FuncOp>(*this, getKernelAttr());
  if (!fn || !fn->hasAttr("fbt.kernel"))
    return emitOpError() << "'" << getKernel()
                         << "' does not name a kernel (func.func with "
                            "fbt.kernel)";
  unsigned want = getInputs().size() + getResults().size();
  if (fn.getNumArguments() != want)
    return emitOpError() << "kernel '" << getKernel() << "' takes "
                         << fn.getNumArguments() << " buffers, the call passes "
                         << want;
  return success();
}

LogicalResult CallKernelOp::verify() {
  std::optional<ArrayRef<int64_t>> tied = getTied();
  if (!tied)
    return success();
  if (tied->size() != getResults().size())
    return emitOpError() << "'tied' has " << tied->size()
                         << " entries; expected one per result ("
                         << getResults().size() << ")";
  for (auto [r, operand] : llvm::enumerate(*tied)) {
    if (operand == -1)
      continue;
    if (operand < 0 || operand >= (int64_t)getInputs().size())
      return emitOpError() << "result " << r << " is tied to operand " << operand
                           << ", which does not exist";
    if (getInputs()[operand].getType() != getResult(r).getType())
      return emitOpError() << "result " << r << " is tied to operand " << operand
                           << " of another type";
  }
  return success();
}

int64_t CallKernelOp::getTiedOperand(unsigned result) {
  std::optional<ArrayRef<int64_t>> tied = getTied();
  return tied && result < tied->size() ? (*tied)[result] : -1;
}

int64_t AdamWOp::getTiedOperand(unsigned result) {
  // new_param, new_m, new_v over param, m, v.
  static const int64_t operand[] = {0, 2, 3};
  return result < 3 ? operand[result] : -1;
}

int64_t KVWriteOp::getTiedOperand(unsigned result) {
  return result == 0 ? 0 : -1; // the cache
}

LogicalResult PackOp::verify() {
  return expectShape(*this, getResult(), "result",
                     {(int64_t)getInputs().size()}, "one slot per operand");
}
