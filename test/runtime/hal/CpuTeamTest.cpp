//===- CpuTeamTest.cpp - the threads every CPU step runs on ---------------===//

#include "runtime/hal/cpu/CpuTeam.h"

#include "runtime/format/KernelThreads.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <thread>
#include <vector>

using namespace fbt;
namespace kt = fbt::kernel_threads;

namespace {
/// The team at `n` threads for one test, then back to its size before.
struct TeamOf {
  int before = CpuTeam::get().size();
  explicit TeamOf(int n) { CpuTeam::get().resize(n); }
  ~TeamOf() { CpuTeam::get().resize(before); }
};

using StaticInit = void (*)(void *, int32_t, int32_t, int32_t *, uint64_t *, uint64_t *,
                            int64_t *, int64_t, int64_t);
using ForkCall = void (*)(void *, int32_t, kt::Microtask, ...);

void *entry(kt::Entry e) {
  void *table[kt::kEntries] = {};
  fillKernelThreads(table);
  return table[e];
}

/// How many times each iteration of [0, trip) runs when every thread of the
/// team walks its share as the generated loops do (the chunked schedule
/// stepping by the stride and clipping to the trip count).
std::vector<int> covered(uint64_t trip, int32_t schedule, int64_t chunk) {
  auto init = reinterpret_cast<StaticInit>(entry(kt::ForStaticInit8u));
  std::vector<std::atomic<int>> runs(trip);
  std::atomic<int> lasts{0};
  onTeam([&](int t, int) {
    int32_t last = 0;
    uint64_t lo = 0, hi = trip - 1;
    int64_t stride = 0;
    init(nullptr, t, schedule, &last, &lo, &hi, &stride, 1, chunk);
    lasts += last;
    if (schedule == kt::kStatic) {
      for (uint64_t i = lo; i <= hi && i < trip; ++i)
        ++runs[i];
      return;
    }
    for (uint64_t start = lo; start < trip; start += stride)
      for (uint64_t i = start; i < std::min<uint64_t>(start + chunk, trip); ++i)
        ++runs[i];
  });
  std::vector<int> out(runs.begin(), runs.end());
  if (trip > 0)
    EXPECT_EQ(lasts.load(), 1) << "one thread runs the last iteration";
  return out;
}
} // namespace

TEST(CpuTeamTest, RunsTheBodyOnceOnEveryThread) {
  TeamOf team(3);
  std::vector<std::atomic<int>> seen(3);
  std::atomic<int> sizes{0};
  onTeam([&](int t, int n) {
    ++seen[t];
    sizes += n;
    EXPECT_EQ(CpuTeam::thread(), t);
    EXPECT_EQ(CpuTeam::threads(), n);
  });
  for (int t = 0; t < 3; ++t)
    EXPECT_EQ(seen[t].load(), 1) << "thread " << t;
  EXPECT_EQ(sizes.load(), 9);
  EXPECT_EQ(CpuTeam::thread(), 0);
  EXPECT_EQ(CpuTeam::threads(), 1) << "outside a run the caller is alone";
}

TEST(CpuTeamTest, ARunInsideARunIsTheCallersAlone) {
  TeamOf team(2);
  std::atomic<int> inner{0};
  onTeam([&](int, int) {
    onTeam([&](int t, int n) {
      EXPECT_EQ(t, 0);
      EXPECT_EQ(n, 1);
      ++inner;
    });
  });
  EXPECT_EQ(inner.load(), 2);
}

TEST(CpuTeamTest, TwoCallersAtOnceEachFinishWhatTheyStarted) {
  TeamOf team(2);
  auto caller = [](int runs, std::atomic<int> &wrong) {
    for (int r = 0; r < runs; ++r) {
      std::atomic<int> calls{0}, size{0};
      onTeam([&](int t, int n) {
        ++calls;
        if (t == 0)
          size = n;
      });
      if (calls.load() != size.load())
        ++wrong;
    }
  };
  std::atomic<int> wrong{0};
  std::thread other(caller, 3000, std::ref(wrong));
  caller(3000, wrong);
  other.join();
  EXPECT_EQ(wrong.load(), 0);
}

TEST(CpuTeamTest, ShrinksAndGrows) {
  for (int n : {1, 4, 2, 3}) {
    TeamOf team(n);
    std::atomic<int> calls{0};
    onTeam([&](int, int) { ++calls; });
    EXPECT_EQ(calls.load(), n);
  }
}

TEST(CpuTeamTest, StaticSchedulesCoverEveryIterationOnce) {
  for (int n : {1, 2, 3, 4}) {
    TeamOf team(n);
    for (uint64_t trip = 1; trip <= 19; ++trip) {
      std::vector<int> even = covered(trip, kt::kStatic, 0);
      EXPECT_EQ(std::count(even.begin(), even.end(), 1), int64_t(trip))
          << "static, " << trip << " iterations on " << n << " threads";
      for (int64_t chunk : {1, 2, 5}) {
        std::vector<int> chunks = covered(trip, kt::kStaticChunked, chunk);
        EXPECT_EQ(std::count(chunks.begin(), chunks.end(), 1), int64_t(trip))
            << "chunks of " << chunk << ", " << trip << " iterations on " << n << " threads";
      }
    }
  }
}

TEST(CpuTeamTest, ForkCallPassesItsArgumentsToEveryThread) {
  TeamOf team(2);
  struct Seen {
    std::atomic<int> calls{0}, tids{0};
  } seen;
  auto fork = reinterpret_cast<ForkCall>(entry(kt::ForkCall));
  auto task = +[](int32_t *tid, int32_t *, Seen *s, int *marker) {
    if (*marker == 42)
      ++s->calls;
    s->tids += *tid + 1;
  };
  int marker = 42;
  fork(nullptr, 2, reinterpret_cast<kt::Microtask>(task), &seen, &marker);
  EXPECT_EQ(seen.calls.load(), 2);
  EXPECT_EQ(seen.tids.load(), 1 + 2);
  auto threadNum = reinterpret_cast<int32_t (*)(void *)>(entry(kt::GlobalThreadNum));
  EXPECT_EQ(threadNum(nullptr), 0);
}
