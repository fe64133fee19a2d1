//===- KernelThreads.cpp - kernels' OpenMP calls through the runtime's table ===//

#include "codegen/cpu/KernelThreads.h"

#include "runtime/format/KernelThreads.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/IR/Constants.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"

namespace mlir::fbt {
using namespace ::fbt::kernel_threads;

namespace {

/// Whether the constant argument `i` of `call` is in [lo, hi]; names what
/// it is in `error` where not.
bool constantIn(llvm::CallInst *call, unsigned i, int64_t lo, int64_t hi, const char *what,
                std::string &error) {
  auto *c = llvm::dyn_cast<llvm::ConstantInt>(call->getArgOperand(i));
  if (c && c->getSExtValue() >= lo && c->getSExtValue() <= hi)
    return true;
  error = std::string("the kernels' ") + what + " is " +
          (c ? std::to_string(c->getSExtValue()) : std::string("not a constant")) +
          ", which fbt's CPU thread team does not take";
  return false;
}

/// Checks what the runtime's entry `e` assumes of `call`.
bool checkCall(Entry e, llvm::CallInst *call, std::string &error) {
  static_assert(kStaticChunked + 1 == kStatic, "the static schedules are one range");
  if (e == ForkCall)
    return constantIn(call, 1, 0, kMaxForkArgs, "fork's argument count", error);
  if (e == ForStaticInit8u)
    return constantIn(call, 2, kStaticChunked, kStatic, "loop schedule", error) &&
           constantIn(call, 7, 1, 1, "loop increment", error);
  return true;
}
} // namespace

bool routeKernelThreads(llvm::Module &m, std::string &error) {
  for (llvm::Function &f : m)
    if (f.getName().starts_with("__kmpc_") && !f.use_empty() &&
        !llvm::is_contained(kOpenMpNames, f.getName())) {
      error = "the kernels call the OpenMP entry '" + f.getName().str() +
              "', which fbt's CPU thread team does not provide";
      return false;
    }
  llvm::GlobalVariable *table = nullptr;
  llvm::PointerType *ptr = llvm::PointerType::getUnqual(m.getContext());
  llvm::ArrayType *tableType = llvm::ArrayType::get(ptr, kEntries);
  for (unsigned e = 0; e < kEntries; ++e) {
    llvm::Function *f = m.getFunction(kOpenMpNames[e]);
    if (!f)
      continue;
    for (llvm::User *user : llvm::make_early_inc_range(f->users())) {
      auto *call = llvm::dyn_cast<llvm::CallInst>(user);
      if (!call || call->getCalledOperand() != f) {
        error = "the kernels use '" + f->getName().str() + "' other than by calling it";
        return false;
      }
      if (!checkCall(Entry(e), call, error))
        return false;
      if (!table)
        table = new llvm::GlobalVariable(m, tableType, /*isConstant=*/false,
                                         llvm::GlobalValue::ExternalLinkage,
                                         llvm::Constant::getNullValue(tableType), kTable);
      llvm::IRBuilder<> b(call);
      llvm::Value *slot = b.CreateConstInBoundsGEP2_32(tableType, table, 0, e);
      call->setCalledOperand(b.CreateLoad(ptr, slot, kOpenMpNames[e]));
    }
    f->eraseFromParent();
  }
  return true;
}

} // namespace mlir::fbt
