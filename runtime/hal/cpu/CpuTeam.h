//===- CpuTeam.h - the threads every CPU step runs on -------------*- C++ -*-===//
//
// One team runs a CPU step: the calling thread and cpuThreads() - 1 workers.
// Every parallel loop of the generated kernels (through the table of
// runtime/format/KernelThreads.h) and every GEMM panel (CpuGemm.h) is one
// run() of it. Between runs the workers spin on one counter, so handing
// them work costs a cache line's trip between cores and back, less than
// libomp's fork and join (a decode step makes some 40 runs per token;
// bench/results/ab-small-team.md); after kIdleSpin without work they sleep.
// A kernel's parallel loop gives its caller a little more than an even
// share, learnt per loop (run's `site`): the workers start that trip late.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_HAL_CPU_CPUTEAM_H
#define FBT_RUNTIME_HAL_CPU_CPUTEAM_H

#include "runtime/hal/cpu/CpuThreads.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <type_traits>
#include <utility>

namespace fbt {

class CpuTeam {
public:
  /// The process's team (made at the first call, never destroyed: its
  /// workers may still spin while the process exits).
  static CpuTeam &get();

  /// Threads a run uses, the caller included.
  int size() const { return size_.load(std::memory_order_relaxed); }
  /// Sets them (n clamped to [1, kMaxCpuThreads]); workers are made as
  /// first needed.
  void resize(int n);

  /// What a run hands its threads: a few words, copied into the cache line
  /// that publishes the run, so that a worker reads the run in one trip.
  static constexpr int kWords = 5;
  struct Words {
    void *at[kWords] = {};
  };
  using Body = void (*)(const Words &words, int thread, int threads);
  /// body(words, t, n) on each thread t of n, t = 0 on the caller;
  /// returns when every one has. From inside a run, or while another
  /// thread's run holds the team, it runs body(words, 0, 1) alone.
  ///
  /// With a `site` (a kernel's parallel loop: its microtask), the run's
  /// iterations split by the site's lead (lead(), share()): the share the
  /// caller takes beyond an even 1/n. The workers start a cache line's
  /// trip after the caller, so with even shares the caller would wait for
  /// them; each run that forks moves the site's lead toward the share
  /// that ends every thread together, from the clock ticks each ended at.
  void run(Body body, const Words &words, const void *site = nullptr);

  /// The calling thread's place: (t, n) inside a run, (0, 1) outside.
  static int thread();
  static int threads();
  /// The caller's extra share in the run the calling thread is in (0
  /// outside a run, or in one without a site).
  static float lead();

  /// The split a lead gives: thread t's first iteration of
  /// [0, trip) and how many it runs, the caller (t = 0) round(trip * (1/n +
  /// lead)) and at least an even share, the workers even shares of the rest
  /// (the first ones one longer). At lead 0, libomp's even static split.
  static std::pair<uint64_t, uint64_t> share(uint64_t trip, int t, int n, float lead);
  /// The lead after a run that split as `lead` did, where the caller's body
  /// took `callerTicks` and the last worker ended `lateTicks` after it
  /// (negative: before): the share that would have ended them together,
  /// half the way there, within [0, kMaxLead].
  static float nextLead(float lead, int n, double callerTicks, double lateTicks);
  static constexpr float kMaxLead = 0.4f;

private:
  CpuTeam();
  void addWorkers(int n);
  void work(int t, uint64_t seen);

  /// A site's lead, in a table of kSites slots by the site's address (a
  /// site that finds its slot taken by another starts it again at 0);
  /// read and written only by the run that holds the team.
  struct Balance {
    const void *site = nullptr;
    float lead = 0;
  };
  static constexpr int kSites = 256;
  Balance &balanceOf(const void *site);
  Balance sites_[kSites];

  std::atomic<int> size_{1};
  int workers_ = 0; // made so far, under grow_
  std::mutex grow_;
  alignas(64) std::atomic<bool> busy_{false};

  // The current run: its fields, then the bump of generation that publishes
  // them, all in one line the caller writes and the workers read (a fork
  // and join costs the trips of lines between cores: this one, a
  // worker's done_, and whatever the body reads).
  struct alignas(64) Published {
    std::atomic<uint64_t> generation{0};
    std::atomic<Body> body{nullptr};
    std::atomic<int> threads{1};
    std::atomic<float> lead{0};
    std::atomic<void *> words[kWords] = {};
  };
  static_assert(sizeof(Published) == 64, "a run is published in one cache line");
  Published published_;
  // Each worker's last run done, and the clock tick its body ended at, in
  // a line of its own that only it writes: the caller waits for the run's
  // generation in each of the run's.
  struct alignas(64) Done {
    std::atomic<uint64_t> run{0};
    std::atomic<uint64_t> endTick{0};
  };
  Done done_[kMaxCpuThreads];

  // Sleeping workers wait on wake_ (sleepers_ counts them).
  alignas(64) std::atomic<int> sleepers_{0};
  std::mutex sleep_;
  std::condition_variable wake_;
};

/// body(t, n) on every thread of the team (see CpuTeam::run).
template <typename F> void onTeam(F &&body) {
  using Fn = std::remove_reference_t<F>;
  CpuTeam::Words words;
  words.at[0] = const_cast<void *>(static_cast<const void *>(&body));
  CpuTeam::get().run([](const CpuTeam::Words &w, int t, int n) { (*static_cast<Fn *>(w.at[0]))(t, n); },
                     words);
}

/// Fills a kernel library's table (runtime/format/KernelThreads.h) with the
/// team's entries, in its order.
void fillKernelThreads(void **table);
/// Fills the table of the kernel library `handle` (from dlopen), where it
/// has one (a library of serial kernels has none).
void attachKernelThreads(void *handle);

} // namespace fbt

#endif // FBT_RUNTIME_HAL_CPU_CPUTEAM_H
