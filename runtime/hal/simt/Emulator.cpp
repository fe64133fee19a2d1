//===- Emulator.cpp - GPU launches run on the CPU, thread by thread -------===//
//
// A cooperative launch's threads are coroutines, each on a stack of its own,
// switched at every barrier (a warp shuffle is two). On x86-64 the switch is
// ours: the callee-saved registers pushed, the stack pointer swapped, popped
// (fbt_simt_switch below), a few nanoseconds; glibc's swapcontext, used
// elsewhere, also saves and restores the signal mask, a system call per
// switch, which made the emulated reductions cost more than their
// arithmetic.
//
//===----------------------------------------------------------------------===//

#include "runtime/hal/simt/Emulator.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#if defined(__x86_64__)
#define FBT_SIMT_OWN_SWITCH 1
#else
#include <ucontext.h>
#endif

#if FBT_SIMT_OWN_SWITCH
// void fbt_simt_switch(void **save, void *load): saves this coroutine's
// callee-saved registers on its stack and its stack pointer in *save, then
// resumes the one whose stack pointer is `load` (System V x86-64).
asm(R"(
  .text
  .p2align 4
  .type fbt_simt_switch, @function
fbt_simt_switch:
  pushq %rbp
  pushq %rbx
  pushq %r12
  pushq %r13
  pushq %r14
  pushq %r15
  movq %rsp, (%rdi)
  movq %rsi, %rsp
  popq %r15
  popq %r14
  popq %r13
  popq %r12
  popq %rbx
  popq %rbp
  ret
  .size fbt_simt_switch, .-fbt_simt_switch
)");
extern "C" void fbt_simt_switch(void **save, void *load);
#endif

namespace {
enum class Status { Ready, AtBarrier, Done };

/// Where a suspended coroutine (or the scheduler) resumes.
#if FBT_SIMT_OWN_SWITCH
using Context = void *; ///< its stack pointer
#else
using Context = ucontext_t;
#endif

struct Launch {
  int64_t block = 0, thread = 0, threads = 0;
  bool cooperative = false;
  fbt::KernelFn fn = nullptr;
  void *const *args = nullptr;
  size_t count = 0;
  Context scheduler;
  std::vector<Context> contexts;
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
#if FBT_SIMT_OWN_SWITCH
  void *unused;
  fbt_simt_switch(&unused, current.scheduler); // never resumed
  __builtin_unreachable();
#endif
  // Returning resumes the scheduler (uc_link).
}

/// Suspends the running thread and resumes the scheduler.
void toScheduler(int64_t me) {
#if FBT_SIMT_OWN_SWITCH
  fbt_simt_switch(&current.contexts[me], current.scheduler);
#else
  swapcontext(&current.contexts[me], &current.scheduler);
#endif
}

/// Resumes thread t from the scheduler.
void toThread(int64_t t) {
#if FBT_SIMT_OWN_SWITCH
  fbt_simt_switch(&current.scheduler, current.contexts[t]);
#else
  swapcontext(&current.scheduler, &current.contexts[t]);
#endif
}

/// Thread t's coroutine, about to start runThread on its stack.
void prepare(int64_t t, std::vector<char> &stack) {
#if FBT_SIMT_OWN_SWITCH
  // The stack as fbt_simt_switch leaves it: six registers (zero), then
  // runThread's address for its `ret`, then a slot where a caller's return
  // address would be, so runThread starts with the alignment of a call.
  uintptr_t top = ((uintptr_t)stack.data() + stack.size()) & ~(uintptr_t)15;
  void **sp = (void **)top - 2;
  sp[0] = (void *)&runThread;
  sp[1] = nullptr;
  sp -= 6;
  for (int i = 0; i < 6; ++i)
    sp[i] = nullptr;
  current.contexts[t] = sp;
#else
  getcontext(&current.contexts[t]);
  current.contexts[t].uc_stack.ss_sp = stack.data();
  current.contexts[t].uc_stack.ss_size = stack.size();
  current.contexts[t].uc_link = &current.scheduler;
  makecontext(&current.contexts[t], runThread, 0);
#endif
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
  toScheduler(me);
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
      prepare(t, l.stacks[t]);
      l.status[t] = Status::Ready;
    }
    for (;;) {
      for (l.thread = 0; l.thread < block; ++l.thread)
        if (l.status[l.thread] == Status::Ready)
          toThread(l.thread);
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
