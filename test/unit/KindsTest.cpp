//===- KindsTest.cpp - the IR's kinds against the plans' ------------------===//
//
// The IR's collective reductions (an ODS enum) and the plans' (::fbt::
// Reduction, runtime/format/Kinds.h) are one list in two languages: the
// same names in the same order, so StepPlan.cpp's mapping by name is total.
// The IR's fbt.step is verified against ::fbt::StepKind's names.
//
//===----------------------------------------------------------------------===//

#include "dialect/FbtOps.h"
#include "runtime/format/Kinds.h"

#include <gtest/gtest.h>

namespace {

TEST(KindsTest, ReductionsMatchThePlans) {
  uint32_t last = mlir::fbt::getMaxEnumValForReductionKind();
  EXPECT_EQ(last + 1, ::fbt::detail::KindTable<::fbt::Reduction>::names.size());
  for (uint32_t i = 0; i <= last; ++i) {
    std::optional<mlir::fbt::ReductionKind> kind = mlir::fbt::symbolizeReductionKind(i);
    ASSERT_TRUE(kind);
    std::string name = mlir::fbt::stringifyReductionKind(*kind).str();
    std::optional<::fbt::Reduction> plan = ::fbt::parseKind<::fbt::Reduction>(name);
    ASSERT_TRUE(plan) << name;
    EXPECT_EQ(static_cast<uint32_t>(*plan), i) << name;
  }
}

TEST(KindsTest, NamesRoundTrip) {
  for (::fbt::StepKind k : {::fbt::StepKind::Train, ::fbt::StepKind::Grads,
                            ::fbt::StepKind::Eval, ::fbt::StepKind::Prefill,
                            ::fbt::StepKind::Decode})
    EXPECT_EQ(::fbt::parseKind<::fbt::StepKind>(::fbt::kindName(k)), k);
  EXPECT_EQ(::fbt::parseKind<::fbt::Fusion>("concat"), ::fbt::Fusion::Concat);
  EXPECT_FALSE(::fbt::parseKind<::fbt::Fusion>("gru"));
  EXPECT_EQ(::fbt::kindNames<::fbt::TargetKind>(), "\"cpu\", \"nvptx\", \"simt\"");
}

} // namespace
