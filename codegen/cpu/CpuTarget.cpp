//===- CpuTarget.cpp - kernels to a shared object -------------------------===//

#include "codegen/cpu/CpuTarget.h"
#include "codegen/cpu/KernelThreads.h"

#include "codegen/kernels/KernelConfig.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/OpenMP/OpenMPToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Host.h"

using namespace mlir;
using mlir::fbt::configFromAttr;
using mlir::fbt::KernelConfig;
using mlir::fbt::Knob;
using mlir::fbt::kConfigAttr;
using mlir::fbt::runsSerially;

std::string fbt::resolvedCpu(const CpuTargetOptions &options) {
  // A portable default (AVX2 + FMA) runs on any recent x86 server; "native"
  // asks for this machine's exact CPU.
  if (options.cpu.empty())
    return "x86-64-v3";
  if (options.cpu == "native")
    return llvm::sys::getHostCPUName().str();
  return options.cpu;
}

OwningOpRef<ModuleOp> fbt::cloneKernels(ModuleOp module) {
  OpBuilder b(module.getContext());
  OwningOpRef<ModuleOp> kernels = ModuleOp::create(module.getLoc());
  b.setInsertionPointToEnd(kernels->getBody());
  for (auto fn : module.getOps<func::FuncOp>())
    if (fn->hasAttr("fbt.kernel"))
      b.clone(*fn);
  return kernels;
}

namespace {
/// bf16 conversions as integer ops (round to nearest even), which every CPU
/// runs: the GPU's bf16-storage kernels emulated here (test/simt).
struct ExpandBf16 : PassWrapper<ExpandBf16, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ExpandBf16)
  StringRef getArgument() const override { return "fbt-expand-bf16"; }
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    arith::populateExpandBFloat16Patterns(patterns);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

/// exp as a polynomial in arith ops (upstream's approximation, within a few
/// ulp of libm, exact at 0 and +-inf): inlined, it vectorizes where libm's
/// expf would be a call per element, and softmax-heavy kernels (attention,
/// the loss) spend much of their time in exp.
struct ApproximateExp
    : PassWrapper<ApproximateExp, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ApproximateExp)
  StringRef getArgument() const override { return "fbt-approximate-exp"; }
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populateMathPolynomialApproximationPatterns(
        patterns, [](StringRef name) { return name == "exp" || name == "math.exp"; });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

/// Kernels' scratch (KernelBuilder::scratch, a static memref.alloca in a
/// grid's body) moves to the frame of the thread that runs the grid: the
/// start of the enclosing omp.parallel region, or of the function for a
/// serial grid. Allocated once per thread instead of once per iteration
/// (which would grow the stack with every iteration of a lowered loop).
struct HoistScratch : PassWrapper<HoistScratch, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(HoistScratch)
  StringRef getArgument() const override { return "fbt-hoist-scratch"; }
  void runOnOperation() override {
    SmallVector<memref::AllocaOp> allocas;
    getOperation().walk([&](memref::AllocaOp a) { allocas.push_back(a); });
    for (memref::AllocaOp a : allocas) {
      if (!a.getType().hasStaticShape()) {
        a.emitOpError() << "kernel scratch must have a static size";
        return signalPassFailure();
      }
      Operation *frame = a->getParentOp();
      while (!isa<func::FuncOp, omp::ParallelOp>(frame))
        frame = frame->getParentOp();
      a->moveBefore(&frame->getRegion(0).front().front());
    }
  }
};

/// A kernel built with a grain (Knob::Grain, `fbt.config`) hands its
/// OpenMP loops to the threads in chunks of that many iterations, round
/// robin (schedule(static, grain)), instead of one even split per thread:
/// uneven work (causal attention's rows) then spreads across the threads.
struct ScheduleParallelLoops
    : PassWrapper<ScheduleParallelLoops, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(ScheduleParallelLoops)
  StringRef getArgument() const override { return "fbt-schedule-parallel-loops"; }
  void runOnOperation() override {
    getOperation().walk([&](omp::WsloopOp loop) {
      auto fn = loop->getParentOfType<func::FuncOp>();
      KernelConfig config =
          configFromAttr(fn->getAttrOfType<DictionaryAttr>(kConfigAttr));
      auto grain = config.find(Knob::Grain);
      if (grain == config.end() || grain->second <= 0)
        return;
      OpBuilder b(loop);
      Value chunk = arith::ConstantOp::create(b, loop.getLoc(),
                                              b.getI64IntegerAttr(grain->second));
      loop.setScheduleKindAttr(omp::ClauseScheduleKindAttr::get(
          &getContext(), omp::ClauseScheduleKind::Static));
      loop.getScheduleChunkMutable().assign(chunk);
    });
  }
};

/// A worksharing loop that ends its parallel region waits for its threads
/// twice: at its own barrier, then at the region's join. The join alone
/// orders everything the loop wrote before the kernel returns, so such a
/// loop skips its barrier (nowait): at 2 threads a barrier costs a decode
/// product about a microsecond, a few dozen of them per token.
struct OmitFinalBarriers
    : PassWrapper<OmitFinalBarriers, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(OmitFinalBarriers)
  StringRef getArgument() const override { return "fbt-omit-final-barriers"; }
  void runOnOperation() override {
    getOperation().walk([&](omp::WsloopOp loop) {
      if (isa<omp::ParallelOp>(loop->getParentOp()) &&
          isa_and_nonnull<omp::TerminatorOp>(loop->getNextNode()))
        loop.setNowait(true);
    });
  }
};

/// convert-scf-to-openmp wraps each loop body in memref.alloca_scope (for
/// allocas made per iteration); ours make none, and a scope must stay one
/// block, which lowering the loops inside it would break: inline them.
struct InlineAllocaScopes
    : PassWrapper<InlineAllocaScopes, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(InlineAllocaScopes)
  StringRef getArgument() const override { return "fbt-inline-alloca-scopes"; }
  void runOnOperation() override {
    SmallVector<memref::AllocaScopeOp> scopes;
    getOperation().walk([&](memref::AllocaScopeOp s) { scopes.push_back(s); });
    IRRewriter rewriter(&getContext());
    for (memref::AllocaScopeOp scope : scopes) {
      bool allocates = false;
      scope.walk([&](memref::AllocaOp) { allocates = true; });
      if (allocates)
        continue;
      Block &body = scope.getBodyRegion().front();
      auto ret = cast<memref::AllocaScopeReturnOp>(body.getTerminator());
      SmallVector<Value> results(ret.getResults());
      rewriter.eraseOp(ret);
      rewriter.inlineBlockBefore(&body, scope);
      rewriter.replaceOp(scope, results);
    }
  }
};

/// The elements of a kernel's largest buffer: its size, for the decision
/// to run it on several threads.
int64_t largestBuffer(func::FuncOp fn) {
  int64_t most = 0;
  for (Type t : fn.getArgumentTypes())
    if (auto m = dyn_cast<MemRefType>(t); m && m.hasStaticShape())
      most = std::max<int64_t>(most, m.getNumElements());
  return most;
}

/// Whether `par` (one loop) runs a single iteration, so that no thread but
/// the first could ever have work: a decode step's KV write of its one new
/// row into a large cache.
bool singleIteration(scf::ParallelOp par) {
  if (par.getNumLoops() != 1)
    return false;
  std::optional<int64_t> lo = getConstantIntValue(par.getLowerBound()[0]),
                         hi = getConstantIntValue(par.getUpperBound()[0]),
                         step = getConstantIntValue(par.getStep()[0]);
  return lo && hi && step && *step > 0 && *hi - *lo <= *step;
}

/// Rewrites the parallel loops of kernels smaller than `minElements` as
/// serial ones (scf.for), the parallel loops nested in another parallel
/// loop too (the outer one's threads are the parallelism), those of a
/// single iteration and those of kernels built with Knob::Parallel = 0, so
/// that only worthwhile, outermost loops reach convert-scf-to-openmp: each
/// that does costs a fork and join of the thread pool. CPU kernels'
/// parallel loops carry no reductions (sums are serial loops inside an
/// iteration, kernels/KernelBuilder), so their iterations are independent
/// and the threads' results equal the serial ones bit for bit.
void serializeSmallParallelLoops(ModuleOp kernels, int64_t minElements) {
  SmallVector<scf::ParallelOp> serial;
  kernels.walk([&](scf::ParallelOp par) {
    auto fn = par->getParentOfType<func::FuncOp>();
    bool nested = par->getParentOfType<scf::ParallelOp>() != nullptr;
    bool serialKnob =
        runsSerially(configFromAttr(fn->getAttrOfType<DictionaryAttr>(kConfigAttr)));
    if (nested || serialKnob || largestBuffer(fn) < minElements ||
        par.getNumReductions() != 0 || singleIteration(par))
      serial.push_back(par);
  });
  for (scf::ParallelOp par : serial) {
    if (par.getNumReductions() != 0 || par.getNumLoops() != 1)
      continue; // convert-scf-to-openmp handles these; none are emitted
    OpBuilder b(par);
    auto loop = scf::ForOp::create(b, par.getLoc(), par.getLowerBound()[0],
                                   par.getUpperBound()[0], par.getStep()[0]);
    Block &body = *par.getBody();
    body.getTerminator()->erase(); // scf.reduce, empty
    Block *dst = loop.getBody();
    dst->getOperations().splice(Block::iterator(dst->getTerminator()),
                                body.getOperations());
    body.getArgument(0).replaceAllUsesWith(loop.getInductionVar());
    par.erase();
  }
}

LogicalResult lowerToLLVMDialect(ModuleOp kernels,
                                 const fbt::CpuTargetOptions &options) {
  PassManager pm(kernels.getContext());
  pm.addPass(std::make_unique<ExpandBf16>());
  pm.addPass(std::make_unique<ApproximateExp>());
  if (options.parallel) {
    serializeSmallParallelLoops(kernels, options.parallelMinElements);
    pm.addPass(createConvertSCFToOpenMPPass());
    pm.addPass(std::make_unique<ScheduleParallelLoops>());
    pm.addPass(std::make_unique<OmitFinalBarriers>());
  }
  pm.addPass(std::make_unique<HoistScratch>());
  if (options.parallel)
    pm.addPass(std::make_unique<InlineAllocaScopes>());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  ConvertFuncToLLVMPassOptions func;
  func.useBarePtrCallConv = true; // one plain pointer per buffer
  pm.addPass(createConvertFuncToLLVMPass(func));
  // After the functions: its own patterns would give them memref
  // descriptors instead of bare pointers.
  if (options.parallel)
    pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
  return pm.run(kernels);
}

/// With --cpu=native, the features this machine reports as well as its CPU's
/// name: a virtual machine may hide some its CPU has (AVX-512 on some
/// clouds), and kernels compiled for the name alone would use them.
std::string nativeFeatures(const fbt::CpuTargetOptions &options) {
  if (options.cpu != "native")
    return "";
  std::string out;
  for (const auto &feature : llvm::sys::getHostCPUFeatures())
    out += (out.empty() ? "" : ",") + std::string(feature.second ? "+" : "-") +
           feature.first().str();
  return out;
}

std::unique_ptr<llvm::TargetMachine> hostMachine(const fbt::CpuTargetOptions &options,
                                                 std::string &error) {
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  llvm::Triple triple(fbt::cpuTargetTriple());
  const llvm::Target *target =
      llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return nullptr;
  llvm::TargetOptions opts;
  return std::unique_ptr<llvm::TargetMachine>(target->createTargetMachine(
      triple, resolvedCpu(options), nativeFeatures(options), opts, llvm::Reloc::PIC_,
      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
}

void optimize(llvm::Module &m, llvm::TargetMachine &tm, int level) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::OptimizationLevel opt = level >= 3   ? llvm::OptimizationLevel::O3
                                : level == 2 ? llvm::OptimizationLevel::O2
                                : level == 1 ? llvm::OptimizationLevel::O1
                                             : llvm::OptimizationLevel::O0;
  pb.buildPerModuleDefaultPipeline(opt).run(m, mam);
}

/// Runs `cc -shared` (found on PATH) on the object; returns the library.
FailureOr<std::string> linkShared(ModuleOp module, StringRef objectBytes) {
  auto fail = [&](const Twine &msg) -> FailureOr<std::string> {
    module.emitError() << "CPU target: " << msg;
    return failure();
  };
  SmallString<128> obj, so;
  if (llvm::sys::fs::createTemporaryFile("fbt-kernels", "o", obj) ||
      llvm::sys::fs::createTemporaryFile("fbt-kernels", "so", so))
    return fail("cannot create temporary files");
  llvm::scope_exit cleanup([&] {
    llvm::sys::fs::remove(obj);
    llvm::sys::fs::remove(so);
  });
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(obj, ec);
    if (ec)
      return fail("cannot write " + obj + ": " + ec.message());
    os << objectBytes;
  }
  llvm::ErrorOr<std::string> cc = llvm::sys::findProgramByName("cc");
  if (!cc)
    return fail("no C compiler driver 'cc' on PATH to link the kernels");
  std::string errMsg;
  SmallVector<StringRef> args = {*cc, "-shared", "-o", so, obj, "-lm"};
  if (llvm::sys::ExecuteAndWait(*cc, args, std::nullopt, {}, 0, 0, &errMsg) != 0)
    return fail("linking the kernels failed: " + errMsg);
  auto buf = llvm::MemoryBuffer::getFile(so, /*IsText=*/false);
  if (!buf)
    return fail("cannot read the linked kernels: " + buf.getError().message());
  return (*buf)->getBuffer().str();
}
} // namespace

FailureOr<std::string>
fbt::compileKernelsForCpu(ModuleOp module, const CpuTargetOptions &options) {
  OwningOpRef<ModuleOp> kernels = cloneKernels(module);
  return compileModuleForCpu(*kernels, options);
}

FailureOr<std::string>
fbt::compileModuleForCpu(ModuleOp kernels, const CpuTargetOptions &options) {
  ModuleOp module = kernels;
  if (failed(lowerToLLVMDialect(kernels, options)))
    return module.emitError() << "CPU target: lowering the kernels to the "
                                 "LLVM dialect failed",
           failure();

  registerBuiltinDialectTranslation(*module.getContext());
  registerLLVMDialectTranslation(*module.getContext());
  registerOpenMPDialectTranslation(*module.getContext());
  llvm::LLVMContext llvmCtx;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(kernels, llvmCtx, "fbt_kernels");
  if (!llvmModule)
    return module.emitError() << "CPU target: translation to LLVM IR failed",
           failure();
  std::string threadsError;
  if (!routeKernelThreads(*llvmModule, threadsError))
    return module.emitError() << "CPU target: " << threadsError, failure();

  std::string error;
  std::unique_ptr<llvm::TargetMachine> tm = hostMachine(options, error);
  if (!tm)
    return module.emitError() << "CPU target: " << error, failure();
  llvmModule->setDataLayout(tm->createDataLayout());
  llvmModule->setTargetTriple(tm->getTargetTriple());
  optimize(*llvmModule, *tm, options.optLevel);
  if (!options.dumpLLVMIR.empty()) {
    std::error_code ec;
    llvm::raw_fd_ostream os(options.dumpLLVMIR, ec);
    if (!ec)
      llvmModule->print(os, nullptr);
  }

  SmallString<0> object;
  {
    llvm::raw_svector_ostream os(object);
    llvm::legacy::PassManager pm;
    if (tm->addPassesToEmitFile(pm, os, nullptr,
                                llvm::CodeGenFileType::ObjectFile))
      return module.emitError() << "CPU target: cannot emit objects", failure();
    pm.run(*llvmModule);
  }
  return linkShared(module, object);
}

std::string fbt::cpuTargetTriple() { return llvm::sys::getDefaultTargetTriple(); }

std::string fbt::cpuTargetArch() {
  return llvm::Triple(cpuTargetTriple()).getArchName().str();
}

/// The machine of the CPU the options name, where it is x86 (else null),
/// and whether it has every feature of `features` ("+avx512bw,+avx512vnni").
static std::unique_ptr<llvm::TargetMachine> x86Machine(const fbt::CpuTargetOptions &options) {
  if (!llvm::Triple(fbt::cpuTargetTriple()).isX86())
    return nullptr;
  std::string error;
  return hostMachine(options, error);
}
static bool has(const std::unique_ptr<llvm::TargetMachine> &tm, StringRef features) {
  return tm && tm->getMCSubtargetInfo()->checkFeatures(features);
}

bool fbt::cpuHasAvx2(const CpuTargetOptions &options) {
  return has(x86Machine(options), "+avx2");
}

std::string fbt::cpuTargetFeatures(const CpuTargetOptions &options) {
  std::unique_ptr<llvm::TargetMachine> tm = x86Machine(options);
  // The runtime's list (runtime/hal/cpu/CpuFeatures.cpp) knows each.
  std::string out;
  for (const char *f : {"avx", "avx2", "fma", "f16c", "bmi2", "avx512f", "avx512bw", "avx512dq",
                        "avx512vl", "avx512vnni", "avxvnni", "avx512bf16", "avx512fp16"})
    if (has(tm, std::string("+") + f))
      out += (out.empty() ? "+" : ",+") + std::string(f);
  return out;
}

fbt::CpuVectors fbt::cpuVectorsOf(const CpuTargetOptions &options) {
  std::unique_ptr<llvm::TargetMachine> tm = x86Machine(options);
  if (!has(tm, "+avx512f,+avx512bw"))
    return fbt::CpuVectors::Avx2;
  return has(tm, "+avx512vnni") ? fbt::CpuVectors::Avx512Vnni : fbt::CpuVectors::Avx512;
}
