//===- SimtTarget.cpp - GPU kernels run on the CPU, for tests -------------===//

#include "codegen/simt/SimtTarget.h"
#include "codegen/cpu/CpuTarget.h"
#include "codegen/nvptx/NvptxTarget.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;
using namespace mlir::fbt;

namespace {
/// Declares the emulator's entry points in `module`.
void declareRuntime(ModuleOp module) {
  OpBuilder b = OpBuilder::atBlockBegin(module.getBody());
  Location loc = module.getLoc();
  auto declare = [&](StringRef name, TypeRange in, TypeRange out) {
    auto fn = func::FuncOp::create(b, loc, name, b.getFunctionType(in, out));
    fn.setPrivate();
  };
  Type index = b.getIndexType(), f32 = b.getF32Type(), i32 = b.getI32Type();
  declare("fbt_simt_thread_id", {}, {index});
  declare("fbt_simt_block_id", {}, {index});
  declare("fbt_simt_barrier", {}, {});
  declare("fbt_simt_shuffle_xor", {f32, i32}, {f32});
}

/// The gpu.func `g` as a func.func calling the emulator.
LogicalResult convert(ModuleOp module, gpu::GPUFuncOp g) {
  OpBuilder b(module.getContext());
  b.setInsertionPointToEnd(module.getBody());
  Location loc = g.getLoc();
  auto fn = func::FuncOp::create(b, loc, g.getName(), g.getFunctionType());
  fn->setAttr("fbt.kernel", b.getUnitAttr());
  fn.getBody().takeBody(g.getBody());
  Block &entry = fn.getBody().front();

  // Shared memory: one global per attribution.
  unsigned numArgs = g.getFunctionType().getNumInputs();
  for (unsigned i = entry.getNumArguments(); i > numArgs; --i) {
    BlockArgument arg = entry.getArgument(i - 1);
    auto type = cast<MemRefType>(arg.getType());
    auto plain = MemRefType::get(type.getShape(), type.getElementType());
    std::string name = (g.getName() + "_shared" + Twine(i - 1 - numArgs)).str();
    {
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(fn);
      memref::GlobalOp::create(b, loc, name, b.getStringAttr("private"), plain,
                               Attribute(), /*constant=*/false, IntegerAttr());
    }
    b.setInsertionPointToStart(&entry);
    Value global = memref::GetGlobalOp::create(b, loc, plain, name);
    arg.replaceAllUsesWith(global);
    entry.eraseArgument(i - 1);
  }

  SmallVector<Operation *> gpuOps;
  fn.walk([&](Operation *op) {
    if (isa<gpu::GPUDialect>(op->getDialect()))
      gpuOps.push_back(op);
  });
  for (Operation *op : gpuOps) {
    b.setInsertionPoint(op);
    auto call = [&](StringRef callee, TypeRange results, ValueRange args) {
      return func::CallOp::create(b, op->getLoc(), callee, results, args);
    };
    if (isa<gpu::ThreadIdOp>(op)) {
      op->replaceAllUsesWith(call("fbt_simt_thread_id", b.getIndexType(), {}));
    } else if (isa<gpu::BlockIdOp>(op)) {
      op->replaceAllUsesWith(call("fbt_simt_block_id", b.getIndexType(), {}));
    } else if (isa<gpu::BarrierOp>(op)) {
      call("fbt_simt_barrier", {}, {});
    } else if (auto s = dyn_cast<gpu::ShuffleOp>(op)) {
      if (s.getMode() != gpu::ShuffleMode::XOR)
        return op->emitOpError("has no emulation"), failure();
      Value v = call("fbt_simt_shuffle_xor", b.getF32Type(),
                     {s.getValue(), s.getOffset()})
                    .getResult(0);
      Value ok = arith::ConstantOp::create(b, op->getLoc(), b.getBoolAttr(true));
      s.getShuffleResult().replaceAllUsesWith(v);
      s.getValid().replaceAllUsesWith(ok);
    } else if (isa<gpu::ReturnOp>(op)) {
      func::ReturnOp::create(b, op->getLoc());
    } else {
      return op->emitOpError("has no emulation"), failure();
    }
    op->erase();
  }
  return success();
}
} // namespace

FailureOr<SimtBinary> mlir::fbt::compileKernelsForSimt(ModuleOp module) {
  OwningOpRef<ModuleOp> kernels = cloneKernels(module);
  SimtBinary out;
  FailureOr<GpuLaunchTable> launches = outlineGpuKernels(*kernels);
  if (failed(launches))
    return failure();
  out.launches = std::move(*launches);
  declareRuntime(*kernels);
  SmallVector<gpu::GPUModuleOp> gpuModules(kernels->getOps<gpu::GPUModuleOp>());
  for (gpu::GPUModuleOp gm : gpuModules) {
    for (auto g : llvm::make_early_inc_range(gm.getOps<gpu::GPUFuncOp>()))
      if (failed(convert(*kernels, g)))
        return failure();
    gm.erase();
  }
  (*kernels)->removeAttr(gpu::GPUDialect::getContainerModuleAttrName());
  if (failed(approximateTranscendentals(*kernels)))
    return failure();
  CpuTargetOptions cpu;
  cpu.parallel = false; // each emulated GPU thread is a loop iteration of its own
  FailureOr<std::string> library = compileModuleForCpu(*kernels, cpu);
  if (failed(library))
    return failure();
  out.library = std::move(*library);
  return out;
}
