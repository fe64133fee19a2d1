//===- CpuThreads.cpp - how many threads a CPU step runs on ---------------===//

#include "runtime/hal/cpu/CpuThreads.h"

#ifdef FBT_HAVE_OPENMP
#include <omp.h>
#endif

namespace fbt {

void setCpuThreads(int n) {
#ifdef FBT_HAVE_OPENMP
  if (n > 0)
    omp_set_num_threads(n);
#else
  (void)n;
#endif
}

int cpuThreads() {
#ifdef FBT_HAVE_OPENMP
  return omp_get_max_threads();
#else
  return 1;
#endif
}

} // namespace fbt
