//===- MpiChannel.h - ranks joined through MPI, on host memory ---*- C++ -*-===//
//
// The MPI engine, for the CPU's ranks (it registers itself as "mpi") and
// for other engines that need a launched run's processes joined on the
// host: NCCL (hal/nccl) bootstraps over it, broadcasting its unique id,
// and leaves it the host collectives (losses, fingerprints) and abort().
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_HAL_MPI_MPICHANNEL_H
#define FBT_RUNTIME_HAL_MPI_MPICHANNEL_H

#include "runtime/hal/Channel.h"

#include <memory>

namespace fbt {

/// Joins this launched process to the others through MPI (initializing it
/// unless the program did; finalized by the channel that initialized it):
/// RuntimeError naming the rank when MPI's world disagrees with `launch`
/// or the launcher has no MPI runtime (torchrun). Its startAllReduce()
/// reduces host memory only.
std::unique_ptr<Channel> openMpiChannel(const LaunchInfo &launch);

} // namespace fbt

#endif // FBT_RUNTIME_HAL_MPI_MPICHANNEL_H
