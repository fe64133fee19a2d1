//===- MpiChannel.cpp - ranks joined through MPI, on host memory ----------===//
//
// The engine for runs on the CPU: each rank's buffers are host memory, so
// MPI reduces them where they are. Only MPI's C API is used, so any MPI
// (Open MPI, MPICH) with an mpi.h builds it; its own launcher starts the
// ranks (mpirun -np N), and MPI_COMM_WORLD must agree with what the
// launcher's environment said (launchInfo()).
//
// Every collective is non-blocking and completed by polling with a
// deadline, the host ones too: a blocking MPI call waits forever for a
// peer that hangs, and the run would hang with it instead of failing with
// a message. The deadline is FBT_COLLECTIVE_TIMEOUT seconds (default 600)
// from the start of each wait; generous, since a slow peer's step is also
// waited for.
//
// The NCCL engine (hal/nccl) opens one too, through MpiChannel.h: GPU
// ranks are started by mpirun as well, and NCCL bootstraps over MPI.
//
// MPI is initialized MPI_THREAD_FUNNELED: the CPU steps run on a team of
// threads, but only the thread that opened the channel calls MPI. Many
// MPIs progress a non-blocking collective only inside MPI calls, so a
// bucket's reduction advances mostly in wait().
//
//===----------------------------------------------------------------------===//

#include "runtime/hal/mpi/MpiChannel.h"

#include "runtime/base/Error.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <thread>

// The C API only: Open MPI's and MPICH's mpi.h would otherwise pull in
// their C++ bindings, which need a library of their own.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

namespace fbt {

namespace {

std::string mpiErrorString(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, size_t(length));
}

/// "Open MPI v4.1.4": the first line of MPI_Get_library_version up to its
/// first comma, its blanks squeezed (MPICH's has tabs).
std::string libraryName() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int length = 0;
  if (MPI_Get_library_version(text, &length) != MPI_SUCCESS)
    return "unknown";
  std::string full(text, size_t(length)), name;
  for (char c : full.substr(0, full.find_first_of("\n,"))) {
    bool blank = c == ' ' || c == '\t' || c == '\r';
    if (!blank)
      name += c;
    else if (!name.empty() && name.back() != ' ')
      name += ' ';
  }
  while (!name.empty() && name.back() == ' ')
    name.pop_back();
  return name.empty() ? "unknown" : name;
}

/// Calls `start(offset, count)` on [0, count) in pieces an int can count.
template <typename Start> void inChunks(int64_t count, Start start) {
  for (int64_t offset = 0; offset < count; offset += INT_MAX)
    start(offset, int(std::min<int64_t>(INT_MAX, count - offset)));
}

class MpiChannel final : public Channel {
public:
  MpiChannel(const LaunchInfo &launch, double timeout)
      : rank_(launch.rank), size_(launch.size), timeout_(timeout) {}

  /// Initializes MPI (unless the program did) and joins the ranks.
  void join(const LaunchInfo &launch) {
    library_ = libraryName();
    int initialized = 0;
    check(MPI_Initialized(&initialized), "MPI_Initialized");
    if (!initialized) {
      int provided = 0;
      check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided),
            "MPI_Init_thread");
      ownsMpi_ = true;
    }
    // A communicator of its own, so that nothing else the program sends on
    // MPI_COMM_WORLD can match ours, and errors that return to the caller
    // instead of ending the process before it said which rank failed.
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
    check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    int rank = 0, size = 0;
    check(MPI_Comm_rank(comm_, &rank), "MPI_Comm_rank");
    check(MPI_Comm_size(comm_, &size), "MPI_Comm_size");
    if (rank != launch.rank || size != launch.size) {
      // A world of one (MPI started without its launcher) waits for nobody
      // and can end cleanly; a larger one may have peers that got further.
      failed_ = size > 1;
      throw RuntimeError(prefix() + "the launcher (" + launch.launcher + ") says rank " +
                         std::to_string(launch.rank) + " of " + std::to_string(launch.size) +
                         ", but " + library_ + " sees rank " + std::to_string(rank) + " of " +
                         std::to_string(size) +
                         ": launch with the mpirun of the MPI this fbt was built with");
    }
  }

  ~MpiChannel() override {
    // MPI_Finalize waits for the other ranks and for every request: after
    // a failure it could wait forever, so the process then ends without
    // it and the launcher reports the failure.
    if (failed_ || !pending_.empty())
      return;
    if (comm_ != MPI_COMM_NULL)
      MPI_Comm_free(&comm_);
    if (ownsMpi_)
      MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string describe() const override {
    return "MPI (" + library_ + "), " + std::to_string(size_) + " ranks";
  }

  void startAllReduce(int64_t bucket, const std::vector<ReduceBuffer> &buffers,
                      float scale) override {
    Pending &p = begin(bucket, "all-reduce", buffers, scale);
    for (const ReduceBuffer &b : buffers) {
      // MPI requires every rank to pass MPI_IN_PLACE or none: the plan is
      // the same on every rank, so its buffers are.
      bool inPlace = b.in == b.out;
      inChunks(b.count, [&](int64_t offset, int count) {
        float *out = static_cast<float *>(b.out) + offset;
        const void *in = inPlace ? MPI_IN_PLACE : static_cast<const float *>(b.in) + offset;
        MPI_Request request;
        check(MPI_Iallreduce(in, out, count, MPI_FLOAT, MPI_SUM, comm_, &request),
              "MPI_Iallreduce");
        p.requests.push_back(request);
      });
    }
  }

  void startReduceScatter(int64_t bucket, const std::vector<ReduceBuffer> &buffers,
                          float scale) override {
    // Whole tensors as the shards: one reduction onto each tensor's owner.
    std::vector<ReduceBuffer> mine;
    for (const ReduceBuffer &b : buffers)
      if (b.root == rank_)
        mine.push_back(b);
    Pending &p = begin(bucket, "reduce-scatter", mine, scale);
    for (const ReduceBuffer &b : buffers) {
      checkRoot(b.root);
      bool root = b.root == rank_;
      inChunks(b.count, [&](int64_t offset, int count) {
        const float *in = static_cast<const float *>(b.in) + offset;
        float *out = static_cast<float *>(b.out) + offset;
        MPI_Request request;
        check(MPI_Ireduce(root && b.in == b.out ? MPI_IN_PLACE : in, root ? out : nullptr,
                          count, MPI_FLOAT, MPI_SUM, b.root, comm_, &request),
              "MPI_Ireduce");
        p.requests.push_back(request);
      });
    }
  }

  void startAllGather(int64_t bucket, const std::vector<ReduceBuffer> &buffers) override {
    // The owner's values broadcast into every rank's `out`.
    Pending &p = begin(bucket, "all-gather", {}, 1.0f);
    for (const ReduceBuffer &b : buffers) {
      checkRoot(b.root);
      if (b.root == rank_ && b.in != b.out)
        std::copy_n(static_cast<const float *>(b.in), b.count, static_cast<float *>(b.out));
      inChunks(b.count, [&](int64_t offset, int count) {
        MPI_Request request;
        check(MPI_Ibcast(static_cast<float *>(b.out) + offset, count, MPI_FLOAT, b.root, comm_,
                         &request),
              "MPI_Ibcast");
        p.requests.push_back(request);
      });
    }
  }

  void progress() override {
    for (auto &[bucket, p] : pending_) {
      int done = 0;
      check(MPI_Testall(int(p.requests.size()), p.requests.data(), &done,
                        MPI_STATUSES_IGNORE),
            "MPI_Testall");
    }
  }

  void wait(int64_t bucket) override {
    auto it = pending_.find(bucket);
    if (it == pending_.end())
      return;
    Pending &p = it->second;
    complete(p.requests, "the " + p.what + " of bucket " + std::to_string(bucket));
    if (p.scale != 1.0f)
      for (const ReduceBuffer &b : p.scaled) {
        float *out = static_cast<float *>(b.out);
        for (int64_t i = 0; i < b.count; ++i)
          out[i] *= p.scale;
      }
    pending_.erase(it);
  }

  void allReduceHost(double *values, int64_t count) override {
    std::vector<MPI_Request> requests;
    inChunks(count, [&](int64_t offset, int n) {
      MPI_Request request;
      check(MPI_Iallreduce(MPI_IN_PLACE, values + offset, n, MPI_DOUBLE, MPI_SUM, comm_,
                           &request),
            "MPI_Iallreduce");
      requests.push_back(request);
    });
    complete(requests, "the all-reduce of " + std::to_string(count) + " host values");
  }

  std::vector<uint64_t> allGatherHost(uint64_t value) override {
    std::vector<uint64_t> all(size_t(size_), 0);
    std::vector<MPI_Request> requests(1);
    check(MPI_Iallgather(&value, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, comm_,
                         &requests[0]),
          "MPI_Iallgather");
    complete(requests, "the all-gather of one value per rank");
    return all;
  }

  void broadcastHost(void *data, size_t bytes, int root) override {
    if (root < 0 || root >= size_)
      throw RuntimeError(prefix() + "a broadcast from rank " + std::to_string(root) +
                         ", which is not one of the " + std::to_string(size_) + " ranks");
    std::vector<MPI_Request> requests;
    inChunks(int64_t(bytes), [&](int64_t offset, int n) {
      MPI_Request request;
      check(MPI_Ibcast(static_cast<char *>(data) + offset, n, MPI_BYTE, root, comm_, &request),
            "MPI_Ibcast");
      requests.push_back(request);
    });
    complete(requests, "the broadcast of " + std::to_string(bytes) + " bytes from rank " +
                           std::to_string(root));
  }

  [[noreturn]] void abort(int code) override {
    std::fflush(stdout);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code); // MPI_Abort does not return; should it, end this rank at least
  }

private:
  /// A started bucket: its requests, and what to scale when they are done.
  struct Pending {
    std::string what; ///< "all-reduce", ...
    std::vector<MPI_Request> requests;
    std::vector<ReduceBuffer> scaled;
    float scale = 1;
  };

  std::string prefix() const { return "rank " + std::to_string(rank_) + ": "; }

  /// Bucket `bucket`'s record, new; RuntimeError if it is still in flight.
  Pending &begin(int64_t bucket, const std::string &what,
                 const std::vector<ReduceBuffer> &scaled, float scale) {
    if (pending_.count(bucket))
      throw RuntimeError(prefix() + "the " + what + " of bucket " + std::to_string(bucket) +
                         " was started again before it was waited for");
    Pending &p = pending_[bucket];
    p.what = what;
    p.scaled = scaled;
    p.scale = scale;
    return p;
  }

  void checkRoot(int root) const {
    if (root < 0 || root >= size_)
      throw RuntimeError(prefix() + "a collective rooted at rank " + std::to_string(root) +
                         ", which is not one of the " + std::to_string(size_) + " ranks");
  }

  /// RuntimeError naming this rank and `call` unless `code` is success.
  void check(int code, const char *call) {
    if (code == MPI_SUCCESS)
      return;
    failed_ = true;
    throw RuntimeError(prefix() + call + " failed: " + mpiErrorString(code));
  }

  /// Waits for `requests`, polling, until the deadline; `what` names them.
  void complete(std::vector<MPI_Request> &requests, const std::string &what) {
    using Clock = std::chrono::steady_clock;
    Clock::time_point deadline =
        Clock::now() +
        std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(timeout_));
    for (int polls = 0;; ++polls) {
      int done = 0;
      check(MPI_Testall(int(requests.size()), requests.data(), &done, MPI_STATUSES_IGNORE),
            "MPI_Testall");
      if (done)
        return;
      if (Clock::now() >= deadline) {
        failed_ = true;
        throw RuntimeError(prefix() + collectiveTimedOut(what, timeout_));
      }
      // The first polls spin, for a reduction that is nearly done; later
      // ones leave the core to the other ranks on this machine.
      if (polls >= 100)
        std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_, size_;
  double timeout_;
  std::string library_;
  bool ownsMpi_ = false; // this channel initialized MPI, and finalizes it
  bool failed_ = false;  // MPI is left where it cannot be finalized
  std::map<int64_t, Pending> pending_;
};

// Host memory: the CPU's. GPU memory is NCCL's, even where an MPI could
// read it (CUDA-aware builds), so that the engine is chosen the same way
// on every machine.
const bool registered = registerChannelEngine(
    {"mpi", [](const Device &device) { return device.hostMemory(); },
     [](Device &, const LaunchInfo &launch) { return openMpiChannel(launch); }});

} // namespace

std::unique_ptr<Channel> openMpiChannel(const LaunchInfo &launch) {
  // torchrun starts the ranks without an MPI runtime, so MPI_Init would
  // give each a world of its own.
  if (launch.launcher == "torchrun" && !std::getenv("OMPI_COMM_WORLD_SIZE"))
    throw RuntimeError("rank " + std::to_string(launch.rank) +
                       ": RANK/WORLD_SIZE were set (torchrun-style), but ranks are joined "
                       "through MPI here: launch with mpirun -np " +
                       std::to_string(launch.size));
  auto channel = std::make_unique<MpiChannel>(launch, collectiveTimeout());
  channel->join(launch);
  return channel;
}

} // namespace fbt
