//===- KernelThreadsTest.cpp - kernels' OpenMP calls through the table ----===//

#include "codegen/cpu/KernelThreads.h"

#include "runtime/format/KernelThreads.h"

#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/SourceMgr.h"

#include <gtest/gtest.h>

namespace {
/// A module whose one function makes a fork and a static loop init, the
/// latter with `schedule`, then calls `extra` (another OpenMP entry) if set.
std::unique_ptr<llvm::Module> kernels(llvm::LLVMContext &ctx, int schedule,
                                      const std::string &extra = "") {
  std::string ir = R"(
declare void @__kmpc_fork_call(ptr, i32, ptr, ...)
declare void @__kmpc_for_static_init_8u(ptr, i32, i32, ptr, ptr, ptr, ptr, i64, i64)
declare i32 @__kmpc_global_thread_num(ptr)
define void @k0(ptr %s) {
  %t = call i32 @__kmpc_global_thread_num(ptr null)
  call void (ptr, i32, ptr, ...) @__kmpc_fork_call(ptr null, i32 1, ptr null, ptr %s)
  call void @__kmpc_for_static_init_8u(ptr null, i32 %t, i32 )" +
                   std::to_string(schedule) +
                   R"(, ptr null, ptr null, ptr null, ptr null, i64 1, i64 0)
)";
  if (!extra.empty())
    ir += "  call void @" + extra + "(ptr null, i32 %t)\n";
  ir += "  ret void\n}\n";
  if (!extra.empty())
    ir += "declare void @" + extra + "(ptr, i32)\n";
  llvm::SMDiagnostic diag;
  std::unique_ptr<llvm::Module> m = llvm::parseAssemblyString(ir, diag, ctx);
  EXPECT_TRUE(m) << diag.getMessage().str();
  return m;
}
} // namespace

TEST(KernelThreadsTest, RoutesEveryCallThroughTheTable) {
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> m = kernels(ctx, fbt::kernel_threads::kStatic);
  std::string error;
  ASSERT_TRUE(mlir::fbt::routeKernelThreads(*m, error)) << error;
  llvm::GlobalVariable *table = m->getGlobalVariable(fbt::kernel_threads::kTable);
  ASSERT_NE(table, nullptr);
  EXPECT_EQ(table->getValueType()->getArrayNumElements(), fbt::kernel_threads::kEntries);
  for (const char *name : fbt::kernel_threads::kOpenMpNames)
    EXPECT_EQ(m->getFunction(name), nullptr) << name << " is still declared";
  int indirect = 0;
  for (llvm::Instruction &i : m->getFunction("k0")->getEntryBlock())
    if (auto *call = llvm::dyn_cast<llvm::CallInst>(&i))
      indirect += call->isIndirectCall();
  EXPECT_EQ(indirect, 3);
}

TEST(KernelThreadsTest, RefusesAScheduleTheTeamDoesNotTake) {
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> m = kernels(ctx, 35); // kmp_sch_dynamic_chunked
  std::string error;
  EXPECT_FALSE(mlir::fbt::routeKernelThreads(*m, error));
  EXPECT_EQ(error, "the kernels' loop schedule is 35, which fbt's CPU thread team does "
                   "not take");
}

TEST(KernelThreadsTest, RefusesAnotherOpenMpEntry) {
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> m = kernels(ctx, fbt::kernel_threads::kStatic, "__kmpc_barrier");
  std::string error;
  EXPECT_FALSE(mlir::fbt::routeKernelThreads(*m, error));
  EXPECT_EQ(error, "the kernels call the OpenMP entry '__kmpc_barrier', which fbt's CPU "
                   "thread team does not provide");
}

TEST(KernelThreadsTest, SerialKernelsGetNoTable) {
  llvm::LLVMContext ctx;
  llvm::SMDiagnostic diag;
  std::unique_ptr<llvm::Module> m =
      llvm::parseAssemblyString("define void @k0() {\n  ret void\n}\n", diag, ctx);
  ASSERT_TRUE(m);
  std::string error;
  ASSERT_TRUE(mlir::fbt::routeKernelThreads(*m, error)) << error;
  EXPECT_EQ(m->getGlobalVariable(fbt::kernel_threads::kTable), nullptr);
}
