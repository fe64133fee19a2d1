//===- KernelThreads.h - the threads a CPU kernel library runs on -*- C++ -*-===//
//
// fbtc lowers the kernels' parallel loops with convert-scf-to-openmp, whose
// code calls four entry points of the OpenMP runtime's ABI (libomp's
// __kmpc_*). A CPU kernel library links none of them: fbtc routes each call
// through a table the library exports, which the runtime fills when it loads
// the library with its own team's entries (runtime/hal/cpu/CpuTeam.h). One
// team then runs every parallel loop and every GEMM panel of a step, its
// workers spinning between them, cheaper to hand a loop than libomp's fork
// and join (bench/results/ab-small-team.md). (Bundles of an older
// fbtc, whose kernels call libomp, are refused with a line that says so.)
//
// Header-only and dependency-free, so the compiler can include it.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_FORMAT_KERNELTHREADS_H
#define FBT_RUNTIME_FORMAT_KERNELTHREADS_H

#include <cstdint>

namespace fbt::kernel_threads {

/// The table's symbol: an array of kEntries function pointers, null until
/// the runtime fills it. A library whose kernels are all serial has none.
constexpr const char kTable[] = "fbt_kernel_threads";

/// The table's slots, each the OpenMP entry point of kOpenMpNames whose
/// calls it takes, with that entry's signature:
///   ForkCall         void (ident *, int32_t argc, Microtask, ...): runs
///                    microtask(&tid, &tid, args...) on every thread of the
///                    team and returns when all have
///   ForStaticInit8u  void (ident *, int32_t tid, int32_t schedule,
///                    int32_t *last, uint64_t *lower, uint64_t *upper,
///                    int64_t *stride, int64_t incr, int64_t chunk):
///                    this thread's share of [lower, upper] (inclusive)
///   ForStaticFini    void (ident *, int32_t tid)
///   GlobalThreadNum  int32_t (ident *): the calling thread's index
enum Entry : unsigned { ForkCall, ForStaticInit8u, ForStaticFini, GlobalThreadNum, kEntries };
constexpr const char *kOpenMpNames[kEntries] = {
    "__kmpc_fork_call", "__kmpc_for_static_init_8u", "__kmpc_for_static_fini",
    "__kmpc_global_thread_num"};

/// The schedules ForStaticInit8u takes (libomp's kmp_sch_static_chunked and
/// kmp_sch_static): chunks of `chunk` iterations round robin, or one even
/// block per thread.
constexpr int32_t kStaticChunked = 33;
constexpr int32_t kStatic = 34;

/// The most arguments a fork passes its microtask (convert-scf-to-openmp
/// passes one, the struct of the values the loop uses).
constexpr int32_t kMaxForkArgs = 4;

using Microtask = void (*)(int32_t *, int32_t *, ...);

} // namespace fbt::kernel_threads

#endif // FBT_RUNTIME_FORMAT_KERNELTHREADS_H
