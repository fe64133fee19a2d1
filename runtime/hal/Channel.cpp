//===- Channel.cpp - the world of one, the launch, the engines ------------===//
//
// What every build has: the channel of a process started alone, how a
// launcher said where this process stands (its environment), and the list
// of engines the linked folders registered (hal/mpi, ...). Which engine
// joins the ranks is decided by the device's memory, not by a flag, so a
// launch this build cannot serve fails at once with the reason instead of
// running every rank alone. FBT_CHANNEL names one only to run an engine
// where it would not be chosen: a launched world of one (tests, a machine
// with one GPU).
//
//===----------------------------------------------------------------------===//

#include "runtime/hal/Channel.h"

#include "runtime/base/Error.h"

#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace fbt {

namespace {

/// out = scale * in on `device`, for one buffer.
void scaleCopy(Device &device, const ReduceBuffer &b, float scale) {
  if (b.count <= 0)
    return;
  size_t bytes = size_t(b.count) * sizeof(float);
  if (b.in != b.out)
    device.copy(b.out, b.in, bytes);
  if (scale == 1.0f)
    return;
  if (device.hostMemory()) {
    float *p = static_cast<float *>(b.out);
    for (int64_t i = 0; i < b.count; ++i)
      p[i] *= scale;
    return;
  }
  // Elsewhere the pointer is the device's: scale a host copy. A world of one
  // reduces once per step, so the round trip is not worth a kernel.
  std::vector<float> host(size_t(b.count));
  device.download(host.data(), b.out, bytes);
  for (float &v : host)
    v *= scale;
  device.upload(b.out, host.data(), bytes);
}

class LocalChannel final : public Channel {
public:
  explicit LocalChannel(Device &device) : device_(device) {}

  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string describe() const override { return "local, 1 rank"; }

  // Done at once: wait() has nothing left to wait for.
  void startAllReduce(int64_t, const std::vector<ReduceBuffer> &buffers,
                      float scale) override {
    for (const ReduceBuffer &b : buffers)
      scaleCopy(device_, b, scale);
  }
  void startReduceScatter(int64_t, const std::vector<ReduceBuffer> &buffers,
                          float scale) override {
    for (const ReduceBuffer &b : buffers)
      scaleCopy(device_, b, scale);
  }
  void startAllGather(int64_t, const std::vector<ReduceBuffer> &buffers) override {
    for (const ReduceBuffer &b : buffers)
      scaleCopy(device_, b, 1.0f);
  }
  void wait(int64_t) override {}

  void allReduceHost(double *, int64_t) override {}
  std::vector<uint64_t> allGatherHost(uint64_t value) override { return {value}; }
  void broadcastHost(void *, size_t, int) override {} // rank 0 is every rank

  [[noreturn]] void abort(int code) override {
    std::fflush(stderr);
    std::_Exit(code);
  }

private:
  Device &device_;
};

/// The variable's value, or null when it is unset or empty (an empty
/// value is how a shell unsets a variable it cannot unset).
const char *env(const char *name) {
  const char *value = std::getenv(name);
  return value && *value ? value : nullptr;
}

/// `value` of variable `name` as a non-negative int.
int parseCount(const char *name, const char *value) {
  long long n = 0;
  const char *p = value;
  for (; *p >= '0' && *p <= '9'; ++p) {
    n = n * 10 + (*p - '0');
    if (n > INT_MAX)
      break;
  }
  if (*p || n > INT_MAX)
    throw RuntimeError(std::string(name) + "='" + value +
                       "' from the launcher is not a non-negative integer");
  return int(n);
}

/// One launcher's variables: rank and size must both be set for it to
/// count; the local rank is read from the first of `local` that is set.
struct LauncherVars {
  const char *launcher;
  const char *rank;
  const char *size;
  std::vector<const char *> local;
};

} // namespace

std::unique_ptr<Channel> localChannel(Device &device) {
  return std::make_unique<LocalChannel>(device);
}

LaunchInfo launchInfo() {
  // mpirun's first: Open MPI also sets PMI_* under some schedulers, and a
  // job script may export RANK for its own reasons.
  static const LauncherVars launchers[] = {
      {"mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
       {"OMPI_COMM_WORLD_LOCAL_RANK"}},
      {"pmi", "PMI_RANK", "PMI_SIZE", {"MPI_LOCALRANKID", "PMI_LOCAL_RANK"}},
      {"torchrun", "RANK", "WORLD_SIZE", {"LOCAL_RANK"}},
  };
  LaunchInfo info;
  for (const LauncherVars &l : launchers) {
    const char *rank = env(l.rank), *size = env(l.size);
    if (!rank || !size)
      continue;
    info.rank = parseCount(l.rank, rank);
    info.size = parseCount(l.size, size);
    if (info.size < 1)
      throw RuntimeError(std::string(l.size) + "='" + size +
                         "' from the launcher: a run has at least one rank");
    if (info.rank >= info.size)
      throw RuntimeError(std::string(l.rank) + "='" + rank + "' from the launcher is not below " +
                         l.size + "='" + size + "'");
    for (const char *name : l.local)
      if (const char *local = env(name)) {
        info.localRank = parseCount(name, local);
        if (info.localRank >= info.size)
          throw RuntimeError(std::string(name) + "='" + local +
                             "' from the launcher is not below " + l.size + "='" + size + "'");
        break;
      }
    info.launched = true;
    info.launcher = l.launcher;
    return info;
  }
  return info;
}

namespace {
std::vector<ChannelEngine> &engines() {
  static std::vector<ChannelEngine> all; // filled by static initializers
  return all;
}
} // namespace

bool registerChannelEngine(ChannelEngine engine) {
  engines().push_back(std::move(engine));
  return true;
}

std::unique_ptr<Channel> openChannel(Device &device) {
  LaunchInfo launch = launchInfo();
  if (!launch.launched)
    return localChannel(device);
  if (const char *name = env("FBT_CHANNEL")) {
    std::string built;
    for (const ChannelEngine &e : engines()) {
      if (e.name != name) {
        built += (built.empty() ? "" : ", ") + e.name;
        continue;
      }
      if (!e.serves(device))
        throw RuntimeError(std::string("FBT_CHANNEL=") + name + ": the " + name +
                           " engine does not join ranks on " + device.describe());
      return e.open(device, launch);
    }
    throw RuntimeError(std::string("FBT_CHANNEL=") + name + ": this fbt has no such engine (" +
                       (built.empty() ? "it was built with none" : "it has " + built) + ")");
  }
  // A launch of one rank (torchrun --nproc-per-node 1, mpirun -np 1) has
  // nobody to join: it needs no engine, and runs where none was built.
  if (launch.size == 1)
    return localChannel(device);
  for (const ChannelEngine &e : engines())
    if (e.serves(device))
      return e.open(device, launch);
  std::string where = "launched as rank " + std::to_string(launch.rank) + " of " +
                      std::to_string(launch.size) + " (" + launch.launcher + "), but ";
  if (device.hostMemory())
    throw RuntimeError(where + "this fbt was built without MPI, which joins ranks on "
                               "the CPU; rebuild it with libopenmpi-dev");
  bool nccl = false;
  for (const ChannelEngine &e : engines())
    nccl = nccl || e.name == "nccl";
  // With NCCL built in, only a device of no engine's (the SIMT emulator's)
  // gets here.
  throw RuntimeError(where + "no engine here joins ranks on " + device.describe() +
                     (nccl ? std::string()
                           : ": GPU ranks are joined through NCCL, which this fbt was built "
                             "without (it needs MPI and nccl.h where it is built)"));
}

double collectiveTimeout() {
  const char *value = env("FBT_COLLECTIVE_TIMEOUT");
  if (!value)
    return 600;
  char *end = nullptr;
  double seconds = std::strtod(value, &end);
  if (*end || !std::isfinite(seconds) || seconds <= 0)
    throw RuntimeError(std::string("FBT_COLLECTIVE_TIMEOUT='") + value +
                       "' is not a positive number of seconds");
  return seconds;
}

std::string collectiveTimedOut(const std::string &what, double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", seconds);
  return what + " has not completed after " + text +
         " s: a peer rank died or stopped responding (FBT_COLLECTIVE_TIMEOUT)";
}

} // namespace fbt
