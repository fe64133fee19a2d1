//===- CpuTeamTest.cpp - the threads every CPU step runs on ---------------===//

#include "runtime/hal/cpu/CpuTeam.h"

#include "runtime/format/KernelThreads.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
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

TEST(CpuTeamTest, ALeadSplitsEveryIterationOnceTheCallerFirst) {
  for (int n : {1, 2, 3, 5})
    for (uint64_t trip : {0, 1, 2, 7, 100, 961})
      for (float lead : {0.0f, 0.05f, 0.2f, CpuTeam::kMaxLead, 0.9f}) {
        std::vector<int> runs(trip);
        uint64_t next = 0, even = trip / n + (trip % n > 0);
        for (int t = 0; t < n; ++t) {
          auto [from, count] = CpuTeam::share(trip, t, n, lead);
          EXPECT_EQ(from, next) << "thread " << t << " starts where the one before ended";
          for (uint64_t i = from; i < from + count && i < trip; ++i)
            ++runs[i];
          next = from + count;
          if (t == 0)
            EXPECT_GE(count, std::min(trip, even)) << "the caller takes at least an even share";
        }
        EXPECT_EQ(next, trip) << trip << " iterations on " << n << " threads, lead " << lead;
        EXPECT_EQ(std::count(runs.begin(), runs.end(), 1), int64_t(trip));
      }
}

TEST(CpuTeamTest, NoLeadIsLibompsEvenSplit) {
  for (int n : {2, 3, 4})
    for (uint64_t trip = 0; trip <= 13; ++trip)
      for (int t = 0; t < n; ++t) {
        uint64_t small = trip / n, extra = trip % n;
        auto [from, count] = CpuTeam::share(trip, t, n, 0);
        EXPECT_EQ(from, t * small + std::min<uint64_t>(t, extra));
        EXPECT_EQ(count, small + (uint64_t(t) < extra));
      }
}

TEST(CpuTeamTest, TheLeadMovesTowardEndingTogether) {
  // 2 threads, 1000 ticks of work, the worker starting 100 ticks late: at
  // lead 0 the caller ends at 500 and the worker at 600. Ends meet when the
  // caller takes 550 (lead 0.05); each step goes half the way.
  float lead = 0;
  for (int run = 0; run < 20; ++run) {
    double caller = 1000 * (0.5 + lead), worker = 100 + 1000 * (0.5 - lead);
    lead = CpuTeam::nextLead(lead, 2, caller, worker - caller);
  }
  EXPECT_NEAR(lead, 0.05f, 1e-3f);
  EXPECT_FLOAT_EQ(CpuTeam::nextLead(0.1f, 2, 600, -1e6), 0.0f) << "never below an even share";
  EXPECT_FLOAT_EQ(CpuTeam::nextLead(0.1f, 2, 600, 1e6), CpuTeam::kMaxLead);
  EXPECT_FLOAT_EQ(CpuTeam::nextLead(0.1f, 1, 600, 100), 0.1f) << "alone, nothing to balance";
}

TEST(CpuTeamTest, ALoopOfAForkSiteSplitsByItsLead) {
  // A fork whose loop gives the caller much more work than the workers:
  // its site's lead stays at 0. One whose workers are slow: it rises.
  TeamOf team(2);
  auto fork = reinterpret_cast<ForkCall>(entry(kt::ForkCall));
  auto init = reinterpret_cast<StaticInit>(entry(kt::ForStaticInit8u));
  struct Loop {
    StaticInit init;
    std::atomic<uint64_t> callerCount{0};
  };
  auto task = +[](int32_t *tid, int32_t *, Loop *loop) {
    int32_t last = 0;
    uint64_t lo = 0, hi = 999;
    int64_t stride = 0;
    loop->init(nullptr, *tid, kt::kStatic, &last, &lo, &hi, &stride, 1, 0);
    if (*tid == 0)
      loop->callerCount = hi + 1 - lo;
    else // a worker whose iterations take longer than the caller's
      std::this_thread::sleep_for(std::chrono::microseconds(200));
  };
  Loop loop{init};
  for (int run = 0; run < 30; ++run)
    fork(nullptr, 1, reinterpret_cast<kt::Microtask>(task), &loop);
  EXPECT_GT(loop.callerCount.load(), 500u) << "the caller took more than half";
  uint64_t count = 0;
  onTeam([&](int t, int n) { // a run with no site splits evenly
    int32_t last = 0;
    uint64_t lo = 0, hi = 999;
    int64_t stride = 0;
    init(nullptr, t, kt::kStatic, &last, &lo, &hi, &stride, 1, 0);
    if (t == 0)
      count = hi + 1 - lo;
    (void)n;
  });
  EXPECT_EQ(count, 500u);
}
