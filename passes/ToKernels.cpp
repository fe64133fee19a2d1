//===- ToKernels.cpp - GEMMs to library calls, the rest to kernels --------===//

#include "codegen/kernels/KernelBuilder.h"
#include "codegen/kernels/Kernels.h"
#include "dialect/FbtOps.h"
#include "passes/Passes.h"

#include <map>
#include <set>

namespace mlir::fbt {
#define GEN_PASS_DEF_FBTTOKERNELS
#include "passes/Passes.h.inc"
} // namespace mlir::fbt

using namespace mlir;
using namespace mlir::fbt;

namespace {
struct ToKernels : fbt::impl::FbtToKernelsBase<ToKernels> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    kernelTarget = target;
    if (storage == Storage::BF16 && kernelTarget != KernelTarget::Gpu) {
      module.emitError() << "fbt-to-kernels: bf16 storage is for target=gpu";
      return signalPassFailure();
    }
    narrow = storage == Storage::BF16;
    if (!configs.empty() && tuneSpace != TuneSpace::None) {
      module.emitError() << "fbt-to-kernels: configs and tune-space exclude "
                            "each other (a tuned build has one variant)";
      return signalPassFailure();
    }
    for (const std::string &entry : configs) {
      std::string kernel, error;
      KernelConfig config;
      if (!parseConfigOption(entry, kernel, config, error)) {
        module.emitError() << "fbt-to-kernels: configs: " << error;
        return signalPassFailure();
      }
      given[kernel] = config;
    }
    SmallVector<func::FuncOp> steps;
    for (auto fn : module.getOps<func::FuncOp>())
      if (fn->hasAttr("fbt.step"))
        steps.push_back(fn);

    OpBuilder kernels(module.getBodyRegion());
    kernels.setInsertionPointToEnd(module.getBody());
    for (func::FuncOp fn : steps) {
      SmallVector<Operation *> ops;
      for (Operation &op : fn.getBody().front().without_terminator())
        ops.push_back(&op);
      // Training steps store activations in bf16. Prefill and decode stay
      // f32: their cost is reading the weights, which bf16 GEMMs would have
      // to copy to bf16 first, every step.
      auto kind = fn->getAttrOfType<StringAttr>("fbt.step");
      narrowStep = narrow && kind &&
                   (kind.getValue() == "train" || kind.getValue() == "grads");
      keepF32 = narrowStep ? valuesKeptInF32(fn) : DenseSet<Value>();
      bf16Copies.clear();
      entry = &fn.getBody().front();
      for (Operation *op : ops)
        if (failed(lower(op, kernels)))
          return signalPassFailure();
      fn->setAttr("fbt.kernels", UnitAttr::get(&getContext()));
    }
    // Every configuration given must have found its kernel, as it was tuned.
    for (const auto &[kernel, config] : given)
      if (!builtKernels.count(kernel)) {
        module.emitError() << "fbt-to-kernels: configs: this module has no kernel '"
                           << kernel << "' (tuned for another build of the model?)";
        return signalPassFailure();
      }
  }

  LogicalResult lower(Operation *op, OpBuilder &kernels) {
    OpBuilder b(op);
    // Constants stay: the memory plan turns them into initialized buffers;
    // so do packs, whose operands it places in the pack's slots, and the
    // collectives, which the runtime runs.
    if (isa<arith::ConstantOp, PackOp, AllReduceOp, ReduceScatterOp, AllGatherOp>(op))
      return success();
    if (auto stop = dyn_cast<StopGradientOp>(op)) {
      stop.replaceAllUsesWith(stop.getInput());
      stop.erase();
      return success();
    }
    if (auto gemm = dyn_cast<GemmOp>(op)) {
      // bf16 storage: both operands in bf16 (weights through a cached
      // copy), fp32 accumulation in the library.
      if (!narrowStep)
        return success();
      auto narrowed = GemmOp::create(
          b, gemm.getLoc(), storedType(gemm.getResult()),
          bf16Copy(gemm.getLhs(), kernels), bf16Copy(gemm.getRhs(), kernels),
          gemm.getMAttr(), gemm.getNAttr(), gemm.getKAttr(),
          gemm.getTransposeLhsAttr(), gemm.getTransposeRhsAttr());
      gemm.replaceAllUsesWith(narrowed.getResult());
      gemm.erase();
      return success();
    }
    SmallVector<Type> resultTypes, resultElements;
    for (Value r : op->getResults()) {
      resultTypes.push_back(storedType(r));
      resultElements.push_back(flatBuffer(r).first);
      if (auto t = dyn_cast<RankedTensorType>(resultTypes.back()))
        resultElements.back() = t.getElementType();
    }
    auto it = byKey.find(kernelKey(op, resultTypes));
    if (it == byKey.end()) {
      std::string name = "k" + std::to_string(byKey.size()) + "_" + kernelStem(op);
      auto config = given.find(name);
      FailureOr<func::FuncOp> fn =
          buildKernel(kernels, op, name, kernelTarget, resultElements,
                      config == given.end() ? KernelConfig() : config->second, cpuVectors);
      if (failed(fn) || failed(checkGiven(*fn, config == given.end() ? nullptr
                                                                      : &config->second)) ||
          failed(buildVariants(*fn, op, resultElements, kernels)))
        return failure();
      builtKernels.insert(name);
      it = byKey.insert({kernelKey(op, resultTypes), name}).first;
    }
    SmallVector<Value> operands(op->getOperands());
    for (Attribute a : dataOperands(op))
      operands.push_back(arith::ConstantOp::create(b, op->getLoc(), cast<TypedAttr>(a)));
    auto call = CallKernelOp::create(b, op->getLoc(), resultTypes, it->second,
                                     operands);
    // Results the op may write in place stay so through the call, where
    // their types still match (bf16 storage may narrow one side).
    if (auto inPlace = dyn_cast<InPlaceOpInterface>(op)) {
      SmallVector<int64_t> tied;
      for (unsigned r = 0; r < op->getNumResults(); ++r) {
        int64_t o = inPlace.getTiedOperand(r);
        tied.push_back(o >= 0 && operands[o].getType() == resultTypes[r] ? o : -1);
      }
      if (llvm::any_of(tied, [](int64_t o) { return o >= 0; }))
        call.setTied(tied);
    }
    // ZeRO-1: the call runs on the parameter's owner only.
    if (Attribute shard = op->getAttr("fbt.shard"))
      call->setAttr("fbt.shard", shard);
    op->replaceAllUsesWith(call);
    op->erase();
    return success();
  }

  /// The kernel `fn` (built for `op` in its default configuration) once
  /// more per other configuration of the tuning space, each as a variant
  /// `<kernel>__v<i>`. A variant whose knobs resolved to an earlier one's
  /// (a generator clamps a value) or that a GPU block could not hold is
  /// dropped.
  LogicalResult buildVariants(func::FuncOp fn, Operation *op,
                              ArrayRef<Type> resultElements, OpBuilder &kernels) {
    KernelConfig used =
        configFromAttr(fn->getAttrOfType<DictionaryAttr>(kConfigAttr));
    std::vector<KernelConfig> space = mlir::fbt::tuneSpace(tuneSpace, used);
    std::set<KernelConfig> seen{used};
    int64_t count = 0;
    for (const KernelConfig &config : llvm::drop_begin(space)) {
      std::string name = (fn.getSymName() + "__v" + Twine(count + 1)).str();
      FailureOr<func::FuncOp> variant =
          buildKernel(kernels, op, name, kernelTarget, resultElements, config, cpuVectors);
      if (failed(variant))
        return failure();
      KernelConfig built =
          configFromAttr((*variant)->getAttrOfType<DictionaryAttr>(kConfigAttr));
      if (!seen.insert(built).second || !fitsBlock(*variant)) {
        variant->erase();
        continue;
      }
      (*variant)->setAttr(kVariantOfAttr,
                          FlatSymbolRefAttr::get(fn.getSymNameAttr()));
      ++count;
    }
    return success();
  }

  /// A kernel built in a given configuration (configs) must have been built
  /// with exactly those knobs, and fit a GPU block: otherwise the
  /// configuration was tuned for another kernel of that name.
  LogicalResult checkGiven(func::FuncOp fn, const KernelConfig *config) {
    if (!config)
      return success();
    KernelConfig built = configFromAttr(fn->getAttrOfType<DictionaryAttr>(kConfigAttr));
    if (built != *config)
      return fn.emitError() << "fbt-to-kernels: configs: kernel '" << fn.getSymName()
                            << "' builds as {" << describe(built) << "}, not {"
                            << describe(*config) << "} (tuned for another build of "
                            << "the model?)";
    if (!fitsBlock(fn))
      return fn.emitError() << "fbt-to-kernels: configs: kernel '" << fn.getSymName()
                            << "' with {" << describe(*config) << "} needs "
                            << sharedBytesPerBlock(fn)
                            << " bytes of shared memory per block, more than a block has";
    return success();
  }

  /// Whether every grid of `fn` fits a GPU block's static shared memory
  /// (always, on the CPU).
  bool fitsBlock(func::FuncOp fn) const {
    return kernelTarget != KernelTarget::Gpu ||
           sharedBytesPerBlock(fn) <= kGpuStaticSharedBytes;
  }

  /// The most static shared memory one grid of `fn` declares.
  static int64_t sharedBytesPerBlock(func::FuncOp fn) {
    int64_t most = 0;
    for (auto grid : fn.getBody().getOps<scf::ParallelOp>()) {
      int64_t bytes = 0;
      grid.walk([&](memref::AllocaOp a) {
        MemRefType t = a.getType();
        if (isa_and_nonnull<gpu::AddressSpaceAttr>(t.getMemorySpace()))
          bytes += t.getNumElements() * ((t.getElementTypeBitWidth() + 7) / 8);
      });
      most = std::max(most, bytes);
    }
    return most;
  }

  /// The type `v` is stored with: bf16 for the activations of a training
  /// step under bf16 storage; f32 for what the step returns or takes,
  /// scalars, and the values kept in f32 (valuesKeptInF32).
  Type storedType(Value v) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!narrowStep || !t || !t.getElementType().isF32() || t.getNumElements() <= 1 ||
        keepF32.contains(v) ||
        llvm::any_of(v.getUsers(), [](Operation *u) { return isa<func::ReturnOp>(u); }))
      return v.getType();
    return t.clone(BFloat16Type::get(v.getContext()));
  }

  /// Parameter gradients and what sums into them stay f32 (they feed the
  /// global norm and AdamW, or the step returns them), as do the sums the
  /// GPU kernels add into atomically; so does attention's dq, whose buffer
  /// holds the softmax statistics between the GPU backward's launches.
  static DenseSet<Value> valuesKeptInF32(func::FuncOp fn) {
    DenseSet<Value> keep;
    SmallVector<Value> work;
    fn.walk([&](Operation *op) {
      if (auto adam = dyn_cast<AdamWOp>(op))
        work.push_back(adam.getGrad());
      if (auto norm = dyn_cast<GlobalNormOp>(op))
        llvm::append_range(work, norm.getInputs());
      if (isa<AllReduceOp, ReduceScatterOp, AllGatherOp>(op)) { // its types are its operands'
        llvm::append_range(work, op->getOperands());
        llvm::append_range(work, op->getResults());
      }
      if (isa<func::ReturnOp>(op))
        llvm::append_range(work, op->getOperands());
      if (auto g = dyn_cast<RMSNormGradOp>(op))
        work.push_back(g->getResult(1));
      if (auto g = dyn_cast<GatedInputNormGradOp>(op))
        work.push_back(g->getResults().back());
      if (auto g = dyn_cast<EmbeddingGradOp>(op))
        work.push_back(g->getResult(0));
      if (auto attn = dyn_cast<AttentionGradOp>(op))
        keep.insert(attn->getResult(0));
    });
    while (!work.empty()) {
      Value v = work.pop_back_val();
      if (!keep.insert(v).second)
        continue;
      if (Operation *def = v.getDefiningOp(); def && isa<AddOp, ScaleOp>(def))
        llvm::append_range(work, def->getOperands());
    }
    return keep;
  }

  /// `v` as bf16: itself, or a copy made once per step right after `v` is
  /// defined (a weight's copy serves every layer's pass and every K).
  Value bf16Copy(Value v, OpBuilder &kernels) {
    auto t = cast<RankedTensorType>(v.getType());
    if (!t.getElementType().isF32())
      return v;
    auto [it, inserted] = bf16Copies.try_emplace(v, Value());
    if (!inserted)
      return it->second;
    int64_t n = t.getNumElements();
    // A cast's key: its element count (any shape of it shares the code).
    Type flat = RankedTensorType::get({n}, t.getElementType());
    KernelKey key{nullptr, flat.getAsOpaquePointer()};
    auto k = byKey.find(key);
    if (k == byKey.end()) {
      std::string name = "k" + std::to_string(byKey.size()) + "_to_bf16";
      Type f32 = t.getElementType(), bf16 = BFloat16Type::get(v.getContext());
      buildCastKernel(kernels, v.getLoc(), name, n, f32, bf16, kernelTarget);
      k = byKey.insert({key, name}).first;
    }
    OpBuilder b(v.getContext());
    if (Operation *def = v.getDefiningOp())
      b.setInsertionPointAfter(def);
    else
      b.setInsertionPointToStart(entry);
    it->second = CallKernelOp::create(b, v.getLoc(),
                                      TypeRange{t.clone(BFloat16Type::get(v.getContext()))},
                                      k->second, ValueRange{v})
                     .getResult(0);
    return it->second;
  }

  std::map<KernelKey, std::string> byKey;
  std::map<std::string, KernelConfig> given; ///< the `configs` option's
  std::set<std::string> builtKernels;        ///< kernels built so far
  KernelTarget kernelTarget = KernelTarget::Cpu;
  bool narrow = false;     ///< storage=bf16
  bool narrowStep = false; ///< ... and the step being lowered is a training step
  DenseSet<Value> keepF32;
  DenseMap<Value, Value> bf16Copies;
  Block *entry = nullptr;
};
} // namespace
