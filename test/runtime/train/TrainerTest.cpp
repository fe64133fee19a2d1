//===- TrainerTest.cpp - a short run, its records and its resume ----------===//
//
// On the fixture's tiny bundle and the embedded corpus: a run of a few steps
// logs one record per step and a validation, writes its checkpoint and
// run.json, and a resume from it continues the same schedule to the end.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/Trainer.h"

#include "runtime/base/Error.h"
#include "runtime/base/FileIO.h"

#include "test/runtime/TempDir.h"
#include "test/runtime/TinyBundle.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <sstream>
#include <vector>

using namespace fbt;

namespace {

/// Records what the trainer reports.
struct Recorder : TrainObserver {
  std::vector<StepRecord> steps;
  std::vector<EvalRecord> evals;
  void stepDone(const StepRecord &r) override { steps.push_back(r); }
  void evaluated(const EvalRecord &r) override { evals.push_back(r); }
};

TrainOptions shortRun(const std::string &out, int64_t steps) {
  TrainOptions o;
  o.steps = steps;
  o.evalEvery = steps;
  o.evalBatches = 1;
  o.outDir = out;
  return o;
}

TEST(TrainerTest, AShortRunLogsEveryStepAndSavesItsCheckpoint) {
  FBT_TEST_BUNDLE_OR_SKIP(bundle);
  test::TempDir dir;
  Session session(bundle);
  Trainer trainer(session, shortRun(dir.path() + "/run", 4));
  EXPECT_EQ(trainer.passSchedule().totalSteps, 4);
  Recorder seen;
  TrainSummary summary = trainer.run(&seen);
  EXPECT_TRUE(summary.finished);
  ASSERT_EQ(seen.steps.size(), 4u);
  for (size_t i = 0; i < seen.steps.size(); ++i) {
    EXPECT_EQ(seen.steps[i].step, int64_t(i + 1));
    EXPECT_EQ(seen.steps[i].passes, trainer.passSchedule().passesAt(int64_t(i)));
    EXPECT_TRUE(std::isfinite(seen.steps[i].loss));
  }
  ASSERT_FALSE(seen.evals.empty());
  EXPECT_EQ(seen.evals.back().step, 4);
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/run/latest.safetensors"));
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/run/run.json"));
  std::istringstream metrics(readFile(dir.path() + "/run/metrics.jsonl"));
  int lines = 0;
  for (std::string line; std::getline(metrics, line);)
    lines += !line.empty();
  EXPECT_GE(lines, 5); // four steps and at least one validation
}

TEST(TrainerTest, AResumeContinuesTheSameSchedule) {
  FBT_TEST_BUNDLE_OR_SKIP(bundle);
  test::TempDir dir;
  std::string out = dir.path() + "/run";
  {
    Session session(bundle);
    TrainOptions o = shortRun(out, 6);
    o.stopAfter = 3;
    Trainer trainer(session, o);
    TrainSummary s = trainer.run();
    EXPECT_FALSE(s.finished);
    EXPECT_EQ(s.endStep, 3);
  }
  Session session(bundle);
  TrainOptions o;
  o.resume = out;
  Trainer resumed(session, o);
  EXPECT_EQ(resumed.startStep(), 3);
  EXPECT_EQ(resumed.settings().steps, 6);
  Recorder seen;
  TrainSummary s = resumed.run(&seen);
  EXPECT_TRUE(s.finished);
  ASSERT_EQ(seen.steps.size(), 3u);
  EXPECT_EQ(seen.steps.front().step, 4);
}

TEST(TrainerTest, BadSettingsAreRefusedByName) {
  FBT_TEST_BUNDLE_OR_SKIP(bundle);
  test::TempDir dir;
  Session session(bundle);
  TrainOptions o = shortRun(dir.path() + "/run", 0);
  try {
    Trainer trainer(session, o);
    FAIL() << "--steps 0 was accepted";
  } catch (const RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find("steps"), std::string::npos) << e.what();
  }
}

} // namespace
