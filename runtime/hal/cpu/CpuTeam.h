//===- CpuTeam.h - the threads every CPU step runs on -------------*- C++ -*-===//
//
// One team runs a CPU step: the calling thread and cpuThreads() - 1 workers.
// Every parallel loop of the generated kernels (through the table of
// runtime/format/KernelThreads.h) and every GEMM panel (CpuGemm.h) is one
// run() of it. Between runs the workers spin on one counter, so handing
// them work costs a cache line's trip between cores and back, less than
// libomp's fork and join (a decode step makes some 40 runs per token;
// bench/results/ab-small-team.md); after kIdleSpin without work they sleep.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_HAL_CPU_CPUTEAM_H
#define FBT_RUNTIME_HAL_CPU_CPUTEAM_H

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <type_traits>

namespace fbt {

class CpuTeam {
public:
  /// The process's team (made at the first call, never destroyed: its
  /// workers may still spin while the process exits).
  static CpuTeam &get();

  /// Threads a run uses, the caller included.
  int size() const { return size_.load(std::memory_order_relaxed); }
  /// Sets them (n >= 1); workers are made as first needed.
  void resize(int n);

  using Body = void (*)(void *context, int thread, int threads);
  /// body(context, t, n) on each thread t of n, t = 0 on the caller;
  /// returns when every one has. From inside a run, or while another
  /// thread's run holds the team, it runs body(context, 0, 1) alone.
  void run(Body body, void *context);

  /// The calling thread's place: (t, n) inside a run, (0, 1) outside.
  static int thread();
  static int threads();

private:
  CpuTeam();
  void addWorkers(int n);
  void work(int t, uint64_t seen);

  std::atomic<int> size_{1};
  int workers_ = 0; // made so far, under grow_
  std::mutex grow_;
  std::atomic<bool> busy_{false};

  // The current run, published by a bump of generation_.
  std::atomic<Body> body_{nullptr};
  std::atomic<void *> context_{nullptr};
  std::atomic<int> threads_{1};
  alignas(64) std::atomic<uint64_t> generation_{0};
  alignas(64) std::atomic<int> finished_{0};

  // Sleeping workers wait on wake_ (sleepers_ counts them).
  alignas(64) std::atomic<int> sleepers_{0};
  std::mutex sleep_;
  std::condition_variable wake_;
};

/// body(t, n) on every thread of the team (see CpuTeam::run).
template <typename F> void onTeam(F &&body) {
  using Fn = std::remove_reference_t<F>;
  CpuTeam::get().run([](void *f, int t, int n) { (*static_cast<Fn *>(f))(t, n); },
                     const_cast<void *>(static_cast<const void *>(&body)));
}

/// Fills a kernel library's table (runtime/format/KernelThreads.h) with the
/// team's entries, in its order.
void fillKernelThreads(void **table);
/// Fills the table of the kernel library `handle` (from dlopen), where it
/// has one (a library of serial kernels has none).
void attachKernelThreads(void *handle);

} // namespace fbt

#endif // FBT_RUNTIME_HAL_CPU_CPUTEAM_H
