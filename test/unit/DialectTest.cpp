//===- DialectTest.cpp - building fbt IR from C++ ---------------------------===//
//
// The frontend builds fbt IR through the C++ API; these tests pin down that
// the builders produce verifiable ops and that the verifiers speak up.
//
//===----------------------------------------------------------------------===//

#include "dialect/FbtOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {
struct DialectTest : ::testing::Test {
  MLIRContext ctx;
  OpBuilder b{&ctx};
  Location loc = UnknownLoc::get(&ctx);
  OwningOpRef<ModuleOp> module;
  func::FuncOp fn;

  DialectTest() {
    ctx.loadDialect<fbt::FbtDialect, func::FuncDialect>();
    module = ModuleOp::create(loc);
  }

  /// A function taking `args`; the builder is left inside its body.
  SmallVector<Value> makeFunc(ArrayRef<Type> args) {
    b.setInsertionPointToEnd(module->getBody());
    fn = func::FuncOp::create(b, loc, "f", b.getFunctionType(args, {}));
    Block *entry = fn.addEntryBlock();
    b.setInsertionPointToEnd(entry);
    func::ReturnOp::create(b, loc);
    b.setInsertionPointToStart(entry);
    return SmallVector<Value>(entry->getArguments());
  }

  RankedTensorType f32(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, b.getF32Type());
  }

  /// Verifies the module and returns the first error message ("" if none).
  std::string verifyError() {
    std::string msg;
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &d) {
      if (msg.empty())
        msg = d.str();
      return success();
    });
    (void)verify(*module);
    return msg;
  }
};
} // namespace

TEST_F(DialectTest, RMSNormBuildsAndVerifies) {
  auto args = makeFunc({f32({2, 8, 64}), f32({64})});
  fbt::RMSNormOp::create(b, loc, f32({2, 8, 64}), args[0], args[1],
                         b.getF64FloatAttr(1e-5));
  EXPECT_EQ(verifyError(), "");
}

TEST_F(DialectTest, RMSNormNamesTheScale) {
  auto args = makeFunc({f32({2, 8, 64}), f32({32})});
  fbt::RMSNormOp::create(b, loc, f32({2, 8, 64}), args[0], args[1],
                         b.getF64FloatAttr(1e-5));
  EXPECT_EQ(verifyError(),
            "'fbt.rmsnorm' op operand #1 ('scale') must have shape [64] (the "
            "last dim of the input), got [32]");
}

TEST_F(DialectTest, FeedbackFusionDefaultsToGlu) {
  auto args = makeFunc({f32({1, 4, 8}), f32({8, 8}), f32({8, 8})});
  auto op = fbt::FeedbackOp::create(b, loc, f32({1, 4, 8}), args[0], args[0],
                                    ValueRange{args[1], args[2]});
  EXPECT_EQ(op.getFusion(), fbt::FusionKind::glu);
  EXPECT_EQ(verifyError(), "");
}

TEST_F(DialectTest, DynamicDimsMatchAnything) {
  auto args = makeFunc({f32({ShapedType::kDynamic, 8, 64}), f32({64})});
  fbt::RMSNormOp::create(b, loc, f32({ShapedType::kDynamic, 8, 64}), args[0],
                         args[1], b.getF64FloatAttr(1e-5));
  EXPECT_EQ(verifyError(), "");
}

