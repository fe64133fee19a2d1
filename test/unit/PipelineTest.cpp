//===- PipelineTest.cpp - the training pipeline's size laws ---------------===//
//
// The training step's IR grows linearly in K and in L, and the parameters
// are never copied: the step takes the same arguments whatever K is.
//
//===----------------------------------------------------------------------===//

#include "frontend/ModelBuilder.h"
#include "frontend/Spec.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"

#include <gtest/gtest.h>

using namespace mlir;

namespace {
struct StepSize {
  int64_t ops = 0;
  int64_t arguments = 0;
  int64_t paramArguments = 0;
};

/// Compiles a micro model with L layers and measures train_k<K> after the
/// whole training pipeline (every pass trained unless gradPasses > 0).
StepSize measure(int64_t layers, int64_t k, int64_t gradPasses = 0) {
  ::fbt::ModelSpec spec;
  spec.name = "micro";
  spec.vocabSize = 16;
  spec.hiddenSize = 8;
  spec.numHiddenLayers = layers;
  spec.numAttentionHeads = 2;
  spec.intermediateSize = 12;
  spec.maxPositionEmbeddings = 16;
  spec.feedback.depthScaling = 1.0;
  spec.training.batchSize = 2;
  spec.training.sequenceLength = 8;
  spec.training.singlePassFraction = 0;
  spec.training.passes = k;
  spec.training.deepPassFraction = 0;
  spec.training.gradPasses = gradPasses;
  spec.inference.maxPromptLength = 8;
  spec.inference.maxSequenceLength = 16;

  MLIRContext ctx;
  ctx.loadDialect<mlir::fbt::FbtDialect, func::FuncDialect, arith::ArithDialect>();
  OwningOpRef<ModuleOp> module = ::fbt::buildModel(ctx, spec);
  PassManager pm(&ctx);
  mlir::fbt::buildTrainPipeline(pm, mlir::fbt::TrainPipelineOptions());
  EXPECT_TRUE(succeeded(pm.run(*module)));

  auto fn = module->lookupSymbol<func::FuncOp>("train_k" + std::to_string(k));
  EXPECT_TRUE(fn) << "no train_k" << k;
  StepSize size;
  if (!fn)
    return size;
  fn.walk([&](Operation *) { ++size.ops; });
  size.arguments = fn.getNumArguments();
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    size.paramArguments += bool(fn.getArgAttr(i, "fbt.param"));
  return size;
}
} // namespace

TEST(PipelineTest, StepGrowsLinearlyInPasses) {
  StepSize k2 = measure(2, 2), k3 = measure(2, 3), k4 = measure(2, 4),
           k5 = measure(2, 5), k6 = measure(2, 6);
  int64_t perPass = k4.ops - k3.ops;
  EXPECT_GT(perPass, 0);
  EXPECT_EQ(k5.ops - k4.ops, perPass);
  EXPECT_EQ(k6.ops - k5.ops, perPass);
  // At K=2 the auxiliary weight lambda/(K-1) is 1 and its multiply is
  // elided: one op less than the law predicts.
  EXPECT_EQ(k3.ops - k2.ops, perPass + 1);
  // One set of weights whatever K is.
  EXPECT_EQ(k2.paramArguments, k6.paramArguments);
  EXPECT_EQ(k2.arguments, k6.arguments);
}

TEST(PipelineTest, ForwardOnlyPassesCostNoBackward) {
  // grad_passes 2: from K=4 on each extra pass runs forward only, so the
  // step grows by a pass's forward ops, fewer than a trained pass's.
  StepSize k4 = measure(2, 4, 2), k5 = measure(2, 5, 2), k6 = measure(2, 6, 2);
  int64_t forwardPass = k5.ops - k4.ops;
  EXPECT_GT(forwardPass, 0);
  EXPECT_EQ(k6.ops - k5.ops, forwardPass);
  int64_t trainedPass = measure(2, 5).ops - measure(2, 4).ops;
  EXPECT_LT(2 * forwardPass, trainedPass);
  EXPECT_EQ(k4.paramArguments, k6.paramArguments);
}

TEST(PipelineTest, StepGrowsLinearlyInLayers) {
  StepSize l1 = measure(1, 2), l2 = measure(2, 2), l3 = measure(3, 2),
           l4 = measure(4, 2);
  int64_t perLayer = l2.ops - l1.ops;
  EXPECT_GT(perLayer, 0);
  EXPECT_EQ(l3.ops - l2.ops, perLayer);
  EXPECT_EQ(l4.ops - l3.ops, perLayer);
  // Nine tensors per layer; the parameter count is exact, not just linear.
  EXPECT_EQ(l2.paramArguments - l1.paramArguments, 9);
}
