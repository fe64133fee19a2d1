//===- Channel.h - collectives across the ranks of a run --------*- C++ -*-===//
//
// A Channel joins the processes ("ranks") of a data-parallel run, one
// device each, over a one-dimensional grid: rank 0 .. size-1. The compiled
// training steps state their collectives in the plan (PlanOp::collective);
// the session hands them to a Channel, which runs them on an existing
// engine: MPI for host memory (hal/mpi), NCCL for GPU memory. The world of
// one (no launcher) is localChannel(): the same calls, nothing crosses.
//
// Collectives are started and waited for by bucket, so an engine that can
// run them in the background overlaps a bucket's reduction with the
// backward of the layers below it. Every failure (a peer that died, an
// engine error, a wait past the timeout) throws RuntimeError naming this
// rank; the caller then abort()s, so no rank hangs on the others.
//
// Engines register themselves (registerChannelEngine), as backends do, so
// this file knows none of them and a build has the engines it links.
//
// Every call on a channel comes from the thread that opened it (engines
// may rely on it: MPI is initialized MPI_THREAD_FUNNELED, and a GPU
// engine's context is that thread's). Every rank makes the same calls in
// the same order with the same shapes: the plan is the same everywhere,
// so a buffer that is reduced in place (in == out) on one rank is reduced
// in place on all of them.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_HAL_CHANNEL_H
#define FBT_RUNTIME_HAL_CHANNEL_H

#include "runtime/hal/Device.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace fbt {

class Channel {
public:
  virtual ~Channel() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// "MPI (Open MPI 4.1), 2 ranks", for logs and errors.
  virtual std::string describe() const = 0;

  /// Starts out[i] = scale * (the sum over every rank of in[i]) for each
  /// buffer (ReduceBuffer, StepRunner.h); `bucket` names it for wait(). Returns as soon as the engine has
  /// it; the buffers stay untouched by the caller until wait(bucket).
  virtual void startAllReduce(int64_t bucket, const std::vector<ReduceBuffer> &buffers,
                              float scale) = 0;
  /// ZeRO-1's collectives, bucketed as startAllReduce is. Reduce-scatter:
  /// out[i] = scale * (the sum over every rank of in[i]) on rank
  /// buffers[i].root only (elsewhere out[i] is not written, or holds
  /// anything). All-gather: out[i] = in[i] of rank buffers[i].root, on
  /// every rank.
  virtual void startReduceScatter(int64_t bucket, const std::vector<ReduceBuffer> &buffers,
                                  float scale) = 0;
  virtual void startAllGather(int64_t bucket, const std::vector<ReduceBuffer> &buffers) = 0;
  /// Waits for the bucket's collective (a no-op for one never started).
  virtual void wait(int64_t bucket) = 0;
  /// Moves the started reductions on, without waiting. Many MPIs advance a
  /// non-blocking collective only inside their own calls, so the runner
  /// calls this between a step's calls while a bucket is in flight: the
  /// reduction then runs beside the backward instead of inside wait().
  virtual void progress() {}

  /// Host memory, blocking: values[i] = the sum over every rank.
  virtual void allReduceHost(double *values, int64_t count) = 0;
  /// Host memory, blocking: every rank's `value`, in rank order.
  virtual std::vector<uint64_t> allGatherHost(uint64_t value) = 0;
  /// Host memory, blocking: `bytes` at `data` on rank `root` copied to
  /// `data` on every other rank (an engine's bootstrap: NCCL's unique id).
  virtual void broadcastHost(void *data, size_t bytes, int root) = 0;

  /// Ends every rank's process with exit status `code` (after this rank
  /// failed and said why). Does not return.
  [[noreturn]] virtual void abort(int code) = 0;

  /// "rank 1: " where several ranks run, "" alone: the prefix of errors.
  std::string who() const {
    return size() > 1 ? "rank " + std::to_string(rank()) + ": " : std::string();
  }
};

/// The world of one on `device`: reductions are out = scale * in.
std::unique_ptr<Channel> localChannel(Device &device);

/// How this process was launched: its rank, the number of ranks and its
/// rank among those on its machine, from the launcher's environment
/// (mpirun's OMPI_COMM_WORLD_*, PMI_*, or torchrun's RANK / WORLD_SIZE /
/// LOCAL_RANK); size 1 and `launched` false when started alone.
struct LaunchInfo {
  int rank = 0, size = 1, localRank = 0;
  bool launched = false;
  std::string launcher; ///< "mpirun", "pmi", "torchrun" or ""
};
LaunchInfo launchInfo();

/// An engine that joins launched ranks: which devices it reduces on, and
/// how it opens a channel for `device`.
struct ChannelEngine {
  std::string name; ///< "mpi", "nccl"
  bool (*serves)(const Device &device) = nullptr;
  std::unique_ptr<Channel> (*open)(Device &device, const LaunchInfo &launch) = nullptr;
};
bool registerChannelEngine(ChannelEngine engine);

/// The channel of this process on `device`: localChannel() when started
/// alone or launched as a world of one, else the engine that serves the
/// device; RuntimeError when the launch asks for ranks this build cannot
/// join (built without MPI, ...). FBT_CHANNEL=<engine> ("mpi", "nccl")
/// makes a launched process use that engine, even in a world of one (so
/// that `mpirun -np 1` runs an engine's code on one machine with one
/// device); a process started alone ignores it.
std::unique_ptr<Channel> openChannel(Device &device);

/// The seconds an engine's wait for a collective may take:
/// FBT_COLLECTIVE_TIMEOUT, default 600; RuntimeError unless it is a
/// positive number.
double collectiveTimeout();
/// "<what> has not completed after <seconds> s: a peer rank died or
/// stopped responding (FBT_COLLECTIVE_TIMEOUT)", every engine's wording.
std::string collectiveTimedOut(const std::string &what, double seconds);

} // namespace fbt

#endif // FBT_RUNTIME_HAL_CHANNEL_H
