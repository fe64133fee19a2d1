//===- TunerTest.cpp - the tuner's choices and its cache -------------------===//
//
// What `fbt tune` decides, with a clock the test controls: the comparison of
// a variant's results with the default's, the choice among timings, the
// interleaved timing loop. And the cache: what is stored reads back, and a
// missing, corrupt, truncated, foreign or stale cache gives the defaults
// with a warning, never an exception; two tuners writing at once keep both
// entries.
//
//===----------------------------------------------------------------------===//

#include "runtime/base/Bf16.h"
#include "runtime/base/Error.h"
#include "runtime/base/FileIO.h"
#include "runtime/tune/Tuner.h"

#include "test/runtime/TempDir.h"
#include "test/runtime/TestManifests.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <sys/wait.h>
#include <unistd.h>

namespace fbt {
namespace {

TEST(TunerTest, ResultsMatchWithinTheTypesTolerance) {
  std::string why;
  float a[4] = {1, -2, 1000, 0}, b[4] = {1.0005f, -2, 1000.5f, 5e-5f};
  EXPECT_TRUE(resultsMatch(DType::F32, a, b, sizeof a, why));
  b[2] = 1002;
  EXPECT_FALSE(resultsMatch(DType::F32, a, b, sizeof a, why));
  EXPECT_NE(why.find("element 2"), std::string::npos) << why;

  float nan = std::numeric_limits<float>::quiet_NaN();
  float n1[2] = {nan, 1}, n2[2] = {nan, 1}, n3[2] = {0, 1};
  EXPECT_TRUE(resultsMatch(DType::F32, n1, n2, sizeof n1, why));
  EXPECT_FALSE(resultsMatch(DType::F32, n1, n3, sizeof n1, why));
  EXPECT_FALSE(resultsMatch(DType::F32, n3, n1, sizeof n1, why));

  int32_t i1[2] = {3, 4}, i2[2] = {3, 5};
  EXPECT_TRUE(resultsMatch(DType::I32, i1, i1, sizeof i1, why));
  EXPECT_FALSE(resultsMatch(DType::I32, i1, i2, sizeof i1, why));

  // bf16: a few of its ulps apart is rounding; 10% is not.
  uint16_t h1[1] = {floatToBf16(3.0f)}, h2[1] = {floatToBf16(3.03f)},
           h3[1] = {floatToBf16(3.3f)};
  EXPECT_TRUE(resultsMatch(DType::BF16, h1, h2, sizeof h1, why));
  EXPECT_FALSE(resultsMatch(DType::BF16, h1, h3, sizeof h1, why));
}

VariantTiming timing(double seconds, std::string rejected = {}) {
  return {"k", {}, seconds, std::move(rejected)};
}

TEST(TunerTest, ChoosesTheFastestOnlyWhenItClearlyWins) {
  EXPECT_EQ(chooseVariant({timing(10), timing(5), timing(7)}), 1u);
  // Within the minimum gain of the default: the default stays.
  EXPECT_EQ(chooseVariant({timing(10), timing(10 / (kMinGain * 0.999))}), 0u);
  EXPECT_EQ(chooseVariant({timing(10), timing(10 / (kMinGain * 1.001))}), 1u);
  // Ties go to the earlier variant, whatever the order they came in.
  EXPECT_EQ(chooseVariant({timing(10), timing(4), timing(4), timing(4)}), 1u);
  // A rejected variant never wins, however fast.
  EXPECT_EQ(chooseVariant({timing(10), timing(-1, "differs"), timing(8)}), 2u);
  EXPECT_EQ(chooseVariant({timing(10), timing(-1, "differs")}), 0u);
  EXPECT_EQ(chooseVariant({timing(0), timing(1)}), 0u); // nothing measured
  EXPECT_EQ(chooseVariant({}), 0u);
}

TEST(TunerTest, MedianIsTheLowerMiddle) {
  EXPECT_EQ(median({3, 1, 2}), 2);
  EXPECT_EQ(median({4, 1, 3, 2}), 2);
  EXPECT_EQ(median({}), 0);
}

TEST(TunerTest, TimesAlternativesInterleavedOnTheInjectedClock) {
  // Each run advances the clock by its alternative's cost, plus a spike on
  // one run of each that the median ignores.
  double now = 0;
  std::vector<double> cost = {3, 1, 2};
  std::vector<int> runs(3, 0);
  std::vector<size_t> order;
  int restores = 0;
  std::vector<double> medians = timeAlternatives(
      3,
      [&](size_t i) {
        order.push_back(i);
        now += cost[i] + (++runs[i] == 3 ? 100 : 0);
      },
      [&] { ++restores; }, [&] { return now; }, /*warmup=*/1, /*repeats=*/5);
  ASSERT_EQ(medians.size(), 3u);
  EXPECT_DOUBLE_EQ(medians[0], 3);
  EXPECT_DOUBLE_EQ(medians[1], 1);
  EXPECT_DOUBLE_EQ(medians[2], 2);
  EXPECT_EQ(restores, 18); // before every run, warm-ups included
  ASSERT_EQ(order.size(), 18u);
  EXPECT_EQ(order[0], 0u); // round robin: 0 1 2 0 1 2 ...
  EXPECT_EQ(order[1], 1u);
  EXPECT_EQ(order[3], 0u);
}

TEST(TunerTest, PutsBackWhatASlowerWorkloadCalls) {
  std::map<std::string, StepTiming> steps = {
      {"train_k1", {1.0, 1.05}},     // slower with the choice
      {"decode:soft", {1.0, 0.9}},   // faster
      {"train_k2", {1.0, 1.019}},    // within the minimum gain: kept
  };
  std::map<std::string, std::set<std::string>> calls = {
      {"train_k1", {"k1_norm", "k2_add", "gemm:8,8,8,n,n,f32,f32,f32"}},
      {"decode:soft", {"k2_add", "k3_loss"}},
      {"train_k2", {"k4_rope"}},
      {"eval_k8", {"k3_loss"}}, // not timed: no verdict
  };
  std::set<std::string> chosen = {"k1_norm", "k3_loss", "k4_rope",
                                  "gemm:8,8,8,n,n,f32,f32,f32"};
  std::map<std::string, std::string> back = choicesToPutBack(steps, calls, chosen);
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back.at("k1_norm"), "made train_k1 slower in the step");
  EXPECT_TRUE(back.count("gemm:8,8,8,n,n,f32,f32,f32"));
  EXPECT_FALSE(back.count("k2_add")); // called, but the default already
  EXPECT_TRUE(choicesToPutBack(steps, calls, {}).empty());
}

//===----------------------------------------------------------------------===//
// The cache
//===----------------------------------------------------------------------===//

Json device(const std::string &name = "test CPU") {
  return Json::object({{"kind", "cpu"}, {"name", name}, {"isa", "avx2"}, {"threads", 2}});
}

TuneEntry entry(const std::string &symbol) {
  TuneEntry e;
  e.model = "0123456789abcdef";
  e.target = "nvptx:sm_90";
  e.tunedAt = "2026-12-02T00:00:00Z";
  e.kernels["k0_a"] = {symbol, {{"row_threads", symbol == "k0_a" ? 256 : 512}}, 1.5};
  e.gemms.push_back({"64,256,768,n,t,bf16,bf16,f32", 2, 1.1});
  return e;
}

/// A GPU bundle whose kernel k0_a has one variant, k0_a__v1.
std::string variantBundle(const test::TempDir &dir) {
  Json m = test::gpuManifest({"k0_a", "k0_a__v1", "k1_b"});
  m["variants"] = Json::object(
      {{"k0_a", Json::object({{"args", Json::array({"f32", "f32"})},
                              {"builds", Json::array({
                                  Json::object({{"symbol", "k0_a"},
                                                {"config", {{"row_threads", 256}}}}),
                                  Json::object({{"symbol", "k0_a__v1"},
                                                {"config", {{"row_threads", 512}}}}),
                              })}})}});
  std::string path = dir.file("v.fbtb");
  writeBundleFile(path, m, {{"kernels.ptx", ".version 8.0\n.target sm_90\n"}});
  return path;
}

TEST(TunerTest, CacheEntriesReadBackAsStored) {
  test::TempDir dir;
  std::string path = dir.file("sub/dir/cache.json"); // directories are made
  storeTuneEntry(path, device(), "aaaa", entry("k0_a__v1"));
  storeTuneEntry(path, device(), "bbbb", entry("k0_a"));
  TuneCache c = readTuneCache(path);
  EXPECT_EQ(c.device, device());
  ASSERT_EQ(c.entries.size(), 2u);
  const TuneEntry &a = c.entries.at("aaaa");
  EXPECT_EQ(a.kernels.at("k0_a").symbol, "k0_a__v1");
  EXPECT_EQ(a.kernels.at("k0_a").config.at("row_threads"), 512);
  EXPECT_DOUBLE_EQ(a.kernels.at("k0_a").speedup, 1.5);
  ASSERT_EQ(a.gemms.size(), 1u);
  EXPECT_EQ(a.gemms[0].algorithm, 2);
  EXPECT_EQ(a.target, "nvptx:sm_90");
  // Another device's file is replaced, not merged.
  storeTuneEntry(path, device("another CPU"), "cccc", entry("k0_a"));
  EXPECT_EQ(readTuneCache(path).entries.size(), 1u);
}

TEST(TunerTest, CachePathsDifferPerDevice) {
  EXPECT_NE(tuneCachePath(device("a"), "/c"), tuneCachePath(device("b"), "/c"));
  EXPECT_EQ(tuneCachePath(device("a"), "/c"), tuneCachePath(device("a"), "/c"));
  EXPECT_EQ(tuneCachePath(device("a"), "/c").rfind("/c/cpu-a-", 0), 0u);
}

TEST(TunerTest, ChoiceAppliesOnlyToTheBundleAndDeviceItWasMadeFor) {
  test::TempDir dir;
  Bundle bundle = Bundle::load(variantBundle(dir));
  std::string path = dir.file("cache.json"), note;
  TuneOptions named{true, path};

  // Missing: nothing, whether named or not.
  EXPECT_TRUE(loadKernelChoice(bundle, device(), named, note).empty());
  EXPECT_TRUE(note.empty());

  storeTuneEntry(path, device(), bundleKey(bundle), entry("k0_a__v1"));
  std::vector<TunedGemm> gemms;
  KernelChoice choice = loadKernelChoice(bundle, device(), named, note, &gemms);
  ASSERT_EQ(choice.size(), 1u);
  EXPECT_EQ(choice.at("k0_a"), "k0_a__v1");
  EXPECT_NE(note.find(path), std::string::npos);
  ASSERT_EQ(gemms.size(), 1u);

  // --no-tune; another device; another bundle.
  EXPECT_TRUE(loadKernelChoice(bundle, device(), {false, path}, note).empty());
  EXPECT_TRUE(note.empty());
  EXPECT_TRUE(loadKernelChoice(bundle, device("another CPU"), named, note).empty());
  EXPECT_TRUE(note.empty());
  storeTuneEntry(path, device(), bundleKey(bundle), entry("k0_a__v7")); // stale
  EXPECT_TRUE(loadKernelChoice(bundle, device(), named, note).empty());
  EXPECT_TRUE(note.empty());
}

TEST(TunerTest, CorruptOrTruncatedCachesGiveTheDefaults) {
  test::TempDir dir;
  Bundle bundle = Bundle::load(variantBundle(dir));
  std::string path = dir.file("cache.json"), note;
  storeTuneEntry(path, device(), bundleKey(bundle), entry("k0_a__v1"));
  std::string whole = readFile(path);
  for (size_t cut : {size_t(0), size_t(1), whole.size() / 2, whole.size() - 3}) {
    std::ofstream(path, std::ios::trunc) << whole.substr(0, cut);
    EXPECT_THROW(readTuneCache(path), RuntimeError) << cut;
    EXPECT_TRUE(loadKernelChoice(bundle, device(), {true, path}, note).empty()) << cut;
    EXPECT_TRUE(note.empty());
  }
  for (const char *bad : {"[]", "{\"format\": \"fbt-tune-cache\", \"version\": 9}",
                          "{\"format\": \"other\"}", "\x01\x02\xff"}) {
    std::ofstream(path, std::ios::trunc) << bad;
    EXPECT_TRUE(loadKernelChoice(bundle, device(), {true, path}, note).empty()) << bad;
  }
  // A writer replaces what it cannot read.
  storeTuneEntry(path, device(), "aaaa", entry("k0_a"));
  EXPECT_EQ(readTuneCache(path).entries.size(), 1u);
}

TEST(TunerTest, ConcurrentTunersKeepEachOthersEntries) {
  test::TempDir dir;
  std::string path = dir.file("cache.json");
  constexpr int kWriters = 3, kEntries = 15;
  std::vector<pid_t> children;
  for (int w = 0; w < kWriters; ++w) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      int status = 0;
      try {
        for (int i = 0; i < kEntries; ++i)
          storeTuneEntry(path, device(), std::to_string(w) + "-" + std::to_string(i),
                         entry("k0_a"));
      } catch (...) {
        status = 1;
      }
      ::_exit(status);
    }
    children.push_back(pid);
  }
  for (pid_t pid : children) {
    int status = 0;
    ::waitpid(pid, &status, 0);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_EQ(readTuneCache(path).entries.size(), size_t(kWriters * kEntries));
}

} // namespace
} // namespace fbt
