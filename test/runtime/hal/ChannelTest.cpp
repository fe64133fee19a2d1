//===- ChannelTest.cpp - the world of one, the launch, choosing an engine -===//
//
// The channel of a process started alone computes out = scale * in on any
// device: in place or not, on host memory directly and elsewhere through
// the device's copies (a fake device whose pointers cannot be read from
// the host proves it never touches them). The launcher's environment is
// read strictly: a bad rank or size is an error naming the variable and
// its value, never a silent world of one. A launch this build cannot join
// says why. The MPI engine itself runs under mpirun (MpiChannelCheck.cpp).
//
//===----------------------------------------------------------------------===//

#include "runtime/base/Error.h"
#include "runtime/hal/Channel.h"
#include "test/runtime/hal/HostDevice.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>

namespace fbt {
namespace {

/// Memory the host cannot read, as a GPU's: its pointers are small
/// addresses no process maps, so dereferencing one crashes the test.
class RemoteDevice : public Device {
public:
  std::string describe() const override { return "remote (test)"; }
  void *allocate(size_t bytes, const std::string &) override {
    uintptr_t address = next_;
    next_ += (bytes + 63) / 64 * 64 + 64;
    blocks_[address].assign(bytes, 0);
    return reinterpret_cast<void *>(address);
  }
  void release(void *ptr) noexcept override { blocks_.erase(uintptr_t(ptr)); }
  void upload(void *device, const void *host, size_t bytes) override {
    ++uploads;
    std::memcpy(at(device, bytes), host, bytes);
  }
  void download(void *host, const void *device, size_t bytes) override {
    ++downloads;
    std::memcpy(host, at(device, bytes), bytes);
  }
  void copy(void *to, const void *from, size_t bytes) override {
    std::memmove(at(to, bytes), at(from, bytes), bytes);
  }
  void zero(void *device, size_t bytes) override { std::memset(at(device, bytes), 0, bytes); }
  std::unique_ptr<StepRunner> makeRunner(const StepPlan &) override { return nullptr; }
  Json tuneKey() const override { return Json::object(); }

  int uploads = 0, downloads = 0;

private:
  char *at(const void *ptr, size_t bytes) {
    auto it = blocks_.upper_bound(uintptr_t(ptr));
    if (it == blocks_.begin())
      throw RuntimeError("not device memory");
    --it;
    size_t offset = uintptr_t(ptr) - it->first;
    if (offset + bytes > it->second.size())
      throw RuntimeError("past the end of device memory");
    return it->second.data() + offset;
  }
  uintptr_t next_ = 0x1000; // below mmap_min_addr: never host memory
  std::map<uintptr_t, std::vector<char>> blocks_;
};

std::vector<float> read(Device &device, const DeviceBuffer &b) {
  std::vector<float> values(b.size() / sizeof(float));
  device.download(values.data(), b.data(), b.size());
  return values;
}

DeviceBuffer holding(Device &device, const std::vector<float> &values) {
  DeviceBuffer b(device, values.size() * sizeof(float), "test");
  device.upload(b.data(), values.data(), b.size());
  return b;
}

TEST(ChannelTest, AloneIsAWorldOfOne) {
  HostDevice device;
  std::unique_ptr<Channel> channel = localChannel(device);
  EXPECT_EQ(channel->rank(), 0);
  EXPECT_EQ(channel->size(), 1);
  EXPECT_EQ(channel->who(), "");
  EXPECT_EQ(channel->allGatherHost(42), std::vector<uint64_t>{42});
  double values[2] = {1.5, -2};
  channel->allReduceHost(values, 2);
  EXPECT_EQ(values[0], 1.5);
  EXPECT_EQ(values[1], -2);
  char bytes[4] = {'a', 'b', 'c', 0};
  channel->broadcastHost(bytes, sizeof bytes, 0); // from rank 0 to nobody
  EXPECT_STREQ(bytes, "abc");
  channel->wait(7); // never started: nothing to wait for
}

TEST(ChannelTest, ReducesOnHostMemoryInPlaceAndNot) {
  HostDevice device;
  std::unique_ptr<Channel> channel = localChannel(device);
  DeviceBuffer in = holding(device, {1, 2, 3}), out(device, 3 * sizeof(float), "out");
  DeviceBuffer same = holding(device, {4, -8});
  channel->startAllReduce(0, {{in.data(), out.data(), 3}, {same.data(), same.data(), 2}}, 0.5f);
  channel->wait(0);
  EXPECT_EQ(read(device, out), (std::vector<float>{0.5f, 1, 1.5f}));
  EXPECT_EQ(read(device, in), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(read(device, same), (std::vector<float>{2, -4}));
  EXPECT_EQ(device.copies, 1); // in place needs none

  // Scale 1 only copies; in place, nothing at all.
  channel->startAllReduce(1, {{same.data(), same.data(), 2}, {in.data(), out.data(), 3}}, 1.0f);
  channel->wait(1);
  EXPECT_EQ(read(device, same), (std::vector<float>{2, -4}));
  EXPECT_EQ(read(device, out), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(device.copies, 2);
}

TEST(ChannelTest, ReducesOnMemoryTheHostCannotRead) {
  RemoteDevice device;
  std::unique_ptr<Channel> channel = localChannel(device);
  DeviceBuffer in = holding(device, {1, 2, 3, 4}), out(device, 4 * sizeof(float), "out");
  DeviceBuffer same = holding(device, {3, 5});
  int uploads = device.uploads, downloads = device.downloads;
  channel->startAllReduce(3, {{in.data(), out.data(), 4}, {same.data(), same.data(), 2}}, 0.25f);
  channel->wait(3);
  EXPECT_EQ(device.uploads - uploads, 2);
  EXPECT_EQ(device.downloads - downloads, 2);
  EXPECT_EQ(read(device, out), (std::vector<float>{0.25f, 0.5f, 0.75f, 1}));
  EXPECT_EQ(read(device, in), (std::vector<float>{1, 2, 3, 4}));
  EXPECT_EQ(read(device, same), (std::vector<float>{0.75f, 1.25f}));

  // Scale 1: no round trip through the host.
  uploads = device.uploads;
  channel->startAllReduce(4, {{in.data(), out.data(), 4}, {nullptr, nullptr, 0}}, 1.0f);
  channel->wait(4);
  EXPECT_EQ(device.uploads, uploads);
  EXPECT_EQ(read(device, out), (std::vector<float>{1, 2, 3, 4}));
}

TEST(ChannelTest, AbortEndsTheProcessWithTheCode) {
  HostDevice device;
  std::unique_ptr<Channel> channel = localChannel(device);
  EXPECT_EXIT(channel->abort(5), testing::ExitedWithCode(5), "");
}

/// Every launcher variable unset for the test's length, then restored.
class LaunchEnv {
public:
  LaunchEnv() {
    for (const char *name : kNames) {
      if (const char *v = std::getenv(name))
        saved_[name] = v;
      unsetenv(name);
    }
  }
  ~LaunchEnv() {
    for (const char *name : kNames) {
      auto it = saved_.find(name);
      if (it == saved_.end())
        unsetenv(name);
      else
        setenv(name, it->second.c_str(), 1);
    }
  }
  LaunchEnv &set(const char *name, const char *value) {
    setenv(name, value, 1);
    return *this;
  }

private:
  static constexpr const char *kNames[] = {
      "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
      "PMI_RANK",             "PMI_SIZE",             "MPI_LOCALRANKID",
      "PMI_LOCAL_RANK",       "RANK",                 "WORLD_SIZE",
      "LOCAL_RANK",           "FBT_CHANNEL"};
  std::map<std::string, std::string> saved_;
};

/// The message of the error launchInfo() throws ("" if none).
std::string launchError() {
  try {
    launchInfo();
  } catch (const RuntimeError &e) {
    return e.what();
  }
  return "";
}

TEST(ChannelTest, LaunchedAloneByDefault) {
  LaunchEnv env;
  LaunchInfo l = launchInfo();
  EXPECT_FALSE(l.launched);
  EXPECT_EQ(l.rank, 0);
  EXPECT_EQ(l.size, 1);
  EXPECT_EQ(l.localRank, 0);
  EXPECT_EQ(l.launcher, "");
}

TEST(ChannelTest, ReadsEachLauncher) {
  {
    LaunchEnv env;
    env.set("OMPI_COMM_WORLD_RANK", "3").set("OMPI_COMM_WORLD_SIZE", "4");
    env.set("OMPI_COMM_WORLD_LOCAL_RANK", "1");
    // mpirun's win over a RANK the job script set for itself.
    env.set("RANK", "0").set("WORLD_SIZE", "9");
    LaunchInfo l = launchInfo();
    EXPECT_TRUE(l.launched);
    EXPECT_EQ(l.launcher, "mpirun");
    EXPECT_EQ(l.rank, 3);
    EXPECT_EQ(l.size, 4);
    EXPECT_EQ(l.localRank, 1);
  }
  {
    LaunchEnv env;
    env.set("PMI_RANK", "2").set("PMI_SIZE", "3").set("MPI_LOCALRANKID", "2");
    env.set("PMI_LOCAL_RANK", "0");
    LaunchInfo l = launchInfo();
    EXPECT_EQ(l.launcher, "pmi");
    EXPECT_EQ(l.rank, 2);
    EXPECT_EQ(l.size, 3);
    EXPECT_EQ(l.localRank, 2);
  }
  {
    LaunchEnv env;
    env.set("PMI_RANK", "1").set("PMI_SIZE", "2").set("PMI_LOCAL_RANK", "1");
    EXPECT_EQ(launchInfo().localRank, 1);
  }
  {
    LaunchEnv env;
    env.set("RANK", "1").set("WORLD_SIZE", "2").set("LOCAL_RANK", "1");
    LaunchInfo l = launchInfo();
    EXPECT_EQ(l.launcher, "torchrun");
    EXPECT_EQ(l.rank, 1);
    EXPECT_EQ(l.size, 2);
    EXPECT_EQ(l.localRank, 1);
  }
  {
    // A rank without a size (or an empty one) is no launch: RANK alone is
    // too common a name to mean one.
    LaunchEnv env;
    env.set("RANK", "1").set("OMPI_COMM_WORLD_SIZE", "");
    EXPECT_FALSE(launchInfo().launched);
  }
}

TEST(ChannelTest, RefusesBadLaunchValues) {
  struct Case {
    const char *rank, *size, *local, *message;
  };
  for (const Case &c : std::vector<Case>{
           {"x", "2", nullptr, "RANK='x' from the launcher is not a non-negative integer"},
           {"-1", "2", nullptr, "RANK='-1' from the launcher is not a non-negative integer"},
           {"+1", "2", nullptr, "RANK='+1' from the launcher is not a non-negative integer"},
           {"0", "1.5", nullptr, "WORLD_SIZE='1.5' from the launcher is not a non-negative integer"},
           {"0", "99999999999", nullptr,
            "WORLD_SIZE='99999999999' from the launcher is not a non-negative integer"},
           {"2", "2", nullptr, "RANK='2' from the launcher is not below WORLD_SIZE='2'"},
           {"0", "0", nullptr, "WORLD_SIZE='0' from the launcher: a run has at least one rank"},
           {"0", "2", "2", "LOCAL_RANK='2' from the launcher is not below WORLD_SIZE='2'"},
           {"0", "2", "one", "LOCAL_RANK='one' from the launcher is not a non-negative integer"},
       }) {
    LaunchEnv env;
    env.set("RANK", c.rank).set("WORLD_SIZE", c.size);
    if (c.local)
      env.set("LOCAL_RANK", c.local);
    EXPECT_EQ(launchError(), c.message) << c.rank << " " << c.size;
  }
  LaunchEnv env;
  env.set("OMPI_COMM_WORLD_RANK", "5").set("OMPI_COMM_WORLD_SIZE", "4");
  EXPECT_EQ(launchError(),
            "OMPI_COMM_WORLD_RANK='5' from the launcher is not below OMPI_COMM_WORLD_SIZE='4'");
}

/// The message of the error openChannel() throws ("" if none).
std::string openError(Device &device) {
  try {
    openChannel(device);
  } catch (const RuntimeError &e) {
    return e.what();
  }
  return "";
}

TEST(ChannelTest, OpensAWorldOfOneWithoutAnEngine) {
  HostDevice device;
  {
    LaunchEnv env;
    EXPECT_EQ(openChannel(device)->describe(), "local, 1 rank");
  }
  {
    // One rank launched has nobody to join: no engine needed.
    LaunchEnv env;
    env.set("RANK", "0").set("WORLD_SIZE", "1");
    EXPECT_EQ(openChannel(device)->size(), 1);
    RemoteDevice remote;
    EXPECT_EQ(openChannel(remote)->size(), 1);
  }
}

TEST(ChannelTest, FbtChannelNamesTheEngineOfALaunch) {
  HostDevice host;
  {
    // Alone, there is nothing to join: the name is not even looked up.
    LaunchEnv env;
    env.set("FBT_CHANNEL", "carrier-pigeon");
    EXPECT_EQ(openChannel(host)->describe(), "local, 1 rank");
  }
  LaunchEnv env;
  env.set("RANK", "0").set("WORLD_SIZE", "1").set("FBT_CHANNEL", "carrier-pigeon");
  EXPECT_EQ(openError(host).rfind("FBT_CHANNEL=carrier-pigeon: this fbt has no such engine (", 0),
            0u)
      << openError(host);
  // An engine for another memory is refused, naming the device; a build
  // without it says it has none.
  env.set("FBT_CHANNEL", "nccl");
  std::string message = openError(host);
  bool refused =
      message == "FBT_CHANNEL=nccl: the nccl engine does not join ranks on host (test)" ||
      message.rfind("FBT_CHANNEL=nccl: this fbt has no such engine (", 0) == 0;
  EXPECT_TRUE(refused) << message;
}

TEST(ChannelTest, SaysWhyALaunchCannotBeJoined) {
  LaunchEnv env;
  env.set("RANK", "1").set("WORLD_SIZE", "2");
  RemoteDevice remote;
  // Built with NCCL, that engine serves the CUDA backend's devices alone.
  std::string none = openError(remote);
  std::string prefix = "launched as rank 1 of 2 (torchrun), but no engine here joins ranks on "
                       "remote (test)";
  EXPECT_TRUE(none == prefix ||
              none == prefix + ": GPU ranks are joined through NCCL, which this fbt was built "
                               "without (it needs MPI and nccl.h where it is built)")
      << none;
  // Host memory: with MPI built in, torchrun's ranks are refused (they have
  // no MPI runtime to join them); without, the build says it lacks MPI.
  HostDevice host;
  std::string message = openError(host);
  bool refused = message == "rank 1: RANK/WORLD_SIZE were set (torchrun-style), but ranks are "
                            "joined through MPI here: launch with mpirun -np 2" ||
                 message == "launched as rank 1 of 2 (torchrun), but this fbt was built without "
                            "MPI, which joins ranks on the CPU; rebuild it with libopenmpi-dev";
  EXPECT_TRUE(refused) << message;
}

} // namespace
} // namespace fbt
