//===- CpuThreads.h - how many threads a CPU step runs on -----*- C++ -*-===//
//
// The count alone, for the many that read it; the team that runs on them
// (CpuTeam.h) defines these functions, so this header depends on nothing.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_HAL_CPU_CPUTHREADS_H
#define FBT_RUNTIME_HAL_CPU_CPUTHREADS_H

namespace fbt {

/// The most threads a CPU step runs on (fbt --threads, OMP_NUM_THREADS).
constexpr int kMaxCpuThreads = 1024;

/// Threads for CPU steps: `n` > 0 sets the count (fbt --threads), 0 keeps
/// the default (OMP_NUM_THREADS, else every core). Call before a step runs.
void setCpuThreads(int n);
/// The threads a CPU step runs on (its team's, CpuTeam.h).
int cpuThreads();

} // namespace fbt

#endif // FBT_RUNTIME_HAL_CPU_CPUTHREADS_H
