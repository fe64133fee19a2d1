//===- CpuTeam.cpp - the threads every CPU step runs on ------------------===//

#include "runtime/hal/cpu/CpuTeam.h"

#include "runtime/format/KernelThreads.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdlib>
#include <dlfcn.h>
#include <sched.h>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#include <x86intrin.h>
#define FBT_PAUSE() _mm_pause()
#else
#define FBT_PAUSE() std::this_thread::yield()
#endif

namespace fbt {
namespace {
/// How long a worker spins without work before it sleeps: longer than the
/// host's work between two steps (sampling a token), short against a
/// server's idle time.
constexpr auto kIdleSpin = std::chrono::milliseconds(5);
/// Pauses a worker spins before it starts yielding its core at each turn:
/// some tens of microseconds, longer than a step's gaps between two runs.
constexpr int kHotSpins = 1 << 12;

/// The calling thread's place in the run it is in.
thread_local int tThread = 0;
thread_local int tThreads = 1;
thread_local float tLead = 0;
thread_local bool tInRun = false;

/// Sets the thread's place for one body, and puts the old one back.
struct Place {
  int thread, threads;
  float lead;
  bool inRun;
  Place(int t, int n, float l = 0)
      : thread(tThread), threads(tThreads), lead(tLead), inRun(tInRun) {
    tThread = t, tThreads = n, tLead = l, tInRun = true;
  }
  ~Place() { tThread = thread, tThreads = threads, tLead = lead, tInRun = inRun; }
};

/// A clock that every core reads alike and cheaply (the TSC, where the
/// CPU has one: some cycles, where a steady_clock read costs tens of ns).
uint64_t tick() {
#if defined(__x86_64__) || defined(__i386__)
  return __rdtsc();
#else
  return uint64_t(std::chrono::steady_clock::now().time_since_epoch().count());
#endif
}


/// OMP_NUM_THREADS where it is a count (as OpenMP programs read it), else
/// the CPUs this process may run on.
int defaultThreads() {
  if (const char *env = std::getenv("OMP_NUM_THREADS")) {
    char *end = nullptr;
    long n = std::strtol(env, &end, 10);
    if (end != env && n >= 1 && n <= kMaxCpuThreads)
      return int(n);
  }
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
    return CPU_COUNT(&set);
  return int(std::max(1u, std::thread::hardware_concurrency()));
}
} // namespace

CpuTeam &CpuTeam::get() {
  static CpuTeam *team = [] {
    auto *made = new CpuTeam();
    made->resize(defaultThreads());
    return made;
  }();
  return *team;
}

CpuTeam::CpuTeam() = default;

int CpuTeam::thread() { return tThread; }
int CpuTeam::threads() { return tThreads; }
float CpuTeam::lead() { return tLead; }

std::pair<uint64_t, uint64_t> CpuTeam::share(uint64_t trip, int t, int n, float lead) {
  uint64_t small = trip / n, extra = trip % n;
  if (n == 1)
    return {0, trip};
  uint64_t even = small + (extra > 0); // the caller's at lead 0
  uint64_t caller = std::clamp<uint64_t>(
      uint64_t(std::llround(double(trip) * (1.0 / n + std::clamp(lead, 0.0f, kMaxLead)))), even,
      trip);
  if (t == 0)
    return {0, caller};
  uint64_t rest = trip - caller, each = rest / (n - 1), longer = rest % (n - 1);
  uint64_t w = uint64_t(t - 1);
  return {caller + w * each + std::min(w, longer), each + (w < longer)};
}

float CpuTeam::nextLead(float lead, int n, double callerTicks, double lateTicks) {
  if (n < 2 || callerTicks <= 0)
    return lead;
  // The caller's share p of the whole work takes callerTicks; moving dp of
  // it shifts the caller's end by dp * whole and each worker's by
  // -dp * whole / (n - 1): ends meet at dp = late * (n - 1) / (whole * n).
  double p = 1.0 / n + lead, whole = callerTicks / p;
  double dp = lateTicks * (n - 1) / (whole * n);
  return std::clamp(float(lead + 0.5 * dp), 0.0f, kMaxLead);
}

void CpuTeam::resize(int n) {
  n = std::clamp(n, 1, kMaxCpuThreads);
  addWorkers(n - 1);
  size_.store(n, std::memory_order_relaxed);
}

void CpuTeam::addWorkers(int n) {
  std::lock_guard<std::mutex> lock(grow_);
  // A worker waits for the runs after its making: a run that starts before
  // its thread does is still its to join.
  uint64_t made = published_.generation.load(std::memory_order_acquire);
  for (; workers_ < n; ++workers_)
    std::thread([this, t = workers_ + 1, made] { work(t, made); }).detach();
}

CpuTeam::Balance &CpuTeam::balanceOf(const void *site) {
  Balance &slot = sites_[(reinterpret_cast<uintptr_t>(site) >> 4) % kSites];
  if (slot.site != site)
    slot = {site, 0};
  return slot;
}

void CpuTeam::run(Body body, const Words &words, const void *site) {
  int n = size();
  bool expected = false;
  if (n == 1 || tInRun || !busy_.compare_exchange_strong(expected, true)) {
    Place alone(0, 1);
    body(words, 0, 1);
    return;
  }
  Balance *balance = site ? &balanceOf(site) : nullptr;
  float lead = balance ? balance->lead : 0.0f;
  uint64_t start = tick();
  published_.body.store(body, std::memory_order_relaxed);
  published_.threads.store(n, std::memory_order_relaxed);
  published_.lead.store(lead, std::memory_order_relaxed);
  for (int i = 0; i < kWords; ++i)
    published_.words[i].store(words.at[i], std::memory_order_relaxed);
  uint64_t run = published_.generation.fetch_add(1, std::memory_order_seq_cst) + 1;
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    std::lock_guard<std::mutex> lock(sleep_);
    wake_.notify_all();
  }
  {
    Place first(0, n, lead);
    body(words, 0, n);
  }
  uint64_t callerEnd = tick(), lastEnd = 0;
  // Workers that slept take a while to wake: yield to them now and then.
  for (int t = 1; t < n; ++t) {
    for (int spins = 0; done_[t].run.load(std::memory_order_acquire) != run; ++spins) {
      FBT_PAUSE();
      if ((spins & 4095) == 4095)
        std::this_thread::yield();
    }
    lastEnd = std::max(lastEnd, done_[t].endTick.load(std::memory_order_relaxed));
  }
  if (balance) // the clock's ticks are alike on every core (an invariant TSC)
    balance->lead = nextLead(lead, n, double(callerEnd - start),
                             double(int64_t(lastEnd - callerEnd)));
  busy_.store(false, std::memory_order_release);
}

void CpuTeam::work(int t, uint64_t seen) {
  std::atomic<uint64_t> &generation = published_.generation;
  for (;;) {
    auto idleSince = std::chrono::steady_clock::now();
    for (int spins = 1; generation.load(std::memory_order_acquire) == seen; ++spins) {
      FBT_PAUSE();
      // Past the gaps between a step's calls, a spinning worker yields to
      // whatever else wants the core (other processes, a loaded machine).
      if (spins > kHotSpins)
        std::this_thread::yield();
      if ((spins & 1023) == 0 && std::chrono::steady_clock::now() - idleSince > kIdleSpin) {
        std::unique_lock<std::mutex> lock(sleep_);
        sleepers_.fetch_add(1, std::memory_order_seq_cst);
        wake_.wait(lock, [&] { return generation.load(std::memory_order_seq_cst) != seen; });
        sleepers_.fetch_sub(1, std::memory_order_relaxed);
      }
    }
    // The run's fields, checked against a newer run's (seqlock-style): a
    // worker beyond a run's threads (the team was larger once) sits it out,
    // and the run after it may begin meanwhile.
    uint64_t run = generation.load(std::memory_order_acquire);
    int n = published_.threads.load(std::memory_order_relaxed);
    float lead = published_.lead.load(std::memory_order_relaxed);
    Body body = published_.body.load(std::memory_order_relaxed);
    Words words;
    for (int i = 0; i < kWords; ++i)
      words.at[i] = published_.words[i].load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (generation.load(std::memory_order_relaxed) != run)
      continue; // fields of a newer run: read them again
    seen = run;
    if (t >= n)
      continue;
    {
      Place place(t, n, lead);
      body(words, t, n);
    }
    done_[t].endTick.store(tick(), std::memory_order_relaxed);
    done_[t].run.store(run, std::memory_order_release);
  }
}

//===----------------------------------------------------------------------===//
// The kernels' entries (runtime/format/KernelThreads.h)
//===----------------------------------------------------------------------===//

namespace {
using namespace kernel_threads;

static_assert(CpuTeam::kWords >= kMaxForkArgs + 1, "a fork's task and arguments fit a run's words");

/// A fork's microtask (word 0) on its arguments (words 1 to argc), argc in
/// the table's signature as fbtc checked it (routeKernelThreads): the count
/// travels as the body, one per count.
template <int Argc> void invokeFork(const CpuTeam::Words &w, int t, int) {
  auto task = reinterpret_cast<Microtask>(w.at[0]);
  int32_t tid = t, bound = t;
  if constexpr (Argc == 0)
    task(&tid, &bound);
  else if constexpr (Argc == 1)
    task(&tid, &bound, w.at[1]);
  else if constexpr (Argc == 2)
    task(&tid, &bound, w.at[1], w.at[2]);
  else if constexpr (Argc == 3)
    task(&tid, &bound, w.at[1], w.at[2], w.at[3]);
  else
    task(&tid, &bound, w.at[1], w.at[2], w.at[3], w.at[4]);
}

void forkCall(void *, int32_t argc, Microtask task, ...) {
  static constexpr CpuTeam::Body kInvoke[kMaxForkArgs + 1] = {
      invokeFork<0>, invokeFork<1>, invokeFork<2>, invokeFork<3>, invokeFork<4>};
  CpuTeam::Words words;
  words.at[0] = reinterpret_cast<void *>(task);
  int32_t count = std::clamp<int32_t>(argc, 0, kMaxForkArgs);
  va_list ap;
  va_start(ap, task);
  for (int32_t i = 0; i < count; ++i)
    words.at[1 + i] = va_arg(ap, void *);
  va_end(ap);
  CpuTeam::get().run(kInvoke[count], words, reinterpret_cast<const void *>(task));
}

/// libomp's static schedules over [*lower, *upper] (inclusive, step 1): a
/// block per thread, even but for the caller's lead (CpuTeam::share); or
/// chunks round robin, the caller stepping by *stride and clipping to its
/// bound.
void forStaticInit8u(void *, int32_t, int32_t schedule, int32_t *last, uint64_t *lower,
                     uint64_t *upper, int64_t *stride, int64_t, int64_t chunk) {
  uint64_t t = CpuTeam::thread(), n = CpuTeam::threads();
  uint64_t lo = *lower, hi = *upper, trip = hi - lo + 1;
  if (schedule == kStaticChunked && chunk > 0) {
    uint64_t c = chunk;
    *lower = lo + t * c;
    *upper = *lower + c - 1;
    *stride = int64_t(n * c);
    if (last)
      *last = ((trip - 1) / c) % n == t;
    return;
  }
  auto [from, count] = CpuTeam::share(trip, int(t), int(n), CpuTeam::lead());
  uint64_t first = lo + from;
  *lower = first;
  *upper = first + count - 1; // below *lower where this thread has none
  *stride = int64_t(trip);
  if (last)
    *last = count > 0 && first + count - 1 == hi;
}

void forStaticFini(void *, int32_t) {}

int32_t globalThreadNum(void *) { return CpuTeam::thread(); }
} // namespace

void fillKernelThreads(void **table) {
  table[ForkCall] = reinterpret_cast<void *>(&forkCall);
  table[ForStaticInit8u] = reinterpret_cast<void *>(&forStaticInit8u);
  table[ForStaticFini] = reinterpret_cast<void *>(&forStaticFini);
  table[GlobalThreadNum] = reinterpret_cast<void *>(&globalThreadNum);
}

void attachKernelThreads(void *handle) {
  if (void *table = dlsym(handle, kernel_threads::kTable))
    fillKernelThreads(static_cast<void **>(table));
}

// The thread count is the team's size (CpuThreads.h).
void setCpuThreads(int n) {
  if (n > 0)
    CpuTeam::get().resize(n);
}

int cpuThreads() { return CpuTeam::get().size(); }

} // namespace fbt
