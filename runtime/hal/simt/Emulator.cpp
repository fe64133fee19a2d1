//===- Emulator.cpp - GPU launches run on the CPU, thread by thread -------===//

#include "runtime/hal/simt/Emulator.h"

#include <cstdio>
#include <cstdlib>
#include <ucontext.h>
#include <vector>

namespace {
enum class Status { Ready, AtBarrier, Done };

struct Launch {
  int64_t block = 0, thread = 0, threads = 0;
  bool cooperative = false;
  fbt::KernelFn fn = nullptr;
  void *const *args = nullptr;
  size_t count = 0;
  ucontext_t scheduler;
  std::vector<ucontext_t> contexts;
  std::vector<std::vector<char>> stacks;
  std::vector<Status> status;
  std::vector<float> lanes; ///< one slot per thread, for shuffles
};
Launch current;

constexpr size_t kStackBytes = 64 << 10;

[[noreturn]] void die(const char *msg) {
  std::fprintf(stderr, "simt emulator: %s (block %lld, thread %lld)\n", msg,
               (long long)current.block, (long long)current.thread);
  std::exit(2);
}

void runThread() {
  fbt::callKernel(current.fn, current.args, current.count);
  current.status[current.thread] = Status::Done;
  // Returning resumes the scheduler (uc_link).
}
} // namespace

extern "C" {
size_t fbt_simt_thread_id() { return current.thread; }
size_t fbt_simt_block_id() { return current.block; }

void fbt_simt_barrier() {
  if (!current.cooperative)
    die("a barrier in a launch that is not a rows grid");
  int64_t me = current.thread;
  current.status[me] = Status::AtBarrier;
  swapcontext(&current.contexts[me], &current.scheduler);
}

float fbt_simt_shuffle_xor(float value, int32_t offset) {
  int64_t me = current.thread;
  current.lanes[me] = value;
  fbt_simt_barrier(); // every lane has posted
  int64_t other = me ^ offset;
  float result = other < current.threads ? current.lanes[other] : value;
  fbt_simt_barrier(); // every lane has read before the next post
  return result;
}
}

void fbt::simt::launch(KernelFn fn, void *const *args, size_t count,
                       int64_t grid, int64_t block, bool cooperative) {
  Launch &l = current;
  l.fn = fn;
  l.args = args;
  l.count = count;
  l.threads = block;
  l.cooperative = cooperative;
  if (cooperative) {
    l.contexts.resize(block);
    l.status.resize(block);
    l.lanes.assign(block, 0.0f);
    while ((int64_t)l.stacks.size() < block)
      l.stacks.emplace_back(kStackBytes);
  }
  for (l.block = 0; l.block < grid; ++l.block) {
    if (!cooperative) {
      for (l.thread = 0; l.thread < block; ++l.thread)
        callKernel(fn, args, count);
      continue;
    }
    for (int64_t t = 0; t < block; ++t) {
      getcontext(&l.contexts[t]);
      l.contexts[t].uc_stack.ss_sp = l.stacks[t].data();
      l.contexts[t].uc_stack.ss_size = kStackBytes;
      l.contexts[t].uc_link = &l.scheduler;
      makecontext(&l.contexts[t], runThread, 0);
      l.status[t] = Status::Ready;
    }
    for (;;) {
      for (l.thread = 0; l.thread < block; ++l.thread)
        if (l.status[l.thread] == Status::Ready)
          swapcontext(&l.scheduler, &l.contexts[l.thread]);
      int64_t done = 0;
      for (Status s : l.status)
        done += s == Status::Done;
      if (done == block)
        break;
      if (done > 0)
        die("some threads finished while others wait at a barrier");
      for (Status &s : l.status)
        s = Status::Ready;
    }
  }
}
