//===- Passes.td - fbt passes ------------------------------*- tablegen -*-===//

#ifndef FBT_PASSES_TD
#define FBT_PASSES_TD

include "mlir/Pass/PassBase.td"

def FbtExpandMultipass : Pass<"fbt-expand-multipass", "::mlir::ModuleOp"> {
  let summary = "Unroll fbt.multipass into K chained full-sequence passes";
  let description = [{
    Pass 1 runs the body on the plain input; pass k > 1 runs it on the
    feedback region applied to (plain input, shift_right(h_{k-1})), with
    `fbt.stop_gradient` on the carried state under `detach_state` and jitter
    stream k. The passes reference the same parameter values: nothing is
    copied but the ops. The losses combine as `L_1 + lambda*mean(L_2..L_K)`.
  }];
  let options = [
    Option<"passes", "passes", "int64_t", /*default=*/"0",
           "Expand with this K instead of the op's own (0: as stated)">
  ];
  let dependentDialects = ["::mlir::fbt::FbtDialect"];
}

def FbtAutodiff : Pass<"fbt-autodiff", "::mlir::ModuleOp"> {
  let summary = "Reverse-mode differentiation of the training objective";
  let description = [{
    For every function marked `fbt.step = "train"` returning the loss first,
    appends the gradient of the loss wrt each parameter (arguments marked
    `fbt.param`) to the results, in parameter order. Gradients flowing into
    a value from several uses (later passes through the carried state, the
    tied embedding and LM head) are summed, so each parameter gets exactly
    one gradient. Each op's rule comes from DifferentiableOpInterface; an op
    without one on the gradient path is an error.
  }];
  let dependentDialects = ["::mlir::fbt::FbtDialect", "::mlir::arith::ArithDialect"];
}

def FbtFuseFeedbackGate : Pass<"fbt-fuse-feedback-gate", "::mlir::ModuleOp"> {
  let summary = "Fold the GLU feedback gate into the first layer's input norm";
  let description = [{
    Rewrites `rmsnorm(where(m, feedback glu(e, s, W_U, W_G), e))` into two
    GEMMs, `W_U s` and `W_G e`, and one fbt.gated_input_norm epilogue that
    applies the gate, the select and the norm in one pass over memory. The
    fused op's gradient rule emits the fused backward, so running this before
    fbt-autodiff fuses both directions. `W_G e` does not depend on the pass,
    so CSE leaves one gate GEMM for all K-1 fused passes.
  }];
  let dependentDialects = ["::mlir::fbt::FbtDialect"];
}

def FbtDecompose : Pass<"fbt-decompose", "::mlir::ModuleOp"> {
  let summary = "Composite ops into GEMMs and elementwise primitives";
  let description = [{
    fbt.feedback and fbt.feedback_grad become library GEMMs (matmul and its
    two gradients) plus elementwise epilogues (glu_gate, add, concat/split),
    so fbt-to-kernels sees only GEMMs and single-kernel primitives. The
    transformer layer is already stated in primitives by the frontend.
  }];
  let dependentDialects = ["::mlir::fbt::FbtDialect"];
}

def FbtOptimizer : Pass<"fbt-optimizer", "::mlir::ModuleOp"> {
  let summary = "Append global-norm clipping and AdamW to differentiated steps";
  let description = [{
    A differentiated training step (loss, pass_losses, one gradient per
    parameter) becomes (params, batch, seed, AdamW moments, lr, step) ->
    (loss, pass_losses, grad_norm, new params, new moments): one function per
    training step, learning rate and step count as runtime inputs. Weight
    decay applies to parameters marked `fbt.decay` (not to norms and the
    embedding). With keep-gradient-step, the differentiated step stays as
    `<name>_grads` for numerics checks.
  }];
  let options = [
    Option<"beta1", "beta1", "double", "0.9", "AdamW beta1">,
    Option<"beta2", "beta2", "double", "0.95", "AdamW beta2">,
    Option<"epsilon", "epsilon", "double", "1e-8", "AdamW epsilon">,
    Option<"weightDecay", "weight-decay", "double", "0.1", "Decoupled weight decay">,
    Option<"maxGradNorm", "max-grad-norm", "double", "1.0", "Global-norm clip threshold">,
    Option<"keepGradientStep", "keep-gradient-step", "bool", "false",
           "Keep the differentiated step as <name>_grads">
  ];
  let dependentDialects = ["::mlir::fbt::FbtDialect"];
}

def FbtDataParallel : Pass<"fbt-data-parallel", "::mlir::ModuleOp"> {
  let summary = "Reduce gradients and losses over the ranks before the optimizer";
  let description = [{
    In every training step with an optimizer (after fbt-optimizer), the
    gradients the global norm and AdamW read become the mean over the ranks
    (`fbt.all_reduce`), and so do the loss and per-pass losses the step
    returns, so every rank clips and updates with the global batch's
    gradient and reports its loss. Gradients are bucketed per layer, in the
    order the backward produces them (the last layer first), a bucket
    closing at a layer boundary once it holds `min-bucket-bytes`; each
    bucket's reduction stands right after its last gradient, so the runtime
    overlaps it with the backward of the layers below. With one rank the
    reductions copy; one bundle serves every world size.

    With `zero=1` (ZeRO-1) each rank keeps AdamW's state for its share of
    the parameters only: the gradient buckets become `fbt.reduce_scatter`
    (each gradient reduced onto the rank owning its parameter), the global
    norm sums each rank's owned gradients' squares (`fbt.accumulate_squares`
    links marked `fbt.shard`) and all-reduces that one scalar, AdamW runs
    on the owner only (`fbt.shard`), and an `fbt.all_gather` per bucket
    brings every rank the updated parameters.
  }];
  let options = [
    Option<"minBucketBytes", "min-bucket-bytes", "int64_t", /*default=*/"0",
           "Merge consecutive layers' gradients until a bucket holds this many bytes">,
    Option<"zero", "zero", "int64_t", /*default=*/"0",
           "ZeRO stage: 0 all-reduces the gradients, 1 shards the optimizer">
  ];
  let dependentDialects = ["::mlir::fbt::FbtDialect"];
}

def FbtGemmsToLibrary : Pass<"fbt-gemms-to-library", "::mlir::ModuleOp"> {
  let summary = "matmul, lm_head and their gradients to library GEMMs";
  let description = [{
    Each becomes `fbt.gemm` over row-major views of its operands (x [R, K],
    w [N, K], dy [R, N]): BLAS on CPUs, cuBLASLt on GPUs. Operand and result
    types stay; fbt-to-kernels narrows them under bf16 storage.
  }];
  let dependentDialects = ["::mlir::fbt::FbtDialect"];
}

def FbtFuseProducts : Pass<"fbt-fuse-products", "::mlir::ModuleOp"> {
  let summary = "quantized_matmuls of one input become one quantized_matmuls";
  let description = [{
    In every function, the `fbt.quantized_matmul`s that multiply the same
    input by weights of one form (a layer's q, k and v; its gate and up)
    become one `fbt.quantized_matmuls`, placed where the first of them was:
    one kernel call where there were several. The CPU's pipeline runs it,
    where each call forks and joins the threads and int8 activations are
    quantized once per call; GPU kernels stay one product each.
  }];
  let dependentDialects = ["::mlir::fbt::FbtDialect"];
}

def FbtSplitReductions : Pass<"fbt-split-reductions", "::mlir::ModuleOp"> {
  let summary = "Variadic reductions to chains of fixed-arity links";
  let description = [{
    `fbt.global_norm` (one operand per parameter) becomes a chain of
    `fbt.accumulate_squares` and an `fbt.sqrt`; `fbt.combine_losses` (one
    loss per pass) a chain of `fbt.axpy` and an `fbt.pack` of the per-pass
    losses. Their arity grows with L and K; the links' does not, so their
    kernels are shared whatever the model's depth and passes.
  }];
  let dependentDialects = ["::mlir::fbt::FbtDialect", "::mlir::arith::ArithDialect"];
}

def FbtInferenceWeights : Pass<"fbt-inference-weights", "::mlir::ModuleOp"> {
  let summary = "Inference steps read the weight matrices as bf16 or int8";
  let description = [{
    In every inference step (eval, prefill, decode), each `fbt.gemm` by a
    parameter matrix (x @ W^T) reads W in the form `weights` names, as step
    inputs of their own (runtime/format/WeightNames.h): `int8.<param>` with
    `int8_scales.<param>` (f16, one per group of 32 along a row), or
    `bf16.<param>`. A GEMM of at most `gemv-rows` rows becomes
    `fbt.quantized_matmul` (a generated kernel that dequantizes as it reads);
    a wider one multiplies an `fbt.dequantize`d copy in its library GEMM.
    With `activations=int8` (int8 weights only) every product by a
    parameter, however wide, becomes a quantized_matmul marked
    `int8_activations`: prompts and decode steps multiply in integers
    alike. Training steps keep their f32 weights.
    `weights=f32` changes nothing, unless `f32-products`: then the few-row
    products read the f32 parameter in a quantized_matmul kernel.
  }];
  let options = [
    Option<"weights", "weights", "std::string", /*default=*/"\"f32\"",
           "The inference steps' weight form: f32, bf16 or int8">,
    Option<"gemvRows", "gemv-rows", "int64_t", /*default=*/"16",
           "The most rows a product runs as a quantized_matmul kernel">,
    Option<"f32Products", "f32-products", "bool", /*default=*/"false",
           "With f32 weights: products of at most `gemv-rows` rows by a "
           "parameter run as quantized_matmul kernels reading the parameter "
           "(the CPU's: BLAS's one-row GEMM does not stream W as fast)">,
    Option<"activations", "activations", "std::string", /*default=*/"\"f32\"",
           "int8: every product by an int8 weight is a quantized_matmul that "
           "quantizes its input rows per group of 32 and multiplies in "
           "integers (int8_activations); f32: they multiply in f32">
  ];
  let dependentDialects = ["::mlir::fbt::FbtDialect"];
}

def FbtToKernels : Pass<"fbt-to-kernels", "::mlir::ModuleOp"> {
  let summary = "GEMMs to library calls, everything else to generated kernels";
  let description = [{
    In every step function (after fbt-gemms-to-library, which leaves
    `fbt.gemm` library calls), every op other than a GEMM becomes an
    `fbt.call_kernel` of a kernel generated from IR (scf/arith/math over flat
    memrefs) and added to the module (after fbt-split-reductions, which
    leaves no variadic reduction). Ops with the same code (same op,
    shapes and attributes) share one kernel, so the kernel count does not
    grow with K or L. `fbt.stop_gradient` is the identity here.

    `target=gpu` maps the kernels' grids to GPU threads and blocks (block
    reductions, atomics for cross-row sums); codegen/nvptx/GpuKernels.h then
    splits each kernel into its launches. `storage=bf16` (with target=gpu)
    stores the activations inside training steps in bf16 (prefill and decode,
    bound by reading the weights, stay f32): kernels widen on load and
    round on store, GEMMs take bf16 operands (weights through one bf16 copy
    per step) and accumulate in f32. What a step takes or returns, scalars,
    parameter gradients and what sums into them stay f32.

    `tune-space=default|wide` builds every op kernel once more per other
    configuration of the knobs its generator asked for (threads per row
    block, elements per thread, attention tiles, the CPU's loop grain,
    threading and prefetching),
    each a kernel `<kernel>__v<i>` marked `fbt.variant_of`, with the same
    arguments: the runtime may call any of them in its place (`fbt tune`).
    A GPU variant declaring more static shared memory than a block may is
    not built.
  }];
  let options = [
    Option<"target", "target", "::mlir::fbt::KernelTarget",
           /*default=*/"::mlir::fbt::KernelTarget::Cpu",
           "What the kernels' grids map to", [{::llvm::cl::values(
             clEnumValN(::mlir::fbt::KernelTarget::Cpu, "cpu", "CPU loops"),
             clEnumValN(::mlir::fbt::KernelTarget::Gpu, "gpu",
                        "GPU threads and blocks"))}]>,
    Option<"storage", "storage", "::mlir::fbt::Storage",
           /*default=*/"::mlir::fbt::Storage::F32",
           "How a step's activations are stored (arithmetic and "
           "accumulation stay f32)", [{::llvm::cl::values(
             clEnumValN(::mlir::fbt::Storage::F32, "f32", "f32"),
             clEnumValN(::mlir::fbt::Storage::BF16, "bf16",
                        "bf16 in training steps (target=gpu only)"))}]>,
    Option<"tuneSpace", "tune-space", "::mlir::fbt::TuneSpace",
           /*default=*/"::mlir::fbt::TuneSpace::None",
           "Also build each kernel in the other configurations of its knobs "
           "(codegen/kernels/KernelConfig.h), as variants `<kernel>__v<i>`",
           [{::llvm::cl::values(
             clEnumValN(::mlir::fbt::TuneSpace::None, "none", "the default only"),
             clEnumValN(::mlir::fbt::TuneSpace::Default, "default",
                        "a few values per knob"),
             clEnumValN(::mlir::fbt::TuneSpace::Wide, "wide",
                        "more values per knob"))}]>,
    ListOption<"configs", "configs", "std::string",
               "Kernels to build in a given configuration instead of the "
               "default, each `<kernel>:<knob>=<value>:...` (fbtc --tuned)">,
    Option<"cpuVectors", "cpu-vectors", "::mlir::fbt::CpuVectors",
           /*default=*/"::mlir::fbt::CpuVectors::Avx2",
           "The vectors the CPU's products are written in (fbtc sets it from "
           "--cpu)", [{::llvm::cl::values(
             clEnumValN(::mlir::fbt::CpuVectors::Avx2, "avx2",
                        "8 f32 lanes, 32 bytes per int8 dot (pmaddubsw)"),
             clEnumValN(::mlir::fbt::CpuVectors::Avx512, "avx512",
                        "16 f32 lanes, 64 bytes per int8 dot (AVX-512BW)"),
             clEnumValN(::mlir::fbt::CpuVectors::Avx512Vnni, "avx512-vnni",
                        "as avx512, the int8 dot into i32 in one (vpdpbusd)"))}]>
  ];
  let dependentDialects = [
    "::mlir::fbt::FbtDialect", "::mlir::arith::ArithDialect",
    "::mlir::gpu::GPUDialect",
    "::mlir::func::FuncDialect", "::mlir::memref::MemRefDialect",
    "::mlir::scf::SCFDialect", "::mlir::math::MathDialect",
    "::mlir::LLVM::LLVMDialect"
  ];
}

#endif // FBT_PASSES_TD
