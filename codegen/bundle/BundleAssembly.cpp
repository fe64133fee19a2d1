//===- BundleAssembly.cpp - a compiled module as a bundle's contents ------===//

#include "codegen/bundle/BundleAssembly.h"

#include "codegen/kernels/Kernels.h"
#include "codegen/plan/StepPlan.h"
#include "codegen/simt/SimtTarget.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::fbt {

namespace {
/// Lists `fn` in the variant table if the module holds other builds of
/// its kernel (--tune-space): under its own name if it is a variant, under
/// the kernel (the default, listed first) once a variant names it.
void recordVariant(func::FuncOp fn, ::fbt::VariantTable &variants) {
  auto config = [](func::FuncOp f) {
    std::map<std::string, int64_t> c;
    for (auto [knob, value] : configFromAttr(f->getAttrOfType<DictionaryAttr>(kConfigAttr)))
      c[knobName(knob).str()] = value;
    return c;
  };
  auto of = fn->getAttrOfType<FlatSymbolRefAttr>(kVariantOfAttr);
  if (!of)
    return;
  ::fbt::KernelVariants &table = variants[of.getValue().str()];
  if (table.builds.empty()) {
    auto base = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(fn, of);
    table.builds.push_back({of.getValue().str(), config(base)});
    for (Type t : base.getArgumentTypes())
      table.args.push_back(planDType(t));
  }
  table.builds.push_back({fn.getSymName().str(), config(fn)});
}

/// The kernels compiled for the target: the manifest's target and
/// launches, and the binaries.
LogicalResult compileKernels(ModuleOp module, const BundleBuild &build,
                             ::fbt::BundleManifest &manifest, ::fbt::BundleBlobs &blobs) {
  ::fbt::BundleTarget &target = manifest.target;
  target.kind = build.target;
  switch (build.target) {
  case ::fbt::TargetKind::Nvptx: {
    FailureOr<NvptxBinary> bin = compileKernelsForNvptx(module, build.nvptx);
    if (failed(bin))
      return failure();
    target.chip = build.nvptx.chip;
    target.features = build.nvptx.features;
    target.storage = build.storage;
    blobs.push_back({"kernels.ptx", bin->ptx});
    if (!bin->cubin.empty())
      blobs.push_back({"kernels.cubin", bin->cubin});
    manifest.launches = bin->launches;
    return success();
  }
  case ::fbt::TargetKind::Simt: {
    FailureOr<SimtBinary> bin = compileKernelsForSimt(module);
    if (failed(bin))
      return failure();
    target.triple = cpuTargetTriple();
    target.arch = cpuTargetArch();
    target.storage = build.storage;
    blobs.push_back({"kernels.so", bin->library});
    manifest.launches = bin->launches;
    return success();
  }
  case ::fbt::TargetKind::Cpu: {
    FailureOr<std::string> library = compileKernelsForCpu(module, build.cpu);
    if (failed(library))
      return failure();
    target.triple = cpuTargetTriple();
    target.arch = cpuTargetArch();
    target.chip = resolvedCpu(build.cpu);
    target.features = cpuTargetFeatures(build.cpu);
    target.int8Layout = interleavesInt8(build.int8Activations)
                            ? ::fbt::Int8Layout::Interleaved16
                            : ::fbt::Int8Layout::Rows;
    blobs.push_back({"kernels.so", *library});
    return success();
  }
  }
  return failure();
}
} // namespace

FailureOr<AssembledBundle> assembleBundle(ModuleOp module,
                                          std::map<std::string, ::fbt::StepPlan> steps,
                                          int64_t largestArena, const BundleBuild &build) {
  AssembledBundle out;
  ::fbt::BundleManifest &manifest = out.manifest;
  manifest.tuned = build.tuned;
  if (failed(compileKernels(module, build, manifest, out.blobs)))
    return failure();
  manifest.params = build.params;
  for (auto fn : module.getOps<func::FuncOp>()) {
    if (!fn->hasAttr("fbt.kernel"))
      continue;
    manifest.kernels.push_back(fn.getSymName().str());
    recordVariant(fn, manifest.variants);
    for (unsigned i = 0; i < fn.getNumArguments(); ++i)
      if (fn.getArgAttr(i, kEarlyWriteAttr))
        manifest.earlyWrites[fn.getSymName().str()].push_back(i);
  }
  manifest.model = build.model;
  manifest.largestArenaBytes = largestArena;
  manifest.steps = std::move(steps);
  return out;
}

std::string bundleTargetName(const BundleBuild &build) {
  switch (build.target) {
  case ::fbt::TargetKind::Nvptx:
    return "nvptx:" + build.nvptx.chip + ":" + build.storage;
  case ::fbt::TargetKind::Simt:
    return "simt:" + build.storage;
  case ::fbt::TargetKind::Cpu:
    return "cpu:" + resolvedCpu(build.cpu);
  }
  return "";
}

} // namespace mlir::fbt
