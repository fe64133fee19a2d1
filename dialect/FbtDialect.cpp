//===- FbtDialect.cpp - the fbt dialect ---------------------------------===//
#include "dialect/FbtDialect.h"
#include "dialect/FbtOps.h"
#include "runtime/format/Kinds.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Interfaces/FunctionInterfaces.h"

using namespace mlir;
using namespace mlir::fbt;

#include "dialect/FbtOpsDialect.cpp.inc"

void FbtDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialect/FbtOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Discardable attributes
//
// On functions:
//   fbt.step = "train"|"grads"|"eval"|"prefill"|"decode"   a compiled step
//                                        (::fbt::StepKind, runtime/format/Kinds.h)
//   fbt.passes = K (>= 1)              the passes a step runs
//   fbt.differentiated, fbt.kernels    (unit) fbt-autodiff, fbt-to-kernels ran
//   fbt.optimizer = "adamw"            fbt-optimizer appended its update
//   fbt.kernel                         (unit) a generated kernel
//   fbt.config = {knob = n, ..}        the knobs it was built with
//                                      (codegen/kernels/KernelConfig.h)
//   fbt.variant_of = @kernel           another build of @kernel, which
//                                      may serve its calls (--tune-space)
// On the module: fbt.model = {..}      the model's resolved config
// On a kernel's grid (scf.parallel):
//   fbt.map = "rows", fbt.threads = T  one GPU block of T threads per row
//                                      (T a multiple of 32, at most 1024)
// On step arguments: fbt.name = "..", fbt.param, fbt.decay (unit)
// On kernel arguments: fbt.early_write (unit) a result the kernel writes
//                    before it has last read its operands (Kernels.h)
// On step results:   fbt.name = "..", fbt.updates = i (the argument i it
//                    replaces, of the same type)
// On in-place ops:   fbt.shard = "<param>" (ZeRO-1: runs on the parameter's
//                    owner only; elsewhere each result is its tied operand)
//===----------------------------------------------------------------------===//

namespace {
InFlightDiagnostic badAttr(Operation *op, NamedAttribute attr, const Twine &want) {
  return op->emitOpError() << "attribute '" << attr.getName().getValue()
                           << "' must be " << want;
}
} // namespace

LogicalResult FbtDialect::verifyOperationAttribute(Operation *op,
                                                   NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  Attribute value = attr.getValue();
  // Functions keep their attributes as they are lowered (llvm.func, gpu.func).
  bool isFunc = isa<FunctionOpInterface>(op);
  if (name == "fbt.step") {
    auto s = dyn_cast<StringAttr>(value);
    if (!isFunc || !s || !::fbt::parseKind<::fbt::StepKind>(s.getValue().str()))
      return badAttr(op, attr, "one of " + ::fbt::kindNames<::fbt::StepKind>() +
                                   " on a function");
    return success();
  }
  if (name == "fbt.passes") {
    auto k = dyn_cast<IntegerAttr>(value);
    if (!isFunc || !k || k.getInt() < 1)
      return badAttr(op, attr, "an integer >= 1 on a function");
    return success();
  }
  if (name == "fbt.differentiated" || name == "fbt.kernels" || name == "fbt.kernel") {
    if (!isFunc || !isa<UnitAttr>(value))
      return badAttr(op, attr, "a unit attribute on a function");
    return success();
  }
  if (name == "fbt.optimizer") {
    auto s = dyn_cast<StringAttr>(value);
    if (!isFunc || !s || s.getValue() != "adamw")
      return badAttr(op, attr, "\"adamw\" on a function");
    return success();
  }
  if (name == "fbt.model") {
    if (!isa<ModuleOp>(op) || !isa<DictionaryAttr>(value))
      return badAttr(op, attr, "a dictionary on the module");
    return success();
  }
  if (name == "fbt.map") {
    auto s = dyn_cast<StringAttr>(value);
    if (!isa<scf::ParallelOp>(op) || !s || s.getValue() != "rows" ||
        !op->hasAttr("fbt.threads"))
      return badAttr(op, attr, "\"rows\" on an scf.parallel, with fbt.threads");
    return success();
  }
  if (name == "fbt.threads") {
    auto t = dyn_cast<IntegerAttr>(value);
    if (!isa<scf::ParallelOp>(op) || !t || t.getInt() < 32 || t.getInt() > 1024 ||
        t.getInt() % 32 || !op->hasAttr("fbt.map"))
      return badAttr(op, attr, "a multiple of 32 from 32 to 1024 on an "
                               "scf.parallel with fbt.map");
    return success();
  }
  if (name == "fbt.config") {
    auto d = dyn_cast<DictionaryAttr>(value);
    bool counts = d && llvm::all_of(d, [](NamedAttribute a) {
      auto i = dyn_cast<IntegerAttr>(a.getValue());
      return i && i.getInt() >= 0;
    });
    if (!isFunc || !op->hasAttr("fbt.kernel") || !counts)
      return badAttr(op, attr, "a dictionary of counts on a kernel (fbt.kernel)");
    return success();
  }
  if (name == "fbt.variant_of") {
    if (!isFunc || !op->hasAttr("fbt.kernel") || !isa<FlatSymbolRefAttr>(value))
      return badAttr(op, attr, "a symbol (the kernel) on a kernel (fbt.kernel)");
    return success();
  }
  if (name == "fbt.shard") {
    // ZeRO-1: the op runs on the owner of this parameter only, its results
    // elsewhere being their tied operands, so it must have some.
    auto s = dyn_cast<StringAttr>(value);
    auto inPlace = dyn_cast<InPlaceOpInterface>(op);
    bool tied = inPlace && op->getNumResults() > 0 &&
                llvm::any_of(llvm::seq(op->getNumResults()),
                             [&](unsigned r) { return inPlace.getTiedOperand(r) >= 0; });
    if (!s || s.getValue().empty() || !tied)
      return badAttr(op, attr, "a parameter name on an op whose results have tied operands");
    return success();
  }
  return op->emitOpError() << "unknown attribute '" << name << "'";
}

LogicalResult FbtDialect::verifyRegionArgAttribute(Operation *op, unsigned,
                                                   unsigned, NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == "fbt.name") {
    if (!isa<StringAttr>(attr.getValue()))
      return badAttr(op, attr, "a string");
    return success();
  }
  if (name == "fbt.param" || name == "fbt.decay") {
    if (!isa<UnitAttr>(attr.getValue()))
      return badAttr(op, attr, "a unit attribute");
    return success();
  }
  if (name == "fbt.early_write") {
    if (!isa<UnitAttr>(attr.getValue()))
      return badAttr(op, attr, "a unit attribute");
    if (!op->hasAttr("fbt.kernel"))
      return op->emitOpError() << "attribute 'fbt.early_write' marks an argument of a "
                                  "kernel (fbt.kernel)";
    return success();
  }
  return op->emitOpError() << "unknown argument attribute '" << name << "'";
}

LogicalResult FbtDialect::verifyRegionResultAttribute(Operation *op, unsigned,
                                                      unsigned result,
                                                      NamedAttribute attr) {
  StringRef name = attr.getName().getValue();
  if (name == "fbt.name") {
    if (!isa<StringAttr>(attr.getValue()))
      return badAttr(op, attr, "a string");
    return success();
  }
  if (name == "fbt.updates") {
    auto fn = dyn_cast<func::FuncOp>(op);
    auto i = dyn_cast<IntegerAttr>(attr.getValue());
    if (!fn || !i || i.getInt() < 0 || i.getInt() >= fn.getNumArguments())
      return badAttr(op, attr, "the number of one of the function's arguments");
    if (fn.getArgumentTypes()[i.getInt()] != fn.getResultTypes()[result])
      return badAttr(op, attr, "an argument of the result's type");
    return success();
  }
  return op->emitOpError() << "unknown result attribute '" << name << "'";
}
