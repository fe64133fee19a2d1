//===- NvptxTarget.cpp - kernels to PTX and cubin -------------------------===//

#include "codegen/nvptx/NvptxTarget.h"
#include "codegen/cpu/CpuTarget.h"

#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVM.h"
#include "mlir/Conversion/GPUToNVVM/GPUToNVVM.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVM/NVVM/Target.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"

#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"

#include <cstdlib>

using namespace mlir;
using namespace mlir::fbt;

void mlir::fbt::registerNvptxTarget(DialectRegistry &registry) {
  registry.insert<gpu::GPUDialect, NVVM::NVVMDialect, LLVM::LLVMDialect,
                  math::MathDialect>();
  arith::registerConvertArithToLLVMInterface(registry);
  cf::registerConvertControlFlowToLLVMInterface(registry);
  registerConvertFuncToLLVMInterface(registry);
  index::registerConvertIndexToLLVMInterface(registry);
  registerConvertMathToLLVMInterface(registry);
  registerConvertMemRefToLLVMInterface(registry);
  ub::registerConvertUBToLLVMInterface(registry);
  NVVM::registerConvertGpuToNVVMInterface(registry);
  NVVM::registerNVVMTargetInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerGPUDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerNVVMDialectTranslation(registry);
}

namespace {
/// Math for the NVVM conversion, which would otherwise call libdevice: exp,
/// log, sin and cos become polynomials (a few ulps, like libm's); the
/// operations PTX has an instruction for (sqrt.rn, cvt.rmi for floor, ...)
/// become the LLVM intrinsics the NVPTX backend selects them from.
struct PrepareMath
    : PassWrapper<PrepareMath, OperationPass<gpu::GPUModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(PrepareMath)
  StringRef getArgument() const override { return "fbt-prepare-math-for-nvvm"; }
  void runOnOperation() override {
    if (failed(approximateTranscendentals(getOperation())))
      return signalPassFailure();
    SmallVector<Operation *> math;
    getOperation().walk([&](Operation *op) {
      if (isa<math::MathDialect>(op->getDialect()))
        math.push_back(op);
    });
    for (Operation *op : math) {
      OpBuilder b(op);
      Location loc = op->getLoc();
      Type t = op->getResult(0).getType();
      auto intrinsic = [&](StringRef name, ValueRange args) -> Value {
        std::string full = ("llvm." + name + ".f32").str();
        return LLVM::CallIntrinsicOp::create(b, loc, t, b.getStringAttr(full),
                                             args)
            .getResult(0);
      };
      Value r;
      StringRef name = op->getName().stripDialect();
      if (!t.isF32()) {
        op->emitOpError("has no NVPTX lowering for type ") << t;
        return signalPassFailure();
      }
      if (name == "rsqrt") {
        Value one = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(1));
        r = arith::DivFOp::create(b, loc, one, intrinsic("sqrt", op->getOperands()));
      } else if (name == "sqrt" || name == "floor" || name == "ceil" ||
                 name == "roundeven" || name == "round" || name == "fma" ||
                 name == "copysign") {
        r = intrinsic(name, op->getOperands());
      } else if (name == "absf") {
        r = intrinsic("fabs", op->getOperands());
      } else {
        op->emitOpError("has no NVPTX lowering in fbt");
        return signalPassFailure();
      }
      op->getResult(0).replaceAllUsesWith(r);
      op->erase();
    }
  }
};

LogicalResult lowerToPtx(ModuleOp kernels, const NvptxTargetOptions &options) {
  PassManager pm(kernels.getContext());
  OpPassManager &gm = pm.nest<gpu::GPUModuleOp>();
  gm.addPass(createCanonicalizerPass());
  gm.addPass(createCSEPass());
  gm.addPass(std::make_unique<PrepareMath>());
  gm.addPass(createSCFToControlFlowPass());
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  nvvm.useBarePtrCallConv = true; // one device pointer per buffer
  nvvm.indexBitwidth = 64;
  gm.addPass(createConvertGpuOpsToNVVMOps(nvvm));
  gm.addPass(createCanonicalizerPass());
  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features = options.features;
  target.optLevel = options.optLevel;
  pm.addPass(createGpuNVVMAttachTarget(target));
  pm.addPass(createReconcileUnrealizedCastsPass());
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = "isa";
  pm.addPass(createGpuModuleToBinaryPass(binary));
  return pm.run(kernels);
}

/// The PTX text of the module's one gpu.binary.
FailureOr<std::string> ptxOf(ModuleOp kernels) {
  for (auto bin : kernels.getOps<gpu::BinaryOp>())
    for (Attribute a : bin.getObjects())
      if (auto object = dyn_cast<gpu::ObjectAttr>(a))
        return object.getObject().getValue().str();
  return kernels.emitError("the NVPTX backend produced no PTX"), failure();
}

/// Runs ptxas on `ptx`; the cubin's bytes and the -v report.
FailureOr<std::pair<std::string, std::string>>
assemble(ModuleOp module, const std::string &ptxas, const std::string &ptx,
         const std::string &chip, int optLevel) {
  SmallString<128> dir;
  if (std::error_code ec = llvm::sys::fs::createUniqueDirectory("fbt-ptxas", dir))
    return module.emitError("ptxas: cannot make a temporary folder: ")
               << ec.message(),
           failure();
  llvm::scope_exit cleanup([&] {
    llvm::sys::fs::remove_directories(dir);
  });
  std::string in = (dir + "/kernels.ptx").str(), out = (dir + "/kernels.cubin").str(),
              log = (dir + "/ptxas.log").str();
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(in, ec);
    if (ec)
      return module.emitError("ptxas: ") << ec.message(), failure();
    os << ptx;
  }
  std::string arch = "-arch=" + chip, opt = "-O" + std::to_string(optLevel);
  SmallVector<StringRef> args = {ptxas, arch, opt, "-v", in, "-o", out};
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(log),
                                          StringRef(log)};
  std::string error;
  int rc = llvm::sys::ExecuteAndWait(ptxas, args, std::nullopt, redirects, 0, 0,
                                     &error);
  auto read = [](const std::string &path) -> std::string {
    auto buf = llvm::MemoryBuffer::getFile(path, /*IsText=*/false);
    return buf ? (*buf)->getBuffer().str() : std::string();
  };
  std::string report = read(log);
  if (rc != 0)
    return module.emitError("ptxas failed (") << ptxas << "): "
                                              << (error.empty() ? report : error),
           failure();
  return std::make_pair(read(out), report);
}
} // namespace

LogicalResult mlir::fbt::approximateTranscendentals(Operation *root) {
  RewritePatternSet patterns(root->getContext());
  populateMathPolynomialApproximationPatterns(patterns, [](StringRef op) {
    return op == "math.exp" || op == "math.log" || op == "math.sin" ||
           op == "math.cos";
  });
  return applyPatternsGreedily(root, std::move(patterns));
}

std::string mlir::fbt::findPtxas() {
  if (const char *env = std::getenv("FBT_PTXAS"))
    return llvm::sys::fs::can_execute(env) ? env : "";
  if (auto p = llvm::sys::findProgramByName("ptxas"))
    return *p;
  SmallVector<std::string> dirs;
  if (const char *home = std::getenv("CUDA_HOME"))
    dirs.push_back(std::string(home) + "/bin");
  dirs.push_back("/usr/local/cuda/bin");
  for (const std::string &d : dirs)
    if (auto p = llvm::sys::findProgramByName("ptxas", {d}))
      return *p;
  return "";
}

FailureOr<NvptxBinary>
mlir::fbt::compileKernelsForNvptx(ModuleOp module,
                                  const NvptxTargetOptions &options) {
  OwningOpRef<ModuleOp> kernels = cloneKernels(module);
  NvptxBinary out;
  FailureOr<GpuLaunchTable> launches = outlineGpuKernels(*kernels);
  if (failed(launches))
    return failure();
  out.launches = std::move(*launches);
  if (failed(lowerToPtx(*kernels, options)))
    return failure();
  FailureOr<std::string> ptx = ptxOf(*kernels);
  if (failed(ptx))
    return failure();
  out.ptx = std::move(*ptx);
  if (options.cubin) {
    std::string ptxas = findPtxas();
    if (!ptxas.empty()) {
      auto cubin = assemble(module, ptxas, out.ptx, options.chip, options.optLevel);
      if (failed(cubin))
        return failure();
      out.cubin = std::move(cubin->first);
      out.ptxasLog = std::move(cubin->second);
    }
  }
  return out;
}
