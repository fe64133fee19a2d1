//===- Emulator.cpp - GPU launches run on the CPU, thread by thread -------===//

#include "Emulator.h"

#include <cstdio>
#include <cstdlib>
#include <ucontext.h>

namespace {
enum class Status { Ready, AtBarrier, Done };

struct Launch {
  int64_t block = 0, thread = 0, threads = 0;
  bool cooperative = false;
  void *fn = nullptr;
  const std::vector<void *> *args = nullptr;
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
  fbt::simt::call(current.fn, *current.args);
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

void fbt::simt::call(void *fn, const std::vector<void *> &a) {
  using P = void *;
  switch (a.size()) {
#define FBT_ARGS_1 P
#define FBT_ARGS_2 FBT_ARGS_1, P
#define FBT_ARGS_3 FBT_ARGS_2, P
#define FBT_ARGS_4 FBT_ARGS_3, P
#define FBT_ARGS_5 FBT_ARGS_4, P
#define FBT_ARGS_6 FBT_ARGS_5, P
#define FBT_ARGS_7 FBT_ARGS_6, P
#define FBT_ARGS_8 FBT_ARGS_7, P
#define FBT_ARGS_9 FBT_ARGS_8, P
#define FBT_ARGS_10 FBT_ARGS_9, P
#define FBT_ARGS_11 FBT_ARGS_10, P
#define FBT_ARGS_12 FBT_ARGS_11, P
  case 1: return ((void (*)(FBT_ARGS_1))fn)(a[0]);
  case 2: return ((void (*)(FBT_ARGS_2))fn)(a[0], a[1]);
  case 3: return ((void (*)(FBT_ARGS_3))fn)(a[0], a[1], a[2]);
  case 4: return ((void (*)(FBT_ARGS_4))fn)(a[0], a[1], a[2], a[3]);
  case 5: return ((void (*)(FBT_ARGS_5))fn)(a[0], a[1], a[2], a[3], a[4]);
  case 6: return ((void (*)(FBT_ARGS_6))fn)(a[0], a[1], a[2], a[3], a[4], a[5]);
  case 7: return ((void (*)(FBT_ARGS_7))fn)(a[0], a[1], a[2], a[3], a[4], a[5], a[6]);
  case 8: return ((void (*)(FBT_ARGS_8))fn)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7]);
  case 9: return ((void (*)(FBT_ARGS_9))fn)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8]);
  case 10: return ((void (*)(FBT_ARGS_10))fn)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9]);
  case 11: return ((void (*)(FBT_ARGS_11))fn)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10]);
  case 12: return ((void (*)(FBT_ARGS_12))fn)(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11]);
  default:
    std::fprintf(stderr, "simt emulator: a kernel with %zu buffers\n", a.size());
    std::exit(2);
  }
}

void fbt::simt::launch(void *fn, const std::vector<void *> &args, int64_t grid,
                       int64_t block, bool cooperative) {
  Launch &l = current;
  l.fn = fn;
  l.args = &args;
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
        call(fn, args);
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
      int64_t done = 0, waiting = 0;
      for (Status s : l.status) {
        done += s == Status::Done;
        waiting += s == Status::AtBarrier;
      }
      if (done == block)
        break;
      if (done > 0)
        die("some threads finished while others wait at a barrier");
      for (Status &s : l.status)
        s = Status::Ready;
    }
  }
}
