//===- NcclChannel.cpp - ranks joined through NCCL, on NVIDIA GPUs --------===//
//
// The engine for runs on GPUs, one GPU per rank (CudaDevice picks the
// local rank's): each rank's gradients stay in GPU memory and NCCL reduces
// them there. The processes are joined through MPI first (MpiChannel.h):
// its launcher starts the ranks, rank 0's NCCL unique id reaches the
// others through it, and it serves the host collectives (losses,
// fingerprints) and abort(), which NCCL has no use for.
//
// A bucket's reduction runs on a stream of its own, so that the backward
// of the layers below goes on on the compute stream meanwhile: an event on
// the compute stream marks where the bucket's gradients are complete, the
// communication stream waits for it, reduces, and records the bucket's
// done event. wait() makes the compute stream wait for that event, so the
// optimizer's kernels queued after it read the reduced values, and then
// polls the event from the host: a peer that died or hangs leaves NCCL's
// kernels spinning, and only the host can notice (NCCL's asynchronous
// error, or FBT_COLLECTIVE_TIMEOUT seconds as with MPI), abort the
// communicator and fail naming the rank and the bucket.
//
// The scale is folded into the reduction: ncclSum for 1, ncclAvg for one
// over the ranks, else a pre-multiplied sum (created once per scale).
//
//===----------------------------------------------------------------------===//

#include "runtime/base/Error.h"
#include "runtime/hal/Channel.h"
#include "runtime/hal/cuda/CudaDevice.h"
#include "runtime/hal/mpi/MpiChannel.h"
#include "runtime/hal/nccl/NcclApi.h"

#include <chrono>
#include <map>
#include <thread>

namespace fbt::nccl {

namespace {

class NcclChannel final : public Channel {
public:
  NcclChannel(cuda::CudaDevice &device, std::unique_ptr<Channel> host, const Api &api,
              double timeout)
      : host_(std::move(host)), device_(device), cu_(cuda::driver()), nccl_(api),
        timeout_(timeout) {}

  /// Makes this rank's communicator: the GPU's context current, rank 0's
  /// unique id broadcast through MPI, every rank in ncclCommInitRank.
  void join() {
    // Retained here too: the channel outlives the session's device.
    checkCuda(cu_.cuDevicePrimaryCtxRetain(&context_, device_.ordinal()),
              "cuDevicePrimaryCtxRetain");
    checkCuda(cu_.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
    // Non-blocking: the legacy default stream's copies (uploads and
    // downloads) must not wait for a reduction, nor it for them.
    checkCuda(cu_.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    ncclUniqueId id{};
    if (rank() == 0)
      checkNccl(nccl_.ncclGetUniqueId(&id), "ncclGetUniqueId");
    host_->broadcastHost(&id, sizeof id, 0);
    checkNccl(nccl_.ncclCommInitRank(&comm_, size(), id, rank()), "ncclCommInitRank");
  }

  ~NcclChannel() override {
    bool clean = !failed_;
    for (const auto &[bucket, b] : buckets_)
      clean = clean && !b.pending;
    if (context_)
      cu_.cuCtxSetCurrent(context_);
    if (comm_) {
      if (clean) {
        cu_.cuStreamSynchronize(stream_);
        for (const auto &[scale, op] : premulSums_)
          nccl_.ncclRedOpDestroy(op, comm_);
        nccl_.ncclCommDestroy(comm_);
      } else {
        nccl_.ncclCommAbort(comm_); // its kernels may wait for a peer forever
      }
    }
    for (const auto &[bucket, b] : buckets_) {
      cu_.cuEventDestroy_v2(b.ready);
      cu_.cuEventDestroy_v2(b.done);
    }
    if (stream_)
      cu_.cuStreamDestroy_v2(stream_);
    if (context_)
      cu_.cuDevicePrimaryCtxRelease_v2(device_.ordinal());
    // After a failure MPI_Finalize could wait for peers that never come:
    // the process ends without it, and the launcher reports the failure.
    if (!clean)
      (void)host_.release();
  }

  int rank() const override { return host_->rank(); }
  int size() const override { return host_->size(); }
  std::string describe() const override {
    return "NCCL " + nccl_.version + " over MPI, " + std::to_string(size()) +
           (size() == 1 ? " rank" : " ranks");
  }

  void startAllReduce(int64_t bucket, const std::vector<ReduceBuffer> &buffers,
                      float scale) override {
    ncclRedOp_t op = reduction(scale);
    enqueue(bucket, "all-reduce", [&] {
      for (const ReduceBuffer &r : buffers)
        if (r.count > 0)
          checkNccl(nccl_.ncclAllReduce(r.in, r.out, size_t(r.count), ncclFloat32, op, comm_,
                                        stream_),
                    "ncclAllReduce");
    });
  }

  void startReduceScatter(int64_t bucket, const std::vector<ReduceBuffer> &buffers,
                          float scale) override {
    // Whole tensors as the shards: one reduction onto each tensor's owner.
    ncclRedOp_t op = reduction(scale);
    enqueue(bucket, "reduce-scatter", [&] {
      for (const ReduceBuffer &r : buffers)
        if (r.count > 0)
          checkNccl(nccl_.ncclReduce(r.in, r.out, size_t(r.count), ncclFloat32, op, r.root,
                                     comm_, stream_),
                    "ncclReduce");
    });
  }

  void startAllGather(int64_t bucket, const std::vector<ReduceBuffer> &buffers) override {
    enqueue(bucket, "all-gather", [&] {
      for (const ReduceBuffer &r : buffers)
        if (r.count > 0)
          checkNccl(nccl_.ncclBroadcast(r.in, r.out, size_t(r.count), ncclFloat32, r.root,
                                        comm_, stream_),
                    "ncclBroadcast");
    });
  }

  void wait(int64_t bucket) override {
    auto it = buckets_.find(bucket);
    if (it == buckets_.end() || !it->second.pending)
      return;
    Bucket &b = it->second;
    // The compute stream's later work (the optimizer) reads the results.
    checkCuda(cu_.cuStreamWaitEvent(device_.stream(), b.done, 0), "cuStreamWaitEvent");
    std::string what = "the " + b.what + " of bucket " + std::to_string(bucket);
    using Clock = std::chrono::steady_clock;
    Clock::time_point deadline =
        Clock::now() +
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_));
    for (int polls = 0;; ++polls) {
      ncclResult_t async = ncclSuccess;
      checkNccl(nccl_.ncclCommGetAsyncError(comm_, &async), "ncclCommGetAsyncError");
      if (async != ncclSuccess && async != ncclInProgress)
        fail("NCCL failed during " + what + ": " + errorText(async));
      CUresult r = cu_.cuEventQuery(b.done);
      if (r == CUDA_SUCCESS)
        break;
      if (r != CUDA_ERROR_NOT_READY)
        fail(what + ": cuEventQuery: " + cuda::errorText(r));
      if (Clock::now() >= deadline)
        fail(collectiveTimedOut(what, timeout_));
      // The first polls spin, for a reduction that is nearly done; later
      // ones leave the core to the other ranks on this machine.
      if (polls >= 100)
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
    b.pending = false;
  }

  void allReduceHost(double *values, int64_t count) override {
    host_->allReduceHost(values, count);
  }
  std::vector<uint64_t> allGatherHost(uint64_t value) override {
    return host_->allGatherHost(value);
  }
  void broadcastHost(void *data, size_t bytes, int root) override {
    host_->broadcastHost(data, bytes, root);
  }
  [[noreturn]] void abort(int code) override { host_->abort(code); }

private:
  /// A bucket's events: its gradients ready on the compute stream, its
  /// reduction done on the communication stream. Reused step after step.
  struct Bucket {
    CUevent ready = nullptr, done = nullptr;
    bool pending = false;
    std::string what; ///< "all-reduce", ...
  };

  /// Queues bucket `bucket`'s NCCL calls (`calls`, one group: one launch)
  /// on the communication stream, after the compute stream's work so far.
  template <typename Calls>
  void enqueue(int64_t bucket, const std::string &what, Calls calls) {
    Bucket &b = buckets_[bucket];
    if (b.pending)
      throw RuntimeError(prefix() + "the " + what + " of bucket " + std::to_string(bucket) +
                         " was started again before it was waited for");
    if (!b.ready) {
      // Timing would make every record a synchronization point.
      checkCuda(cu_.cuEventCreate(&b.ready, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
      checkCuda(cu_.cuEventCreate(&b.done, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    }
    checkCuda(cu_.cuEventRecord(b.ready, device_.stream()), "cuEventRecord");
    checkCuda(cu_.cuStreamWaitEvent(stream_, b.ready, 0), "cuStreamWaitEvent");
    checkNccl(nccl_.ncclGroupStart(), "ncclGroupStart");
    calls();
    checkNccl(nccl_.ncclGroupEnd(), "ncclGroupEnd");
    checkCuda(cu_.cuEventRecord(b.done, stream_), "cuEventRecord");
    b.pending = true;
    b.what = what;
  }

  std::string prefix() const { return "rank " + std::to_string(rank()) + ": "; }

  /// The reduction that multiplies the sum by `scale`.
  ncclRedOp_t reduction(float scale) {
    if (scale == 1.0f)
      return ncclSum;
    // GradientSync's mean over the ranks alone is exactly this quotient.
    if (scale == 1.0f / float(size()))
      return ncclAvg;
    auto it = premulSums_.find(scale);
    if (it != premulSums_.end())
      return it->second;
    ncclRedOp_t op;
    checkNccl(nccl_.ncclRedOpCreatePreMulSum(&op, &scale, ncclFloat32, ncclScalarHostImmediate,
                                             comm_),
              "ncclRedOpCreatePreMulSum");
    premulSums_[scale] = op;
    return op;
  }

  /// Aborts the communicator (its kernels may be waiting for a peer that
  /// will never come) and throws RuntimeError naming this rank.
  [[noreturn]] void fail(const std::string &why) {
    failed_ = true;
    if (comm_)
      nccl_.ncclCommAbort(comm_); // frees the pre-multiplied sums too
    comm_ = nullptr;
    premulSums_.clear();
    throw RuntimeError(prefix() + why);
  }

  void checkNccl(ncclResult_t result, const char *call) {
    if (result != ncclSuccess)
      fail(std::string(call) + " failed: " + errorText(result));
  }
  void checkCuda(CUresult result, const char *call) {
    if (result != CUDA_SUCCESS)
      fail(std::string(call) + ": " + cuda::errorText(result));
  }

  std::unique_ptr<Channel> host_; // first: MPI is finalized after NCCL is gone
  cuda::CudaDevice &device_;
  const cuda::Driver &cu_;
  const Api &nccl_;
  double timeout_;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr; // the communication stream
  ncclComm_t comm_ = nullptr;
  std::map<int64_t, Bucket> buckets_;
  std::map<float, ncclRedOp_t> premulSums_;
  bool failed_ = false;
};

std::unique_ptr<Channel> openNcclChannel(Device &device, const LaunchInfo &launch) {
  // NCCL first: where it is missing, every rank fails alike before MPI starts.
  const Api *api = nullptr;
  try {
    api = &nccl::api();
  } catch (const RuntimeError &e) {
    throw RuntimeError("rank " + std::to_string(launch.rank) + ": " + e.what());
  }
  double timeout = collectiveTimeout();
  auto channel = std::make_unique<NcclChannel>(static_cast<cuda::CudaDevice &>(device),
                                               openMpiChannel(launch), *api, timeout);
  channel->join();
  return channel;
}

// The CUDA backend's devices: their memory is the GPU's.
const bool registered = registerChannelEngine(
    {"nccl",
     [](const Device &device) {
       return dynamic_cast<const cuda::CudaDevice *>(&device) != nullptr;
     },
     openNcclChannel});

} // namespace

} // namespace fbt::nccl
