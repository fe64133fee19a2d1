//===- FbtOps.td - the fbt dialect (model level) -----------*- tablegen -*-===//
//
// Model-level operations of the Full-Bandwidth Transformer. Values are ranked,
// statically shaped tensors; parameters are explicit SSA values (function
// arguments), never globals, so one set of weights serves every pass.
// Layout conventions (DESIGN.md section 2):
//   activations  [B, T, D]     batch, sequence, width
//   token ids    [B, T] i32
//   weights      [N, K]         "out x in", as in HF Llama checkpoints
//
//===----------------------------------------------------------------------===//

#ifndef FBT_OPS_TD
#define FBT_OPS_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/EnumAttr.td"
include "mlir/IR/CommonAttrConstraints.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/SymbolInterfaces.td"
include "dialect/FbtInterfaces.td"

//===----------------------------------------------------------------------===//
// Dialect
//===----------------------------------------------------------------------===//

def Fbt_Dialect : Dialect {
  let name = "fbt";
  let cppNamespace = "::mlir::fbt";
  let summary = "Model-level operations of the Full-Bandwidth Transformer";
  // Gradient rules materialize zeros and ones as arith.constant.
  let dependentDialects = ["::mlir::arith::ArithDialect"];
  // Every fbt.* discardable attribute is declared and checked in
  // FbtDialect.cpp (on ops, function arguments and function results).
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let description = [{
    The fbt dialect states an FBT model and its K-pass training objective at
    the level of transformer building blocks. Passes expand the objective,
    differentiate it and lower it to generated kernels plus library GEMMs.
  }];
}

class Fbt_Op<string mnemonic, list<Trait> traits = []>
    : Op<Fbt_Dialect, mnemonic, traits>;

class Differentiable_ : DeclareOpInterfaceMethods<Fbt_DifferentiableOpInterface>;
def Differentiable : Differentiable_;

// Activations and weights: f32 on the CPU, bf16/f16 allowed for GPU storage.
def Fbt_FloatTensor : RankedTensorOf<[F32, BF16, F16]>;
// Token ids, targets and positions.
def Fbt_IntTensor : RankedTensorOf<[I32]>;
// A 0-d float tensor (a loss).
def Fbt_Scalar : 0DTensorOf<[F32]>;

def Fbt_FusionGlu    : I32EnumAttrCase<"glu", 0>;
def Fbt_FusionAdd    : I32EnumAttrCase<"add", 1>;
def Fbt_FusionConcat : I32EnumAttrCase<"concat", 2>;
def Fbt_FusionKind : I32EnumAttr<"FusionKind",
    "how the carried state is fused with the token embedding",
    [Fbt_FusionGlu, Fbt_FusionAdd, Fbt_FusionConcat]> {
  let cppNamespace = "::mlir::fbt";
}

// The cases of ::fbt::Reduction (runtime/format/Kinds.h), which the plans
// carry; DialectTest checks the two agree.
def Fbt_ReductionMean : I32EnumAttrCase<"mean", 0>;
def Fbt_ReductionSum  : I32EnumAttrCase<"sum", 1>;
def Fbt_ReductionKind : I32EnumAttr<"ReductionKind",
    "how a collective combines the ranks' values",
    [Fbt_ReductionMean, Fbt_ReductionSum]> {
  let cppNamespace = "::mlir::fbt";
}

//===----------------------------------------------------------------------===//
// Embedding and head
//===----------------------------------------------------------------------===//

def Fbt_EmbeddingOp : Fbt_Op<"embedding", [Pure, Differentiable]> {
  let summary = "gather rows of the (tied) embedding table";
  let description = [{
    `result[..., :] = table[ids[...], :]`. The table `[V, D]` is the same value
    that `fbt.lm_head` reads (weight tying).
  }];
  let arguments = (ins Fbt_FloatTensor:$table, Fbt_IntTensor:$ids);
  let results = (outs Fbt_FloatTensor:$result);
  let assemblyFormat = "$table `,` $ids attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Fbt_LMHeadOp : Fbt_Op<"lm_head", [Pure, Differentiable]> {
  let summary = "logits through the tied embedding: x @ table^T";
  let arguments = (ins Fbt_FloatTensor:$input, Fbt_FloatTensor:$table);
  let results = (outs Fbt_FloatTensor:$result);
  let assemblyFormat = "$input `,` $table attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Transformer primitives
//===----------------------------------------------------------------------===//

def Fbt_RMSNormOp : Fbt_Op<"rmsnorm", [Pure, Differentiable]> {
  let summary = "RMSNorm over the last dimension with a learned scale";
  let description = [{
    `result = input / sqrt(mean(input^2, -1) + epsilon) * scale`.
  }];
  let arguments = (ins Fbt_FloatTensor:$input, Fbt_FloatTensor:$scale,
                       F64Attr:$epsilon);
  let results = (outs Fbt_FloatTensor:$result);
  let assemblyFormat = "$input `,` $scale attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Fbt_NormalizeOp : Fbt_Op<"normalize", [Pure, Differentiable]> {
  let summary = "RMS normalization without a scale";
  let description = [{
    `result = input / sqrt(mean(input^2, -1) + epsilon)`: the feedback
    recipe's norms (plain inputs, the gate input, the carried state, the
    fused input). No parameter, so a recipe adds nothing to a checkpoint.
  }];
  let arguments = (ins Fbt_FloatTensor:$input, F64Attr:$epsilon);
  let results = (outs Fbt_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Fbt_MatmulOp : Fbt_Op<"matmul", [Pure, Differentiable]> {
  let summary = "linear map: input @ weight^T";
  let description = [{
    `input` is `[..., K]`, `weight` is `[N, K]` (out x in), the result is
    `[..., N]`. Lowered to a library GEMM (BLAS on CPUs, cuBLASLt on GPUs).
  }];
  let arguments = (ins Fbt_FloatTensor:$input, Fbt_FloatTensor:$weight);
  let results = (outs Fbt_FloatTensor:$result);
  let assemblyFormat = "$input `,` $weight attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Fbt_RopeOp : Fbt_Op<"rope", [Pure, Differentiable]> {
  let summary = "rotary position embedding, per head";
  let description = [{
    `input` is `[B, T, D]` viewed as `num_heads` heads of `D / num_heads`
    (even) channels; pairs `(i, i + Dh/2)` rotate by `pos * theta^(-2i/Dh)`
    (the HF Llama convention). Positions come from `positions` `[B, T]` when
    given, else position `t` for index `t`, each multiplied by
    `position_scale` (1 / the factor of linear RoPE scaling; 1 without).
    With `inverse` the rotation runs backwards (the transpose, used by the
    gradient).
  }];
  let arguments = (ins Fbt_FloatTensor:$input, Optional<Fbt_IntTensor>:$positions,
                       I64Attr:$num_heads, F64Attr:$theta, UnitAttr:$inverse,
                       DefaultValuedAttr<F64Attr, "1.0">:$position_scale);
  let results = (outs Fbt_FloatTensor:$result);
  let assemblyFormat = "$input (`,` $positions^)? attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Fbt_AttentionOp : Fbt_Op<"attention", [Pure, Differentiable,
    AttrSizedOperandSegments]> {
  let summary = "causal multi-head scaled dot-product attention";
  let description = [{
    `query` is `[B, T, D]`, `key` and `value` are `[B, S, D]`, each viewed as
    `num_heads` heads. Query `t` sees key `j` iff `j <= pos(t)`, where `pos(t)`
    is `query_positions[b, t]` when given (decoding against a KV cache) and `t`
    otherwise (then `S == T`). Scores are scaled by `1/sqrt(D / num_heads)`.
    With `query_rows` (`[B, T]`, positions required), query `(b, t)` reads
    row `query_rows[b, t]` of the keys and values instead of row `b`, and the
    keys may have any number of rows: one step carries tokens of many
    sequences (a mixed batch, `[1, N, D]`). A query whose position lies
    outside `[0, S)` is padding: it sees key 0 only. The keys and values may
    be f16 where the query is wider (an f16 KV cache, or a prefill's own
    keys rounded as that cache stores them): they are widened as read.
  }];
  let arguments = (ins Fbt_FloatTensor:$query, Fbt_FloatTensor:$key,
                       Fbt_FloatTensor:$value,
                       Optional<Fbt_IntTensor>:$query_positions,
                       Optional<Fbt_IntTensor>:$query_rows,
                       I64Attr:$num_heads);
  let results = (outs Fbt_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`,` $query_positions^)? (`rows` $query_rows^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Fbt_KVWriteOp : Fbt_Op<"kv_write", [Pure, AttrSizedOperandSegments,
    DeclareOpInterfaceMethods<Fbt_InPlaceOpInterface>]> {
  let summary = "write new keys or values into a KV cache at given positions";
  let description = [{
    `cache` is `[B, S, D]`, `update` is `[B, T, D]`, `positions` is `[B, T]`:
    `result = cache` with `result[b, positions[b, t], :] = update[b, t, :]`.
    Without `positions`, row `t` goes to position `t` (a prefill from 0).
    With `rows` (`[B, T]`, positions required), update `(b, t)` goes to
    cache row `rows[b, t]` instead of `b`, and the update may have any number
    of rows (a mixed batch, `[1, N, D]`). Positions outside `[0, S)` are
    dropped (padding). An f16 cache takes wider updates, rounded to
    nearest even as they are stored. Value semantics; bufferization makes it
    an in-place store.
  }];
  let arguments = (ins Fbt_FloatTensor:$cache, Fbt_FloatTensor:$update,
                       Optional<Fbt_IntTensor>:$positions,
                       Optional<Fbt_IntTensor>:$rows);
  let results = (outs Fbt_FloatTensor:$result);
  let assemblyFormat = "$cache `,` $update (`,` $positions^)? (`rows` $rows^)? attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Fbt_SwiGLUOp : Fbt_Op<"swiglu", [Pure, Differentiable]> {
  let summary = "silu(gate) * up, elementwise";
  let arguments = (ins Fbt_FloatTensor:$gate, Fbt_FloatTensor:$up);
  let results = (outs Fbt_FloatTensor:$result);
  let assemblyFormat = "$gate `,` $up attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Fbt_ResidualOp : Fbt_Op<"residual", [Pure, Differentiable]> {
  let summary = "residual update with depth scaling: stream + scale * branch";
  let arguments = (ins Fbt_FloatTensor:$stream, Fbt_FloatTensor:$branch,
                       F64Attr:$scale);
  let results = (outs Fbt_FloatTensor:$result);
  let assemblyFormat = "$stream `,` $branch attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Fbt_GatherPositionsOp : Fbt_Op<"gather_positions", [Pure]> {
  let summary = "pick one position per sequence: result[b, 0] = input[b, index[b]]";
  let description = [{
    `input` is `[B, T, D]`, `index` is `[B]`, the result is `[B, 1, D]`. Used to
    take the last prompt position of each sequence of a padded batch. An
    input of one row (`[1, N, D]`, a mixed batch's tokens) serves every `b`:
    `result[b, 0] = input[0, index[b]]`.
  }];
  let arguments = (ins Fbt_FloatTensor:$input, Fbt_IntTensor:$index);
  let results = (outs Fbt_FloatTensor:$result);
  let assemblyFormat = "$input `,` $index attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// The feedback path
//===----------------------------------------------------------------------===//

def Fbt_FeedbackOp : Fbt_Op<"feedback", [Pure, Differentiable]> {
  let summary = "fuse the token embedding with the carried top-layer state";
  let description = [{
    `embedding` and `state` are `[B, T, D]`. By `fusion`:
    - `glu` (default): `(state @ W_U^T) * sigmoid(embedding @ W_G^T)`;
      weights `(W_U [D, D], W_G [D, D])`: state on the value path, token as the gate;
    - `add`: `embedding + state @ W_U^T`; weights `(W_U [D, D])`;
    - `concat`: `[embedding; state] @ W^T`; weights `(W [D, 2D])`.
  }];
  let arguments = (ins Fbt_FloatTensor:$embedding, Fbt_FloatTensor:$state,
                       Variadic<Fbt_FloatTensor>:$weights,
                       DefaultValuedAttr<Fbt_FusionKind, "FusionKind::glu">:$fusion);
  let results = (outs Fbt_FloatTensor:$result);
  let assemblyFormat = [{
    $fusion $embedding `,` $state `,` $weights attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Fbt_ShiftRightOp : Fbt_Op<"shift_right", [Pure, Differentiable]> {
  let summary = "shift along the sequence by one: result[:, t] = input[:, t-1], zero at t=0";
  let arguments = (ins Fbt_FloatTensor:$input);
  let results = (outs Fbt_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Fbt_FeedbackMaskOp : Fbt_Op<"feedback_mask", [Pure]> {
  let summary = "where the fused input is used: 0 at t=0, document starts and plain prefixes";
  let description = [{
    `ids` is `[B, T]`; the result `[B, T]` holds 1.0 where the fused input
    replaces the plain embedding and 0.0 elsewhere: at `t = 0`, at every
    `bos_token_id`, and inside each document's plain prefix. A document
    starts at `t0` = 0 or at a BOS and runs to the next BOS or the row's end
    (`n` positions). With `prefix_mixin` its prefix is `1 + floor(u * n)`
    positions, `u = uniform(seed, 0, b * T + t0)` (see fbt.jitter), so
    training sees the prompt-then-generation shape of inference; otherwise
    the prefix is the document's first position.
  }];
  let arguments = (ins Fbt_IntTensor:$ids, Optional<I64>:$seed,
                       I64Attr:$bos_token_id, UnitAttr:$prefix_mixin);
  let results = (outs Fbt_FloatTensor:$result);
  let assemblyFormat = "$ids (`,` $seed^)? attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Fbt_JitterOp : Fbt_Op<"jitter", [Pure, Differentiable]> {
  let summary = "training noise on the carried state: input + epsilon * U(-1, 1)";
  let description = [{
    The noise is counter-based: element `i` (row-major flat index) of stream
    `stream` under `seed` is `epsilon * (2 * uniform(seed, stream, i) - 1)`,
    a pure function of the three, so a step is reproducible and each pass
    (stream) draws its own noise. With 64-bit wrapping arithmetic,
      mix(z) = splitmix64 finalizer: z += 0x9E3779B97F4A7C15;
               z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9;
               z = (z ^ (z >> 27)) * 0x94D049BB133111EB; z ^ (z >> 31)
      uniform(seed, stream, i) =
          (mix(mix(seed ^ (stream * 0xD1B54A32D192ED03)) + i) >> 40) * 2^-24
    a float in [0, 1) with 24 random bits, exact in f32.
  }];
  let arguments = (ins Fbt_FloatTensor:$input, I64:$seed, F64Attr:$epsilon,
                       DefaultValuedAttr<I64Attr, "0">:$stream);
  let results = (outs Fbt_FloatTensor:$result);
  let assemblyFormat = "$input `,` $seed attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Fbt_WhereOp : Fbt_Op<"where", [Pure, Differentiable]> {
  let summary = "per-position select: mask ? on_true : on_false";
  let description = [{
    `mask` is `[B, T]` (1.0 or 0.0), `on_true` and `on_false` are `[B, T, D]`.
  }];
  let arguments = (ins Fbt_FloatTensor:$mask, Fbt_FloatTensor:$on_true,
                       Fbt_FloatTensor:$on_false);
  let results = (outs Fbt_FloatTensor:$result);
  let assemblyFormat = "$mask `,` $on_true `,` $on_false attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Objective
//===----------------------------------------------------------------------===//

def Fbt_NTPLossOp : Fbt_Op<"ntp_loss", [Pure, Differentiable]> {
  let summary = "mean next-token cross-entropy";
  let description = [{
    `logits` is `[B, T, V]`, `targets` is `[B, T]` (the token after each
    position). Positions whose target equals `ignore_index` do not count.
  }];
  let arguments = (ins Fbt_FloatTensor:$logits, Fbt_IntTensor:$targets,
                       DefaultValuedAttr<I64Attr, "-1">:$ignore_index);
  let results = (outs Fbt_Scalar:$result);
  let assemblyFormat = "$logits `,` $targets attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Fbt_MultipassOp : Fbt_Op<"multipass", [RecursiveMemoryEffects]> {
  let summary = "the K-pass training objective, stated once";
  let description = [{
    Runs `num_passes` (K) full-sequence passes that share every weight.
    Pass 1 runs `body` on `input` (the plain embeddings). Pass k > 1 runs
    `body` on `feedback(input, shift_right(h_{k-1}))`: the `feedback` region
    receives the plain input and the top-layer states of pass k-1, already
    shifted right by one position (and cut from the gradient when
    `detach_state` is set), and yields the pass input. `body` yields the
    top-layer states and the pass loss.

    Results: `loss = L_1 + aux_loss_weight * mean(L_2..L_K)` (lambda of
    DESIGN.md section 2), and the per-pass losses `[K]`.

    `grad_passes` G > 0 truncates backpropagation through the passes: only
    L_1 and the losses of the last G passes count in `loss` (the mean is over
    those), the passes between run forward only, and the state entering the
    first counted pass after them is cut from the gradient. Every pass's loss
    is still reported. G = 0, or G >= K - 1, trains every pass.

    `fbt-expand-multipass` unrolls the op into K chained passes; it gives each
    copy of the feedback region its own jitter stream (the pass index).
  }];
  let arguments = (ins Fbt_FloatTensor:$input, I64Attr:$num_passes,
                       F64Attr:$aux_loss_weight, UnitAttr:$detach_state,
                       DefaultValuedAttr<I64Attr, "0">:$grad_passes);
  let extraClassDeclaration = [{
    /// Per-pass weights of the total: [1, lambda/(K-1), ..., lambda/(K-1)];
    /// with G = grad_passes in (0, K-1): [1, 0.., lambda/G x G].
    static ::llvm::SmallVector<double> lossWeights(int64_t k, double lambda,
                                                   int64_t gradPasses = 0);
  }];
  let results = (outs Fbt_Scalar:$loss, Fbt_FloatTensor:$pass_losses);
  let regions = (region SizedRegion<1>:$body, SizedRegion<1>:$feedback);
  let assemblyFormat = [{
    $input `:` type($input) attr-dict-with-keyword `body` $body `feedback` $feedback `->` type(results)
  }];
  let hasVerifier = 1;
  let hasRegionVerifier = 1;
}

def Fbt_YieldOp : Fbt_Op<"yield", [
    Pure, Terminator, HasParent<"MultipassOp">]> {
  let summary = "terminates the regions of fbt.multipass";
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "attr-dict ($values^ `:` type($values))?";
}


//===----------------------------------------------------------------------===//
// Arithmetic and gradient plumbing
//===----------------------------------------------------------------------===//

def Fbt_AddOp : Fbt_Op<"add", [Pure, Commutative, Differentiable,
    AllTypesMatch<["lhs", "rhs", "result"]>]> {
  let summary = "elementwise sum (gradient accumulation)";
  let arguments = (ins Fbt_FloatTensor:$lhs, Fbt_FloatTensor:$rhs);
  let results = (outs Fbt_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Fbt_ScaleOp : Fbt_Op<"scale", [Pure, Differentiable,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "multiply by a constant: input * factor";
  let arguments = (ins Fbt_FloatTensor:$input, F64Attr:$factor);
  let results = (outs Fbt_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Fbt_StopGradientOp : Fbt_Op<"stop_gradient", [Pure, Differentiable,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "identity forward, no gradient backward (detach_state)";
  let arguments = (ins Fbt_FloatTensor:$input);
  let results = (outs Fbt_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Fbt_ConvertOp : Fbt_Op<"convert", [Pure]> {
  let summary = "the same values in another float type, rounded to nearest even";
  let description = [{
    `result` holds `input`'s values in its own element type: narrowed ones
    round to nearest even, widened ones are exact. A prefill with an f16 KV
    cache converts its keys and values, so that its attention over the prompt
    reads them as the cache stores them (and a decode step's reads them).
  }];
  let arguments = (ins Fbt_FloatTensor:$input);
  let results = (outs Fbt_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Fbt_CombineLossesOp : Fbt_Op<"combine_losses", [Pure, Differentiable]> {
  let summary = "weighted sum of the per-pass losses, and the losses as a vector";
  let description = [{
    `loss = sum_k weights[k] * losses[k]`; `pass_losses[k] = losses[k]`
    (reported, not differentiated).
  }];
  let arguments = (ins Variadic<Fbt_Scalar>:$losses, DenseF64ArrayAttr:$weights);
  let results = (outs Fbt_Scalar:$loss, Fbt_FloatTensor:$pass_losses);
  let assemblyFormat = "$losses attr-dict `:` type($losses) `->` type(results)";
  let hasVerifier = 1;
}

def Fbt_ShiftLeftOp : Fbt_Op<"shift_left", [Pure,
    AllTypesMatch<["input", "result"]>]> {
  let summary = "result[:, t] = input[:, t+1], zero at the last position (shift_right's transpose)";
  let arguments = (ins Fbt_FloatTensor:$input);
  let results = (outs Fbt_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Gradients (emitted by fbt-autodiff)
//===----------------------------------------------------------------------===//

def Fbt_MatmulGradInputOp : Fbt_Op<"matmul_grad_input", [Pure]> {
  let summary = "gradient of matmul wrt its input: grad @ weight";
  let description = [{
    `grad` is `[..., N]`, `weight` is `[N, K]`, the result is `[..., K]`.
  }];
  let arguments = (ins Fbt_FloatTensor:$grad, Fbt_FloatTensor:$weight);
  let results = (outs Fbt_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $weight attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Fbt_MatmulGradWeightOp : Fbt_Op<"matmul_grad_weight", [Pure]> {
  let summary = "gradient of matmul wrt its weight: sum over rows of grad^T input";
  let description = [{
    `grad` is `[..., N]`, `input` is `[..., K]` (same leading dims), the
    result is `[N, K]`.
  }];
  let arguments = (ins Fbt_FloatTensor:$grad, Fbt_FloatTensor:$input);
  let results = (outs Fbt_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Fbt_EmbeddingGradOp : Fbt_Op<"embedding_grad", [Pure]> {
  let summary = "scatter-add of row gradients into a [V, D] table gradient";
  let arguments = (ins Fbt_FloatTensor:$grad, Fbt_IntTensor:$ids);
  let results = (outs Fbt_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $ids attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Fbt_RMSNormGradOp : Fbt_Op<"rmsnorm_grad", [Pure]> {
  let summary = "gradients of rmsnorm wrt input and scale";
  let arguments = (ins Fbt_FloatTensor:$grad, Fbt_FloatTensor:$input,
                       Fbt_FloatTensor:$scale, F64Attr:$epsilon);
  let results = (outs Fbt_FloatTensor:$input_grad, Fbt_FloatTensor:$scale_grad);
  let assemblyFormat = "$grad `,` $input `,` $scale attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Fbt_NormalizeGradOp : Fbt_Op<"normalize_grad", [Pure]> {
  let summary = "gradient of normalize wrt its input";
  let description = [{
    With `inv = 1 / sqrt(mean(x^2) + epsilon)` and `xhat = x * inv`:
    `input_grad = inv * (grad - xhat * mean(grad * xhat))`, per row.
  }];
  let arguments = (ins Fbt_FloatTensor:$grad, Fbt_FloatTensor:$input,
                       F64Attr:$epsilon);
  let results = (outs Fbt_FloatTensor:$input_grad);
  let assemblyFormat = "$grad `,` $input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Fbt_AttentionGradOp : Fbt_Op<"attention_grad", [Pure]> {
  let summary = "gradients of causal attention wrt query, key and value";
  let description = [{
    Recomputes the probabilities from `query` and `key` (flash-style: no
    T x T tensor is kept from the forward pass); `output`, the forward
    result, gives each query's `sum_j P_j dP_j` as `grad . output`.
  }];
  let arguments = (ins Fbt_FloatTensor:$grad, Fbt_FloatTensor:$query,
                       Fbt_FloatTensor:$key, Fbt_FloatTensor:$value,
                       Fbt_FloatTensor:$output, I64Attr:$num_heads);
  let results = (outs Fbt_FloatTensor:$query_grad, Fbt_FloatTensor:$key_grad,
                      Fbt_FloatTensor:$value_grad);
  let assemblyFormat = "$grad `,` $query `,` $key `,` $value `,` $output attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Fbt_SwiGLUGradOp : Fbt_Op<"swiglu_grad", [Pure]> {
  let summary = "gradients of silu(gate) * up wrt gate and up";
  let arguments = (ins Fbt_FloatTensor:$grad, Fbt_FloatTensor:$gate,
                       Fbt_FloatTensor:$up);
  let results = (outs Fbt_FloatTensor:$gate_grad, Fbt_FloatTensor:$up_grad);
  let assemblyFormat = "$grad `,` $gate `,` $up attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Fbt_WhereGradOp : Fbt_Op<"where_grad", [Pure]> {
  let summary = "split a gradient by the mask: (mask ? grad : 0, mask ? 0 : grad)";
  let arguments = (ins Fbt_FloatTensor:$mask, Fbt_FloatTensor:$grad);
  let results = (outs Fbt_FloatTensor:$on_true_grad, Fbt_FloatTensor:$on_false_grad);
  let assemblyFormat = "$mask `,` $grad attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Fbt_NTPLossGradOp : Fbt_Op<"ntp_loss_grad", [Pure]> {
  let summary = "gradient of the mean next-token cross-entropy wrt the logits";
  let description = [{
    `(softmax(logits) - onehot(targets)) * grad / count` at counted positions,
    zero at ignored ones.
  }];
  let arguments = (ins Fbt_Scalar:$grad, Fbt_FloatTensor:$logits,
                       Fbt_IntTensor:$targets,
                       DefaultValuedAttr<I64Attr, "-1">:$ignore_index);
  let results = (outs Fbt_FloatTensor:$result);
  let assemblyFormat = "$grad `,` $logits `,` $targets attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Fbt_FeedbackGradOp : Fbt_Op<"feedback_grad", [Pure]> {
  let summary = "gradients of fbt.feedback wrt embedding, state and weights";
  let arguments = (ins Fbt_FloatTensor:$grad, Fbt_FloatTensor:$embedding,
                       Fbt_FloatTensor:$state, Variadic<Fbt_FloatTensor>:$weights,
                       DefaultValuedAttr<Fbt_FusionKind, "FusionKind::glu">:$fusion);
  let results = (outs Fbt_FloatTensor:$embedding_grad, Fbt_FloatTensor:$state_grad,
                      Variadic<Fbt_FloatTensor>:$weight_grads);
  let assemblyFormat = [{
    $fusion $grad `,` $embedding `,` $state `,` $weights attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Fused feedback input (fbt-fuse-feedback-gate)
//===----------------------------------------------------------------------===//

def Fbt_GatedInputNormOp : Fbt_Op<"gated_input_norm", [Pure, Differentiable]> {
  let summary = "the GLU gate fused into the first layer's input and RMSNorm";
  let description = [{
    `value = state @ W_U^T` and `gate = embedding @ W_G^T` are `[B, T, D]`
    GEMM results; this op is their epilogue:
      input = mask ? value * sigmoid(gate) : embedding
      normed = RMSNorm(input) * scale
    `input` feeds the residual stream, `normed` the first attention. One pass
    over memory instead of a feedback kernel, a select and a norm.
  }];
  let arguments = (ins Fbt_FloatTensor:$value, Fbt_FloatTensor:$gate,
                       Fbt_FloatTensor:$embedding, Fbt_FloatTensor:$mask,
                       Fbt_FloatTensor:$scale, F64Attr:$epsilon);
  let results = (outs Fbt_FloatTensor:$input, Fbt_FloatTensor:$normed);
  let assemblyFormat = [{
    $value `,` $gate `,` $embedding `,` $mask `,` $scale attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Fbt_GatedInputNormGradOp : Fbt_Op<"gated_input_norm_grad", [Pure]> {
  let summary = "backward of fbt.gated_input_norm in one pass";
  let description = [{
    With `d = rmsnorm_grad(normed_grad) + input_grad` (the two uses of the
    input): `value_grad = mask * d * sigmoid(gate)`,
    `gate_grad = mask * d * value * sigmoid'(gate)`,
    `embedding_grad = (1 - mask) * d`, and the scale's gradient.
  }];
  let arguments = (ins Fbt_FloatTensor:$input_grad,
                       Fbt_FloatTensor:$normed_grad,
                       Fbt_FloatTensor:$value, Fbt_FloatTensor:$gate,
                       Fbt_FloatTensor:$embedding, Fbt_FloatTensor:$mask,
                       Fbt_FloatTensor:$scale, F64Attr:$epsilon);
  let results = (outs Fbt_FloatTensor:$value_grad, Fbt_FloatTensor:$gate_grad,
                      Fbt_FloatTensor:$embedding_grad, Fbt_FloatTensor:$scale_grad);
  let assemblyFormat = [{
    $input_grad `,` $normed_grad `,` $value `,` $gate `,` $embedding `,` $mask `,` $scale attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Fbt_GluGateOp : Fbt_Op<"glu_gate", [Pure]> {
  let summary = "value * sigmoid(gate), elementwise (the GLU fusion's epilogue)";
  let arguments = (ins Fbt_FloatTensor:$value, Fbt_FloatTensor:$gate);
  let results = (outs Fbt_FloatTensor:$result);
  let assemblyFormat = "$value `,` $gate attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Fbt_GluGateGradOp : Fbt_Op<"glu_gate_grad", [Pure]> {
  let summary = "gradients of value * sigmoid(gate) wrt value and gate";
  let arguments = (ins Fbt_FloatTensor:$grad, Fbt_FloatTensor:$value,
                       Fbt_FloatTensor:$gate);
  let results = (outs Fbt_FloatTensor:$value_grad, Fbt_FloatTensor:$gate_grad);
  let assemblyFormat = "$grad `,` $value `,` $gate attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Fbt_ConcatOp : Fbt_Op<"concat", [Pure]> {
  let summary = "concatenate along the last dimension";
  let arguments = (ins Fbt_FloatTensor:$lhs, Fbt_FloatTensor:$rhs);
  let results = (outs Fbt_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Fbt_SplitOp : Fbt_Op<"split", [Pure]> {
  let summary = "split the last dimension in two halves (concat's transpose)";
  let arguments = (ins Fbt_FloatTensor:$input);
  let results = (outs Fbt_FloatTensor:$lhs, Fbt_FloatTensor:$rhs);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Optimizer (fbt-optimizer)
//===----------------------------------------------------------------------===//

def Fbt_GlobalNormOp : Fbt_Op<"global_norm", [Pure]> {
  let summary = "sqrt of the sum of squares of every element of every operand";
  let arguments = (ins Variadic<Fbt_FloatTensor>:$inputs);
  let results = (outs Fbt_Scalar:$result);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs) `->` type($result)";
}

def Fbt_AdamWOp : Fbt_Op<"adamw", [Pure,
    DeclareOpInterfaceMethods<Fbt_InPlaceOpInterface>,
    AllTypesMatch<["param", "grad", "m", "v", "new_param", "new_m", "new_v"]>]> {
  let summary = "one AdamW update with global-norm clipping, elementwise";
  let description = [{
    `clip = min(1, max_grad_norm / (grad_norm + 1e-6))`, `g = grad * clip`,
    `m' = beta1*m + (1-beta1)*g`, `v' = beta2*v + (1-beta2)*g^2`,
    `p' = p * (1 - lr*weight_decay) - lr/(1-beta1^step) * m' /
          (sqrt(v') / sqrt(1-beta2^step) + epsilon)`.
    `step` counts from 1. Bufferizes in place on `param`, `m` and `v`.
  }];
  let arguments = (ins Fbt_FloatTensor:$param, Fbt_FloatTensor:$grad,
                       Fbt_FloatTensor:$m, Fbt_FloatTensor:$v,
                       Fbt_Scalar:$lr, Fbt_Scalar:$step, Fbt_Scalar:$grad_norm,
                       F64Attr:$beta1, F64Attr:$beta2, F64Attr:$epsilon,
                       F64Attr:$weight_decay, F64Attr:$max_grad_norm);
  let results = (outs Fbt_FloatTensor:$new_param, Fbt_FloatTensor:$new_m,
                      Fbt_FloatTensor:$new_v);
  let assemblyFormat = [{
    $param `,` $grad `,` $m `,` $v `,` $lr `,` $step `,` $grad_norm attr-dict `:` type($param) `,` type($lr) `,` type($step) `,` type($grad_norm)
  }];
  let hasVerifier = 1;
}

def Fbt_AllReduceOp : Fbt_Op<"all_reduce"> {
  let summary = "each operand reduced elementwise over the ranks of the run";
  let description = [{
    The ranks of a data-parallel run form a one-dimensional grid; every rank
    runs the same step on its own micro-batch. `results[i]` is the sum
    (`sum`) or the mean (`mean`, the op's first word) of `inputs[i]` over every
    contribution: each rank's, and each micro-batch a rank accumulated
    before this step (the runtime adds those in). The semantics of upstream
    MLIR's `shard.all_reduce` over a 1-D grid, without a grid symbol: the
    grid is the run's ranks, whose number the runtime knows, not the
    compiler, so one bundle serves every world size.

    `bucket` numbers the reduction within its step: the runtime starts it
    where the op stands and waits for it just before the first use of a
    result, so a bucket of late-layer gradients is reduced while the
    backward of the layers below still runs. `names` names each operand as
    the matching gradient-only step returns it ("grad.<param>", "loss"), so
    the runtime can add in the micro-batches it accumulated.

    Not `Pure`: every rank must issue the same collectives in the same
    order, so nothing may fold, merge, reorder or drop one.
  }];
  let arguments = (ins Variadic<Fbt_FloatTensor>:$inputs, Fbt_ReductionKind:$reduction,
                       I64Attr:$bucket, StrArrayAttr:$names);
  let results = (outs Variadic<Fbt_FloatTensor>:$results);
  let assemblyFormat = "$reduction $inputs attr-dict `:` functional-type($inputs, $results)";
  let hasVerifier = 1;
}

def Fbt_ReduceScatterOp : Fbt_Op<"reduce_scatter"> {
  let summary = "each operand reduced over the ranks onto the rank that owns it";
  let description = [{
    ZeRO-1's reduction of the gradients: `results[i]` is, on the rank that
    owns parameter `shards[i]`, what `fbt.all_reduce` would give (the sum or
    mean of `inputs[i]` over every rank and accumulated micro-batch); on
    every other rank it is unspecified, and nothing may read it there. The
    semantics of upstream MLIR's `shard.reduce_scatter` over a 1-D grid,
    with whole tensors as the shards: which rank owns which parameter is the
    runtime's partition of the step's parameters by bytes
    (runtime/format/ZeroShards.h), made for the run's number of ranks, so
    one bundle serves every world size.

    `bucket` and `names` as for `fbt.all_reduce`. Not `Pure`, for the same
    reason.
  }];
  let arguments = (ins Variadic<Fbt_FloatTensor>:$inputs, Fbt_ReductionKind:$reduction,
                       I64Attr:$bucket, StrArrayAttr:$names, StrArrayAttr:$shards);
  let results = (outs Variadic<Fbt_FloatTensor>:$results);
  let assemblyFormat = "$reduction $inputs attr-dict `:` functional-type($inputs, $results)";
  let hasVerifier = 1;
}

def Fbt_AllGatherOp : Fbt_Op<"all_gather", [
    DeclareOpInterfaceMethods<Fbt_InPlaceOpInterface>]> {
  let summary = "each operand, as its owner holds it, on every rank";
  let description = [{
    ZeRO-1's gather of the updated parameters: `results[i]` on every rank
    is `inputs[i]` as the rank that owns parameter `shards[i]` holds it (what
    the other ranks hold is not read). Upstream `shard.all_gather` over a
    1-D grid with whole tensors as the shards (see `fbt.reduce_scatter`).
    Each result may be written over its operand: the runtime gathers the
    parameters in place. `bucket` numbers it among the step's collectives
    and `names` names each operand. Not `Pure`.
  }];
  let arguments = (ins Variadic<Fbt_FloatTensor>:$inputs, I64Attr:$bucket,
                       StrArrayAttr:$names, StrArrayAttr:$shards);
  let results = (outs Variadic<Fbt_FloatTensor>:$results);
  let assemblyFormat = "$inputs attr-dict `:` functional-type($inputs, $results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Kernel level (fbt-to-kernels)
//===----------------------------------------------------------------------===//

def Fbt_GemmOp : Fbt_Op<"gemm", [Pure]> {
  let summary = "a library GEMM: result[M, N] = op(lhs) @ op(rhs)";
  let description = [{
    Operands are viewed as row-major matrices: `lhs` as `[M, K]` (or `[K, M]`
    with `transpose_lhs`), `rhs` as `[K, N]` (or `[N, K]` with
    `transpose_rhs`), whatever their tensor rank. The runtime calls BLAS on
    CPUs and cuBLASLt on GPUs. The operands share an element type; bf16
    operands may give an f32 result (accumulated in f32 either way).
  }];
  let arguments = (ins Fbt_FloatTensor:$lhs, Fbt_FloatTensor:$rhs,
                       I64Attr:$m, I64Attr:$n, I64Attr:$k,
                       UnitAttr:$transpose_lhs, UnitAttr:$transpose_rhs);
  let results = (outs Fbt_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def Fbt_WeightTensor : RankedTensorOf<[I8, BF16, F32]>;
def Fbt_ScaleTensor : RankedTensorOf<[F16]>;

def Fbt_QuantizedMatmulOp : Fbt_Op<"quantized_matmul", [Pure]> {
  let summary = "result[M, N] = input[M, K] @ dequantize(weight)[N, K]^T";
  let description = [{
    A product with a weight in its inference form (DESIGN.md §8): `weight`
    is int8 with `scales` (f16, one per group of 32 along each row of K, the
    last group of a row possibly shorter: the weight is scale * value), or
    bf16 or f32 without. The input and result are f32, and so is
    the arithmetic: a generated kernel dequantizes each weight as it reads it,
    so the weights are read once, in their own width, per call.
    `int8_activations` (int8 weights, CPU): the input rows are quantized too,
    per group of 32 by the same rule (d = max|x| / 127 in f32, q =
    x / d rounded to nearest even), and each group's product is an integer
    dot product scaled by both groups' scales. With it a product of any
    number of rows (a prompt's) is one of these.
  }];
  let arguments = (ins Fbt_FloatTensor:$input, Fbt_WeightTensor:$weight,
                       Optional<Fbt_ScaleTensor>:$scales,
                       UnitAttr:$int8_activations);
  let results = (outs Fbt_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight (`,` $scales^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Fbt_QuantizedMatmulsOp : Fbt_Op<"quantized_matmuls", [Pure, AttrSizedOperandSegments]> {
  let summary = "several quantized_matmuls of one input, as one call";
  let description = [{
    `results[i] = quantized_matmul(input, weights[i], scales[i])` for each
    weight (fbt-fuse-products, the CPU's pipeline: a layer's q, k and v
    products, or its gate and up). The weights share one form and K; int8
    weights come with one scales operand each. One kernel call instead of
    several: one fork and join of the CPU's threads, and with
    `int8_activations` the input quantized once for all of them.
  }];
  let arguments = (ins Fbt_FloatTensor:$input, Variadic<Fbt_WeightTensor>:$weights,
                       Variadic<Fbt_ScaleTensor>:$scales,
                       UnitAttr:$int8_activations);
  let results = (outs Variadic<Fbt_FloatTensor>:$results);
  let assemblyFormat = [{
    $input `,` `[` $weights `]` (`,` `[` $scales^ `]`)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Fbt_DequantizeOp : Fbt_Op<"dequantize", [Pure]> {
  let summary = "a narrow weight (int8 with scales, or bf16) widened to f32";
  let description = [{
    The f32 matrix a `quantized_matmul` weight stands for, same shape: for
    products over many rows (prefills), which a library GEMM runs better
    than a kernel that dequantizes per row.
  }];
  let arguments = (ins Fbt_WeightTensor:$weight, Optional<Fbt_ScaleTensor>:$scales);
  let results = (outs Fbt_FloatTensor:$result);
  let assemblyFormat = [{
    $weight (`,` $scales^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def Fbt_CallKernelOp : Fbt_Op<"call_kernel", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>,
    DeclareOpInterfaceMethods<Fbt_InPlaceOpInterface>]> {
  let summary = "run a generated kernel";
  let description = [{
    Calls the kernel function `kernel` (a `func.func` marked `fbt.kernel`,
    taking one flat memref per operand and then one per result) on the
    operands' buffers, writing the results' buffers.

    `tied`, if present, holds one entry per result: the operand whose buffer
    the kernel may write that result into (it reads each element before
    writing it), or -1. The memory planner decides whether it does.
  }];
  let arguments = (ins FlatSymbolRefAttr:$kernel, Variadic<AnyType>:$inputs,
                       OptionalAttr<DenseI64ArrayAttr>:$tied);
  let results = (outs Variadic<AnyType>:$results);
  let builders = [
    OpBuilder<(ins "TypeRange":$results, "StringRef":$kernel, "ValueRange":$inputs), [{
      build($_builder, $_state, results, kernel, inputs, DenseI64ArrayAttr());
    }]>
  ];
  let assemblyFormat = "$kernel `(` $inputs `)` attr-dict `:` functional-type($inputs, $results)";
  let hasVerifier = 1;
}

def Fbt_AccumulateSquaresOp : Fbt_Op<"accumulate_squares", [Pure,
    DeclareOpInterfaceMethods<Fbt_InPlaceOpInterface>]> {
  let summary = "acc + sum(input^2): one link of the global gradient norm";
  let description = [{
    Its result may be written over `acc`. Under ZeRO-1 a link carries
    `fbt.shard = "<param>"` and runs only on the rank that owns the
    parameter; elsewhere its result is `acc` (the link's tied operand), so
    each rank's chain sums the squares of the gradients it owns.
  }];
  let arguments = (ins Fbt_FloatTensor:$input, Fbt_Scalar:$acc);
  let results = (outs Fbt_Scalar:$result);
  let assemblyFormat = "$input `,` $acc attr-dict `:` functional-type(operands, results)";
}

def Fbt_AxpyOp : Fbt_Op<"axpy", [Pure]> {
  let summary = "acc + weight * x on scalars, the weight a runtime value";
  let arguments = (ins Fbt_Scalar:$acc, Fbt_Scalar:$x, Fbt_Scalar:$weight);
  let results = (outs Fbt_Scalar:$result);
  let assemblyFormat = "$acc `,` $x `,` $weight attr-dict `:` functional-type(operands, results)";
}

def Fbt_SqrtOp : Fbt_Op<"sqrt", [Pure]> {
  let summary = "elementwise square root";
  let arguments = (ins Fbt_FloatTensor:$input);
  let results = (outs Fbt_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
}

def Fbt_PackOp : Fbt_Op<"pack", [Pure]> {
  let summary = "scalars side by side in a vector";
  let description = [{
    No kernel: the memory plan places each operand in its slot of the
    result's buffer, so producing the operands fills the vector.
  }];
  let arguments = (ins Variadic<Fbt_Scalar>:$inputs);
  let results = (outs Fbt_FloatTensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

#endif // FBT_OPS_TD
