//===- ModelBuilder.cpp - model spec to fbt IR ----------------------------===//
//
// The model math of DESIGN.md section 2, stated once in fbt ops. The three
// kinds of step share `layer()`, which differs only in where keys and values
// come from (the sequence itself, or a KV cache).
//
//===----------------------------------------------------------------------===//

#include "frontend/ModelBuilder.h"

#include "dialect/FbtOps.h"
#include "runtime/base/IgnoredTarget.h"
#include "runtime/format/StepNames.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringExtras.h"

using namespace mlir;
namespace ops = mlir::fbt;

namespace fbt {

namespace {

/// Parameter values of one function, looked up by role.
struct Params {
  Value embed, finalNorm;
  struct Layer {
    Value attnNorm, wq, wk, wv, wo, mlpNorm, wGate, wUp, wDown;
  };
  SmallVector<Layer> layers;
  SmallVector<Value> feedback;

  static Params bind(ValueRange args, int64_t numLayers) {
    Params p;
    unsigned i = 0;
    p.embed = args[i++];
    for (int64_t l = 0; l < numLayers; ++l) {
      Layer y;
      for (Value *v : {&y.attnNorm, &y.wq, &y.wk, &y.wv, &y.wo, &y.mlpNorm,
                       &y.wGate, &y.wUp, &y.wDown})
        *v = args[i++];
      p.layers.push_back(y);
    }
    p.finalNorm = args[i++];
    for (; i < args.size(); ++i)
      p.feedback.push_back(args[i]);
    return p;
  }
};

/// Where attention gets its keys and values.
struct KVSource {
  /// Decoding: positions [B, T] of the new tokens; null in training/prefill.
  Value positions;
  /// A mixed batch ([1, N] tokens of many sequences): each token's cache row.
  Value rows;
  /// Prefill and decoding: this layer's caches, updated in place (by value).
  Value *kCache = nullptr, *vCache = nullptr;
};

class ModelBuilder {
public:
  ModelBuilder(MLIRContext &ctx, const ModelSpec &spec, const BuildOptions &options)
      : spec(spec), options(options), b(&ctx),
        loc(NameLoc::get(b.getStringAttr(spec.name))), params(parameterList(spec)) {}

  OwningOpRef<ModuleOp> build() {
    OwningOpRef<ModuleOp> module = ModuleOp::create(loc, spec.name);
    setModelAttributes(*module);
    b.setInsertionPointToEnd(module->getBody());
    for (int64_t k : spec.scheduledPasses())
      buildPassesStep(k, /*eval=*/false);
    buildPassesStep(spec.feedback.fusion == Fusion::None ? 1 : ModelSpec::kEvalPasses,
                    /*eval=*/true);
    bool feedback = spec.feedback.fusion != Fusion::None;
    const int64_t bs = spec.inference.batchSize;
    buildPrefill(/*fused=*/false, bs);
    buildDecodeStep(/*feedback=*/feedback);
    if (feedback) {
      buildPrefill(/*fused=*/true, bs);
      buildDecodeStep(/*feedback=*/false);
    }
    // One row's prefill, for a sequence that joins a running batch: its
    // caches are that row's slice of the batch's, so the others keep theirs.
    if (bs > 1) {
      buildPrefill(/*fused=*/false, 1);
      if (feedback)
        buildPrefill(/*fused=*/true, 1);
    }
    // Shorter one-row prefills (prefill_row_t<T>), a quarter of the length
    // each down to 16 positions: a prompt runs the shortest that holds it,
    // so its cost follows its length, not max_prompt_length.
    for (int64_t t = spec.inference.maxPromptLength / 4; t >= 16; t /= 4) {
      buildPrefill(/*fused=*/false, 1, t);
      if (feedback)
        buildPrefill(/*fused=*/true, 1, t);
    }
    // Mixed batches (mixed_n<N>) of max_prompt_length tokens, a quarter, ..
    // while more than the batch: a server runs the running rows' next tokens
    // and the joining rows' prompt chunks in one step, the smallest that
    // holds them.
    if (bs > 1)
      for (int64_t n = spec.inference.maxPromptLength; n > bs; n /= 4)
        buildMixedStep(n, feedback);
    // Last, so a bundle compiled without them is what it was before.
    if (options.withStates) {
      buildPrefill(/*fused=*/false, bs, 0, /*states=*/true);
      if (feedback)
        buildPrefill(/*fused=*/true, bs, 0, /*states=*/true);
    }
    return module;
  }

private:
  const ModelSpec &spec;
  BuildOptions options;
  OpBuilder b;
  Location loc;
  std::vector<ParameterInfo> params;

  int64_t D() const { return spec.hiddenSize; }
  int64_t H() const { return spec.numAttentionHeads; }
  double depthScale() const { return spec.feedback.depthScaling; }

  RankedTensorType f32(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, b.getF32Type());
  }
  RankedTensorType i32(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, b.getI32Type());
  }

  void setModelAttributes(ModuleOp module) {
    auto i64 = [&](int64_t v) { return b.getI64IntegerAttr(v); };
    SmallVector<NamedAttribute> cfg = {
        b.getNamedAttr("vocab_size", i64(spec.vocabSize)),
        b.getNamedAttr("hidden_size", i64(spec.hiddenSize)),
        b.getNamedAttr("num_hidden_layers", i64(spec.numHiddenLayers)),
        b.getNamedAttr("num_attention_heads", i64(spec.numAttentionHeads)),
        b.getNamedAttr("intermediate_size", i64(spec.intermediateSize)),
        b.getNamedAttr("max_position_embeddings",
                       i64(spec.maxPositionEmbeddings)),
        b.getNamedAttr("bos_token_id", i64(spec.bosTokenId)),
        b.getNamedAttr("fusion", b.getStringAttr(kindName(spec.feedback.fusion))),
    };
    module->setAttr("fbt.model", b.getDictionaryAttr(cfg));
  }

  /// Starts a function whose first arguments are the parameters, followed by
  /// `inputs` (name, type). Returns the entry block's arguments.
  std::pair<func::FuncOp, SmallVector<Value>>
  startFunction(StringRef name, ArrayRef<std::pair<StringRef, Type>> inputs,
                ArrayRef<std::pair<std::string, Type>> results,
                StringRef step) {
    SmallVector<Type> argTypes, resultTypes;
    for (const ParameterInfo &p : params)
      argTypes.push_back(f32(p.shape));
    for (auto &in : inputs)
      argTypes.push_back(in.second);
    for (auto &r : results)
      resultTypes.push_back(r.second);

    auto fn = func::FuncOp::create(b, loc, name,
                                   b.getFunctionType(argTypes, resultTypes));
    fn->setAttr("fbt.step", b.getStringAttr(step));
    unsigned i = 0;
    for (const ParameterInfo &p : params) {
      fn.setArgAttr(i, "fbt.name", b.getStringAttr(p.name));
      if (p.decay)
        fn.setArgAttr(i, "fbt.decay", b.getUnitAttr());
      fn.setArgAttr(i++, "fbt.param", b.getUnitAttr());
    }
    for (auto &in : inputs)
      fn.setArgAttr(i++, "fbt.name", b.getStringAttr(in.first));
    for (auto [j, r] : llvm::enumerate(results)) {
      fn.setResultAttr(j, "fbt.name", b.getStringAttr(r.first));
      // A result named like an input replaces it (the KV caches, the state):
      // the runtime may keep it in place.
      for (auto [a, in] : llvm::enumerate(inputs))
        if (in.first == r.first)
          fn.setResultAttr(j, "fbt.updates",
                           b.getI64IntegerAttr(params.size() + a));
    }

    Block *entry = fn.addEntryBlock();
    b.setInsertionPointToStart(entry);
    return {fn, SmallVector<Value>(entry->getArguments())};
  }

  /// One pre-norm block: z + a*Attn(RMSNorm(z)), then + a*MLP(RMSNorm(.)).
  Value layer(Value z, const Params::Layer &w, KVSource kv) {
    auto x = cast<RankedTensorType>(z.getType());
    auto eps = b.getF64FloatAttr(spec.rmsNormEps);
    auto heads = b.getI64IntegerAttr(H());
    auto theta = b.getF64FloatAttr(spec.ropeScaling.theta(spec.ropeTheta, spec.headDim()));
    auto scale = b.getF64FloatAttr(depthScale());

    Value n = ops::RMSNormOp::create(b, loc, x, z, w.attnNorm, eps);
    Value q = ops::MatmulOp::create(b, loc, x, n, w.wq);
    Value k = ops::MatmulOp::create(b, loc, x, n, w.wk);
    Value v = ops::MatmulOp::create(b, loc, x, n, w.wv);
    auto positionScale = b.getF64FloatAttr(spec.ropeScaling.positionScale());
    q = ops::RopeOp::create(b, loc, x, q, kv.positions, heads, theta, UnitAttr(),
                            positionScale);
    k = ops::RopeOp::create(b, loc, x, k, kv.positions, heads, theta, UnitAttr(),
                            positionScale);

    Value attn;
    if (kv.kCache) {
      // An f16 cache: a prefill's attention reads the prompt's keys and
      // values rounded as the cache holds them (here, once), as a decode or
      // mixed step's reads them from the cache (kv_write rounds as it
      // stores): a prompt's tokens see the same keys by either road.
      Type stored = cast<RankedTensorType>(kv.kCache->getType()).getElementType();
      if (stored != x.getElementType() && !kv.positions) {
        auto narrow = RankedTensorType::get(x.getShape(), stored);
        k = ops::ConvertOp::create(b, loc, narrow, k);
        v = ops::ConvertOp::create(b, loc, narrow, v);
      }
      *kv.kCache = ops::KVWriteOp::create(b, loc, kv.kCache->getType(),
                                          *kv.kCache, k, kv.positions, kv.rows);
      *kv.vCache = ops::KVWriteOp::create(b, loc, kv.vCache->getType(),
                                          *kv.vCache, v, kv.positions, kv.rows);
    }
    if (kv.positions) // decoding: attend over the cache
      attn = ops::AttentionOp::create(b, loc, x, q, *kv.kCache, *kv.vCache,
                                      kv.positions, kv.rows, heads);
    else // training and prefill: causal over the sequence itself
      attn = ops::AttentionOp::create(b, loc, x, q, k, v, Value(), Value(), heads);
    Value o = ops::MatmulOp::create(b, loc, x, attn, w.wo);
    z = ops::ResidualOp::create(b, loc, x, z, o, scale);

    SmallVector<int64_t> hidden(x.getShape());
    hidden.back() = spec.intermediateSize;
    auto ht = f32(hidden);
    Value n2 = ops::RMSNormOp::create(b, loc, x, z, w.mlpNorm, eps);
    Value g = ops::MatmulOp::create(b, loc, ht, n2, w.wGate);
    Value u = ops::MatmulOp::create(b, loc, ht, n2, w.wUp);
    Value s = ops::SwiGLUOp::create(b, loc, ht, g, u);
    Value m = ops::MatmulOp::create(b, loc, x, s, w.wDown);
    return ops::ResidualOp::create(b, loc, x, z, m, scale);
  }

  /// The stack; caches (one pair per layer) are updated when given.
  /// The layers over `z`; `residuals`, if given, gets each layer's input.
  Value stack(Value z, const Params &p, Value positions,
              MutableArrayRef<Value> kCaches, MutableArrayRef<Value> vCaches,
              Value rows = Value(), SmallVectorImpl<Value> *residuals = nullptr) {
    for (auto [l, w] : llvm::enumerate(p.layers)) {
      KVSource kv{positions, rows};
      if (!kCaches.empty()) {
        kv.kCache = &kCaches[l];
        kv.vCache = &vCaches[l];
      }
      if (residuals)
        residuals->push_back(z);
      z = layer(z, w, kv);
    }
    return z;
  }

  Value finalNorm(Value h, const Params &p) {
    return ops::RMSNormOp::create(b, loc, h.getType(), h, p.finalNorm,
                                  b.getF64FloatAttr(spec.rmsNormEps));
  }

  /// The head: the final norm of the top-layer states, and the logits.
  std::pair<Value, Value> head(Value h, const Params &p) {
    auto x = cast<RankedTensorType>(h.getType());
    Value n = finalNorm(h, p);
    SmallVector<int64_t> shape(x.getShape());
    shape.back() = spec.vocabSize;
    return {n, ops::LMHeadOp::create(b, loc, f32(shape), n, p.embed)};
  }

  /// The state a position carries to the next: h itself or its final norm.
  Value carried(Value h, Value normed) {
    return spec.feedback.state == StateSource::PostNorm ? normed : h;
  }

  Value normalize(Value v) {
    return ops::NormalizeOp::create(b, loc, v.getType(), v,
                                    b.getF64FloatAttr(spec.rmsNormEps));
  }

  /// The plain inputs: e, or norm(e) with input_norm.
  Value plainInputs(Value e) {
    return spec.feedback.inputNorm ? normalize(e) : e;
  }

  /// The fused input at a fed-back position, for the spec's fusion and
  /// recipe; `e` is the raw embedding, `plain` the plain input. With glu:
  ///   out_norm?([plain +] (W_U state_norm?(s)) * sigmoid(W_G gate_norm?(e)))
  /// (the gate reads `plain` when that is norm(e) already; `plain +` with
  /// token_residual).
  Value fuse(Value e, Value plain, Value s, const Params &p) {
    const FeedbackSpec &fb = spec.feedback;
    ops::FusionKind kind;
    Value token = plain;
    switch (fb.fusion) {
    case Fusion::None:
      return plain;
    case Fusion::Glu:
      kind = ops::FusionKind::glu;
      if (fb.gateNorm != fb.inputNorm)
        token = fb.gateNorm ? normalize(e) : e;
      break;
    case Fusion::Add:
      kind = ops::FusionKind::add;
      break;
    case Fusion::Concat:
      kind = ops::FusionKind::concat;
      break;
    }
    if (fb.stateNorm)
      s = normalize(s);
    Value u = ops::FeedbackOp::create(b, loc, e.getType(), token, s,
                                      p.feedback, kind);
    if (fb.tokenResidual && kind == ops::FusionKind::glu)
      u = ops::AddOp::create(b, loc, u.getType(), plain, u);
    return fb.outputNorm ? normalize(u) : u;
  }

  /// The inputs of a decoding step's tokens: plain, or, with a state,
  /// fused with it where feedbackOn is 1 (standard and soft rows, or a fused
  /// pass's prompt tokens, in one step).
  Value switchedInputs(RankedTensorType x, Value ids, const Params &p, Value state,
                       Value feedbackOn) {
    Value e = ops::EmbeddingOp::create(b, loc, x, p.embed, ids);
    Value u = plainInputs(e);
    if (!state)
      return u;
    return ops::WhereOp::create(b, loc, x, feedbackOn, fuse(e, u, state, p), u);
  }

  /// train_k<K>: the K-pass objective as training runs it (jitter, prefix
  /// mix-in, gradients later). eval_k<K>: the same K passes in inference
  /// mode, forward only: no jitter, fed back wherever decoding would (t >= 1
  /// outside document starts), pass_losses the per-pass validation losses.
  void buildPassesStep(int64_t k, bool eval) {
    const FeedbackSpec &fs = spec.feedback;
    const int64_t bs = spec.training.batchSize, t = spec.training.sequenceLength;
    auto x = f32({bs, t, D()});
    SmallVector<std::pair<StringRef, Type>> inputs = {
        {"input_ids", i32({bs, t})}, {"targets", i32({bs, t})}};
    if (!eval)
      inputs.push_back({"seed", b.getI64Type()});
    auto [fn, args] = startFunction(
        eval ? step::eval(k) : step::train(k), inputs,
        {{"loss", f32({})}, {"pass_losses", f32({k})}}, eval ? "eval" : "train");
    fn->setAttr("fbt.passes", b.getI64IntegerAttr(k));
    Params p = Params::bind(ValueRange(args).take_front(params.size()),
                            spec.numHiddenLayers);
    Value ids = args[params.size()], targets = args[params.size() + 1],
          seed = eval ? Value() : args[params.size() + 2];
    bool mixin = !eval && fs.prefixMixin;

    Value e = ops::EmbeddingOp::create(b, loc, x, p.embed, ids);
    Value plainIn = plainInputs(e);
    Value mask;
    if (k > 1)
      mask = ops::FeedbackMaskOp::create(
          b, loc, f32({bs, t}), ids, mixin ? seed : Value(),
          b.getI64IntegerAttr(spec.bosTokenId),
          mixin ? b.getUnitAttr() : UnitAttr());

    auto mp = ops::MultipassOp::create(
        b, loc, TypeRange{f32({}), f32({k})}, plainIn, b.getI64IntegerAttr(k),
        b.getF64FloatAttr(fs.auxLossWeight),
        fs.detachState ? b.getUnitAttr() : UnitAttr(),
        b.getI64IntegerAttr(eval ? 0 : spec.training.gradPasses));

    {
      OpBuilder::InsertionGuard guard(b);
      Block *body = b.createBlock(&mp.getBody(), {}, {x}, {loc});
      Value h = stack(body->getArgument(0), p, Value(), {}, {});
      auto [normed, logits] = head(h, p);
      Value ce = ops::NTPLossOp::create(b, loc, f32({}), logits, targets,
                                        b.getI64IntegerAttr(kIgnoredTarget));
      ops::YieldOp::create(b, loc, ValueRange{carried(h, normed), ce});

      Block *fb = b.createBlock(&mp.getFeedback(), {}, {x, x}, {loc, loc});
      Value plain = fb->getArgument(0), s = fb->getArgument(1);
      Value u = plain;
      if (mask) {
        if (!eval && fs.jitter > 0)
          s = ops::JitterOp::create(b, loc, x, s, seed,
                                    b.getF64FloatAttr(fs.jitter),
                                    b.getI64IntegerAttr(0));
        u = ops::WhereOp::create(b, loc, x, mask, fuse(e, plain, s, p), plain);
      }
      ops::YieldOp::create(b, loc, ValueRange{u});
    }
    func::ReturnOp::create(b, loc, mp.getResults());
    b.setInsertionPointAfter(fn);
  }

  /// The KV caches (step::kKeyCache + l, then step::kValueCache + l) as the
  /// last inputs and the last results of a step that reads and updates them.
  void addCaches(SmallVector<std::pair<StringRef, Type>> &inputs,
                 SmallVector<std::pair<std::string, Type>> &results, int64_t rows) {
    // f16: kv_write rounds the f32 keys and values into it, attention
    // widens them back as it reads.
    Type element = spec.inference.kvCache == CacheForm::F16 ? Type(b.getF16Type())
                                                            : Type(b.getF32Type());
    auto cache = RankedTensorType::get({rows, spec.inference.maxSequenceLength, D()}, element);
    if (cacheNames.empty())
      for (const char *kind : {step::kKeyCache, step::kValueCache})
        for (int64_t l = 0; l < spec.numHiddenLayers; ++l)
          cacheNames.push_back(kind + std::to_string(l));
    for (const std::string &name : cacheNames) {
      inputs.push_back({name, cache});
      results.push_back({name, cache});
    }
  }

  /// The cache arguments: the last 2L, keys then values.
  std::pair<SmallVector<Value>, SmallVector<Value>> caches(ArrayRef<Value> args) {
    int64_t l = spec.numHiddenLayers;
    ArrayRef<Value> tail = args.take_back(2 * l);
    return {SmallVector<Value>(tail.take_front(l)), SmallVector<Value>(tail.drop_front(l))};
  }

  std::vector<std::string> cacheNames; // outlives the StringRefs to it

  /// prefill: plain inputs. prefill_fused: one more pass of fused[n], whose
  /// input at t >= 1 fuses the token with the previous pass's state at t-1.
  /// Both write the caches from position 0 and return every position's
  /// state (the next fused pass's input) and the last position's logits.
  /// Over `bs` rows: the decode batch, or one row of it (prefill_row,
  /// prefill_fused_row); over `length` positions, by default the longest
  /// prompt (else prefill_row_t<length>, prefill_fused_row_t<length>).
  /// With `states` (prefill_states, prefill_fused_states) it also returns
  /// every layer's residual stream: residual.l, the input of block l, and
  /// residual.L, the top-layer state before the final norm.
  void buildPrefill(bool fused, int64_t bs, int64_t length = 0, bool states = false) {
    const int64_t t = length ? length : spec.inference.maxPromptLength;
    auto x = f32({bs, t, D()});
    SmallVector<std::pair<StringRef, Type>> inputs = {
        {"input_ids", i32({bs, t})}, {"last_positions", i32({bs})}};
    if (fused)
      inputs.push_back({"prev_states", x});
    SmallVector<std::pair<std::string, Type>> results = {
        {"logits", f32({bs, 1, spec.vocabSize})},
        {"state", f32({bs, 1, D()})},
        {"states", x}};
    if (states)
      for (int64_t l = 0; l <= spec.numHiddenLayers; ++l)
        results.push_back({step::residual(l), x});
    addCaches(inputs, results, bs);

    std::string name = states ? step::prefillStates(fused)
                              : step::prefill(fused, bs != spec.inference.batchSize, length);
    auto [fn, args] = startFunction(name, inputs, results, "prefill");
    Params p = Params::bind(ValueRange(args).take_front(params.size()),
                            spec.numHiddenLayers);
    unsigned i = params.size();
    Value ids = args[i++], lastPositions = args[i++];
    Value prev = fused ? args[i++] : Value();
    auto [kc, vc] = caches(args);

    // Prompts are right-padded; causal attention keeps padding out of the
    // real positions, and each sequence's last real position (length - 1) is
    // picked for the first decode step.
    Value e = ops::EmbeddingOp::create(b, loc, x, p.embed, ids);
    Value u = plainInputs(e);
    if (fused) {
      // Fused wherever training would (not at t = 0 or a BOS), no jitter.
      Value mask = ops::FeedbackMaskOp::create(
          b, loc, f32({bs, t}), ids, Value(),
          b.getI64IntegerAttr(spec.bosTokenId), UnitAttr());
      Value state = ops::ShiftRightOp::create(b, loc, x, prev);
      u = ops::WhereOp::create(b, loc, x, mask, fuse(e, u, state, p), u);
    }
    SmallVector<Value> residuals;
    Value h = stack(u, p, Value(), kc, vc, Value(), states ? &residuals : nullptr);
    Value last = ops::GatherPositionsOp::create(b, loc, f32({bs, 1, D()}), h,
                                                lastPositions);
    auto [lastNormed, lastLogits] = head(last, p);
    // Every position's carried state; the final norm over all of them only
    // where the post-norm state is carried.
    Value carriedStates = spec.feedback.state == StateSource::PostNorm
                              ? finalNorm(h, p)
                              : h;
    SmallVector<Value> outs = {lastLogits, carried(last, lastNormed), carriedStates};
    if (states) {
      outs.append(residuals.begin(), residuals.end());
      outs.push_back(h);
    }
    outs.append(kc.begin(), kc.end());
    outs.append(vc.begin(), vc.end());
    func::ReturnOp::create(b, loc, outs);
    b.setInsertionPointAfter(fn);
  }

  /// decode_step: one token per row, the feedback path switched per row by
  /// feedback_on (standard and soft rows in one batch). decode_step_plain:
  /// the standard regime alone, without the feedback GEMMs, so a standard
  /// decode costs what a plain transformer's does.
  void buildDecodeStep(bool feedback) {
    const int64_t bs = spec.inference.batchSize;
    auto x = f32({bs, 1, D()});
    SmallVector<std::pair<StringRef, Type>> inputs = {
        {"input_ids", i32({bs, 1})}, {"positions", i32({bs, 1})}};
    if (feedback)
      inputs.append({{"state", x}, {"feedback_on", f32({bs, 1})}});
    SmallVector<std::pair<std::string, Type>> results = {
        {"logits", f32({bs, 1, spec.vocabSize})}, {"state", x}};
    addCaches(inputs, results, bs);

    auto [fn, args] = startFunction(feedback ? step::kDecode : step::kDecodePlain,
                                    inputs, results, "decode");
    Params p = Params::bind(ValueRange(args).take_front(params.size()),
                            spec.numHiddenLayers);
    unsigned i = params.size();
    Value ids = args[i++], positions = args[i++];
    auto [kc, vc] = caches(args);

    // standard: u = e. soft: u = fuse(e, h_{t-1}).
    Value u = switchedInputs(x, ids, p, feedback ? args[i] : Value(),
                             feedback ? args[i + 1] : Value());
    Value h = stack(u, p, positions, kc, vc);
    auto [normed, logits] = head(h, p);
    SmallVector<Value> outs = {logits, carried(h, normed)};
    outs.append(kc.begin(), kc.end());
    outs.append(vc.begin(), vc.end());
    func::ReturnOp::create(b, loc, outs);
    b.setInsertionPointAfter(fn);
  }

  /// mixed_n<N>: N tokens, each of its own row of the decode batch at its own
  /// position (rows, positions): a running row's next token (fed back where
  /// feedback_on, with its row's state in token_states) or a piece of a
  /// joining row's prompt (plain). Each row's logits and carried state are
  /// those of its token `picks[row]`. A token at position -1 is padding:
  /// nothing is written for it. With a feedback path it also returns every
  /// token's carried state (states): a fused:N prompt goes through mixed
  /// steps pass after pass, each pass's tokens fed the states of the pass
  /// before, as prefill_fused feeds them.
  void buildMixedStep(int64_t n, bool feedback) {
    const int64_t bs = spec.inference.batchSize;
    auto x = f32({1, n, D()}), rowOut = f32({bs, 1, D()});
    SmallVector<std::pair<StringRef, Type>> inputs = {
        {"input_ids", i32({1, n})}, {"positions", i32({1, n})},
        {"rows", i32({1, n})}, {"picks", i32({bs})}};
    if (feedback)
      inputs.append({{"token_states", x}, {"feedback_on", f32({1, n})}});
    SmallVector<std::pair<std::string, Type>> results = {
        {"logits", f32({bs, 1, spec.vocabSize})}, {"state", rowOut}};
    if (feedback)
      results.push_back({"states", x});
    addCaches(inputs, results, bs);

    auto [fn, args] = startFunction(step::mixed(n), inputs, results, "decode");
    Params p = Params::bind(ValueRange(args).take_front(params.size()),
                            spec.numHiddenLayers);
    unsigned i = params.size();
    Value ids = args[i++], positions = args[i++], rows = args[i++],
          picks = args[i++];
    auto [kc, vc] = caches(args);

    Value u = switchedInputs(x, ids, p, feedback ? args[i] : Value(),
                             feedback ? args[i + 1] : Value());
    Value h = stack(u, p, positions, kc, vc, rows);
    Value last = ops::GatherPositionsOp::create(b, loc, rowOut, h, picks);
    auto [normed, logits] = head(last, p);
    SmallVector<Value> outs = {logits, carried(last, normed)};
    if (feedback)
      outs.push_back(spec.feedback.state == StateSource::PostNorm ? finalNorm(h, p) : h);
    outs.append(kc.begin(), kc.end());
    outs.append(vc.begin(), vc.end());
    func::ReturnOp::create(b, loc, outs);
    b.setInsertionPointAfter(fn);
  }
};
} // namespace

OwningOpRef<ModuleOp> buildModel(MLIRContext &ctx, const ModelSpec &spec,
                                 const BuildOptions &options) {
  return ModelBuilder(ctx, spec, options).build();
}

} // namespace fbt
