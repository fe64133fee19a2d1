//===- SessionTest.cpp - a bundle's parameters and compiled steps ---------===//
//
// On the fixture's tiny bundle: init is a function of the seed, a train step
// updates the weights and lowers the loss on its own batch, evaluation
// reports one loss per pass, and a checkpoint restores every parameter.
//
//===----------------------------------------------------------------------===//

#include "runtime/session/Session.h"
#include "runtime/base/Error.h"
#include "runtime/base/IgnoredTarget.h"

#include "test/runtime/TempDir.h"
#include "test/runtime/TinyBundle.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

using namespace fbt;

namespace {

/// One training batch of the bundle's shape: a repeating pattern, so a
/// few steps can learn it.
struct Batch {
  std::vector<int32_t> ids, targets;
  explicit Batch(const Session &s) {
    int64_t n = s.model().training.batchSize * s.model().training.sequenceLength;
    for (int64_t i = 0; i < n; ++i) {
      ids.push_back(int32_t(1 + i % 7));
      targets.push_back(int32_t(1 + (i + 1) % 7));
    }
  }
};

TEST(SessionTest, InitIsAFunctionOfTheSeed) {
  FBT_TEST_BUNDLE_OR_SKIP(bundle);
  Session a(bundle), b(bundle);
  a.initialize(7);
  b.initialize(7);
  EXPECT_EQ(a.parameter(0), b.parameter(0));
  b.initialize(8);
  EXPECT_NE(a.parameter(0), b.parameter(0));
}

TEST(SessionTest, TrainStepsLowerTheLossOnTheirBatch) {
  FBT_TEST_BUNDLE_OR_SKIP(bundle);
  Session s(bundle);
  s.initialize(7);
  Batch batch(s);
  std::vector<float> before = s.parameter(0);
  StepResult first = s.trainStep(1, batch.ids.data(), batch.targets.data(), 1, 1e-2f);
  StepResult last = first;
  for (uint64_t step = 2; step <= 5; ++step)
    last = s.trainStep(1, batch.ids.data(), batch.targets.data(), step, 1e-2f);
  EXPECT_TRUE(std::isfinite(first.loss));
  EXPECT_LT(last.loss, first.loss);
  EXPECT_GT(first.gradNorm, 0);
  EXPECT_NE(s.parameter(0), before);
}

TEST(SessionTest, AStepRefusesAnIdOutsideTheVocabulary) {
  FBT_TEST_BUNDLE_OR_SKIP(bundle);
  Session s(bundle);
  s.initialize(7);
  int64_t vocab = s.model().vocabSize, width = s.model().training.sequenceLength;
  Batch batch(s);
  batch.targets[3] = kIgnoredTarget; // a masked target is not an id
  std::vector<float> before = s.parameter(0);
  auto expectRefused = [&](const std::string &what) {
    try {
      s.trainStep(1, batch.ids.data(), batch.targets.data(), 1, 1e-2f);
      ADD_FAILURE() << "a train step took " << what;
    } catch (const RuntimeError &e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  batch.ids[width + 5] = int32_t(vocab);
  expectRefused("input_ids: token id " + std::to_string(vocab) + " at row 1, position 5 is "
                "outside the vocabulary of " + std::to_string(vocab));
  batch.ids[width + 5] = 1;
  batch.targets[2] = -7;
  expectRefused("targets: token id -7 at row 0, position 2");
  EXPECT_EQ(s.parameter(0), before); // nothing ran
  batch.targets[2] = 1;
  EXPECT_TRUE(std::isfinite(s.trainStep(1, batch.ids.data(), batch.targets.data(), 1,
                                        1e-2f).loss));
}

TEST(SessionTest, EvaluationReportsEveryPass) {
  FBT_TEST_BUNDLE_OR_SKIP(bundle);
  Session s(bundle);
  s.initialize(7);
  Batch batch(s);
  int64_t k = s.evalPasses();
  ASSERT_GT(k, 1); // the tiny spec has a feedback path
  StepResult r = s.evalStep(k, batch.ids.data(), batch.targets.data());
  ASSERT_EQ((int64_t)r.passLosses.size(), k);
  for (float l : r.passLosses)
    EXPECT_TRUE(std::isfinite(l));
  // Random weights: every pass near ln V, the loss of a uniform guess.
  EXPECT_NEAR(r.passLosses[0], std::log(float(s.model().vocabSize)), 1.0);
}

TEST(SessionTest, ACheckpointRestoresEveryParameter) {
  FBT_TEST_BUNDLE_OR_SKIP(bundle);
  test::TempDir dir;
  Session a(bundle);
  a.initialize(7);
  std::string path = dir.path() + "/a.safetensors";
  a.saveCheckpoint(path);
  Session b(bundle);
  b.initialize(99);
  b.loadCheckpoint(path);
  for (size_t i = 0; i < a.bundle().params().size(); ++i)
    EXPECT_EQ(a.parameter(i), b.parameter(i)) << a.bundle().params()[i].name;
}

} // namespace
