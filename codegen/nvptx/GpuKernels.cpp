//===- GpuKernels.cpp - kernels split into GPU launches -------------------===//

#include "codegen/nvptx/GpuKernels.h"

#include "codegen/kernels/KernelConfig.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::fbt;

namespace {
/// Grids larger than this loop (grid-stride): enough blocks to fill any
/// current GPU several times over.
constexpr int64_t kMaxGrid = 1 << 16;

bool isWorkgroupAlloca(Operation *op) {
  auto alloca = dyn_cast<memref::AllocaOp>(op);
  return alloca && isa_and_nonnull<gpu::AddressSpaceAttr>(
                       alloca.getType().getMemorySpace());
}

/// True if `op` (with what it nests) reads memory at most: it can be
/// recomputed in every launch that needs it.
bool onlyReads(Operation *op) {
  WalkResult r = op->walk([](Operation *inner) {
    if (isa<memref::LoadOp>(inner) ||
        inner->hasTrait<OpTrait::HasRecursiveMemoryEffects>() ||
        isMemoryEffectFree(inner))
      return WalkResult::advance();
    return WalkResult::interrupt();
  });
  return !r.wasInterrupted();
}

class Outliner {
public:
  Outliner(func::FuncOp kernel, gpu::GPUModuleOp gpuModule)
      : kernel(kernel), b(kernel.getContext()) {
    b.setInsertionPointToEnd(gpuModule.getBody());
  }

  LogicalResult run(std::vector<KernelLaunch> &launches) {
    Block &body = kernel.getBody().front();
    // Buffers the kernel writes: a top-level read of one could not be
    // recomputed in a later launch (it would see the new contents).
    DenseSet<Value> written;
    kernel.walk([&](Operation *op) {
      if (auto store = dyn_cast<memref::StoreOp>(op))
        written.insert(store.getMemRef());
      if (auto rmw = dyn_cast<memref::AtomicRMWOp>(op))
        written.insert(rmw.getMemref());
    });
    for (Operation &op : body.without_terminator()) {
      if (auto grid = dyn_cast<scf::ParallelOp>(&op)) {
        if (failed(emitGrid(grid, launches)))
          return failure();
      } else if (onlyReads(&op)) {
        WalkResult r = op.walk([&](memref::LoadOp load) {
          return written.contains(load.getMemRef()) ? WalkResult::interrupt()
                                                    : WalkResult::advance();
        });
        if (r.wasInterrupted())
          return op.emitOpError("reads, outside the kernel's grids, a buffer "
                                "the kernel writes: the GPU target cannot "
                                "recompute it in each launch");
        prologue.insert(&op);
      } else {
          launches.push_back(emit(&op, /*grid=*/1, /*block=*/1, [&](IRMapping &m) {
          b.clone(op, m);
        }));
      }
    }
    return success();
  }

private:
  /// Emits the launch of one grid: a loop over its iterations, strided by
  /// the launch's threads (one per iteration) or blocks (rows).
  LogicalResult emitGrid(scf::ParallelOp grid, std::vector<KernelLaunch> &launches) {
    std::optional<int64_t> n = getConstantIntValue(grid.getUpperBound()[0]);
    std::optional<int64_t> lo = getConstantIntValue(grid.getLowerBound()[0]);
    std::optional<int64_t> step = getConstantIntValue(grid.getStep()[0]);
    if (grid.getNumLoops() != 1 || !n || lo != 0 || step != 1)
      return grid.emitOpError("a kernel grid must be one loop over [0, n)");
    auto map = grid->getAttrOfType<StringAttr>("fbt.map");
    bool rows = map && map.getValue() == "rows";
    // A thread's iterations: `per` consecutive ones (elementwise grids
    // large enough to fill the GPU anyway; buffers are 16-byte aligned, see
    // `emit`), and at most `most` threads per block: the kernel's knobs, or
    // their defaults (KernelConfig.h).
    KernelConfig config =
        configFromAttr(kernel->getAttrOfType<DictionaryAttr>(kConfigAttr));
    int64_t vector = config.count(Knob::PerThread) ? config[Knob::PerThread] : kGpuPerThread;
    int64_t most =
        config.count(Knob::BlockThreads) ? config[Knob::BlockThreads] : kGpuBlockThreads;
    int64_t per = !rows && *n % vector == 0 && *n >= 1024 ? vector : 1;
    int64_t units = *n / per; // what the threads or blocks stride over
    int64_t block, blocks;
    if (rows) {
      block = grid->getAttrOfType<IntegerAttr>("fbt.threads").getInt();
      blocks = std::min(*n, kMaxGrid);
    } else {
      block = std::min(most, std::max<int64_t>(32, (units + 31) / 32 * 32));
      blocks = std::min((units + block - 1) / block, kMaxGrid);
    }
    launches.push_back(emit(grid, blocks, block, [&](IRMapping &m) {
      Location loc = grid.getLoc();
      auto index = [&](int64_t v) -> Value {
        return arith::ConstantIndexOp::create(b, loc, v);
      };
      Value bid = gpu::BlockIdOp::create(b, loc, gpu::Dimension::x);
      Value start = bid, stride = index(blocks);
      if (!rows) {
        Value tid = gpu::ThreadIdOp::create(b, loc, gpu::Dimension::x);
        start = arith::AddIOp::create(
            b, loc, arith::MulIOp::create(b, loc, bid, index(block)), tid);
        stride = index(blocks * block);
      }
      // Every thread of a block runs the same iterations of a rows grid, so
      // the barriers inside are reached uniformly.
      scf::ForOp::create(
          b, loc, start, index(units), stride, ValueRange{},
          [&](OpBuilder &nested, Location, Value unit, ValueRange) {
            OpBuilder::InsertionGuard g(b);
            b.setInsertionPoint(nested.getInsertionBlock(),
                                nested.getInsertionPoint());
            for (int64_t u = 0; u < per; ++u) {
              Value iv = unit;
              if (per > 1)
                iv = arith::AddIOp::create(
                    b, loc, arith::MulIOp::create(b, loc, unit, index(per)),
                    index(u));
              m.map(grid.getInductionVars()[0], iv);
              for (Operation &inner : grid.getBody()->without_terminator())
                if (!isWorkgroupAlloca(&inner))
                  b.clone(inner, m);
            }
            scf::YieldOp::create(b, loc);
          });
    }));
    launches.back().cooperative = rows;
    return success();
  }

  /// A gpu.func taking the kernel's buffers, with the top-level scalars
  /// `root` uses recomputed first, then `body`.
  KernelLaunch emit(Operation *root, int64_t grid, int64_t block,
                 function_ref<void(IRMapping &)> body) {
    std::string name =
        (kernel.getSymName() + "_" + Twine(launchCount++)).str();
    SmallVector<Operation *> allocas;
    root->walk([&](Operation *op) {
      if (isWorkgroupAlloca(op))
        allocas.push_back(op);
    });
    SmallVector<Type> workgroup;
    int64_t sharedBytes = 0;
    for (Operation *a : allocas) {
      auto type = cast<MemRefType>(a->getResult(0).getType());
      workgroup.push_back(type);
      sharedBytes += type.getNumElements() * type.getElementTypeBitWidth() / 8;
    }
    auto fn = gpu::GPUFuncOp::create(b, root->getLoc(), name,
                                     kernel.getFunctionType(), workgroup);
    fn->setAttr(gpu::GPUDialect::getKernelFuncAttrName(), b.getUnitAttr());
    // The kernel's own argument attributes (noalias where its buffers never
    // overlap), and 16-byte alignment: every buffer the runtime passes is at
    // a 64-byte aligned arena offset or a fresh allocation; the one
    // exception, a loss slot of a packed vector, is a single element.
    for (unsigned i = 0; i < kernel.getNumArguments(); ++i) {
      for (NamedAttribute a : kernel.getArgAttrDict(i) ? kernel.getArgAttrDict(i).getValue()
                                                      : ArrayRef<NamedAttribute>())
        if (!a.getName().strref().starts_with("fbt.")) // fbt's own: for the plan
          fn.setArgAttr(i, a.getName(), a.getValue());
      fn.setArgAttr(i, "llvm.align", b.getI64IntegerAttr(16));
    }
    fn->setAttr(gpu::GPUFuncOp::getKnownBlockSizeAttrName(fn->getName()),
                b.getDenseI32ArrayAttr({(int32_t)block, 1, 1}));
    Block &entry = fn.getBody().front();
    OpBuilder::InsertionGuard g(b);
    b.setInsertionPointToStart(&entry);
    IRMapping m;
    for (auto [from, to] : llvm::zip(kernel.getArguments(), fn.getArguments()))
      m.map(from, to);
    for (auto [a, attribution] :
         llvm::zip(allocas, fn.getWorkgroupAttributions()))
      m.map(a->getResult(0), attribution);
    for (Operation *op : neededPrologue(root))
      b.clone(*op, m);
    body(m);
    gpu::ReturnOp::create(b, root->getLoc());
    b.setInsertionPointAfter(fn);
    KernelLaunch launch;
    launch.entry = name;
    launch.grid[0] = (uint32_t)grid;
    launch.block[0] = (uint32_t)block;
    launch.sharedBytes = (uint32_t)sharedBytes;
    return launch;
  }

  /// The prologue ops `root` depends on, in program order.
  SmallVector<Operation *> neededPrologue(Operation *root) {
    llvm::SetVector<Operation *> needed;
    SmallVector<Value> work;
    root->walk([&](Operation *op) {
      for (Value v : op->getOperands())
        work.push_back(v);
    });
    while (!work.empty()) {
      Operation *def = work.pop_back_val().getDefiningOp();
      if (!def || !prologue.contains(def) || !needed.insert(def))
        continue;
      def->walk([&](Operation *op) {
        for (Value v : op->getOperands())
          work.push_back(v);
      });
    }
    SmallVector<Operation *> ordered;
    for (Operation *op : prologue)
      if (needed.contains(op))
        ordered.push_back(op);
    return ordered;
  }

  func::FuncOp kernel;
  OpBuilder b;
  llvm::SetVector<Operation *> prologue;
  int launchCount = 0;
};
} // namespace

FailureOr<GpuLaunchTable> mlir::fbt::outlineGpuKernels(ModuleOp module) {
  SmallVector<func::FuncOp> kernels;
  for (auto fn : module.getOps<func::FuncOp>())
    if (fn->hasAttr("fbt.kernel"))
      kernels.push_back(fn);
  OpBuilder b(module.getContext());
  b.setInsertionPointToEnd(module.getBody());
  auto gpuModule = gpu::GPUModuleOp::create(b, module.getLoc(), "fbt_kernels");
  module->setAttr(gpu::GPUDialect::getContainerModuleAttrName(),
                  b.getUnitAttr());
  GpuLaunchTable table;
  for (func::FuncOp fn : kernels) {
    std::vector<KernelLaunch> &launches = table[fn.getSymName().str()];
    if (failed(Outliner(fn, gpuModule).run(launches)))
      return failure();
    if (launches.empty())
      return fn.emitError("kernel has no work for the GPU"), failure();
    fn.erase();
  }
  return table;
}
