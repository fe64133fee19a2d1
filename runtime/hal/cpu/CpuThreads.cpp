//===- CpuThreads.cpp - how many threads a CPU step runs on ---------------===//

#include "runtime/hal/cpu/CpuThreads.h"

#include "runtime/hal/cpu/CpuTeam.h"

namespace fbt {

void setCpuThreads(int n) {
  if (n > 0)
    CpuTeam::get().resize(n);
}

int cpuThreads() { return CpuTeam::get().size(); }

} // namespace fbt
