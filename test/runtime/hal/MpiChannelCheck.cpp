//===- MpiChannelCheck.cpp - the MPI engine under mpirun -np 2 ------------===//
//
// Run by mpirun with two ranks (test/runtime/CMakeLists.txt): opens the
// channel as fbt does (openChannel on a device of host memory, so the MPI
// engine serves it) and checks its reductions against sums worked out by
// hand: two buckets started before either is waited for, waited for in
// the other order, in place and not, scaled; the host all-reduce,
// all-gather and broadcast. Prints "mpi channel: ok" from rank 0 and exits 0 when every
// rank passed; each failure is one line naming its rank.
//
// `MpiChannelCheck timeout`, with FBT_COLLECTIVE_TIMEOUT=1: rank 1 joins
// its all-reduce 5 s late, so rank 0's wait must fail naming rank 0 and the
// timeout; rank 0 prints the error and aborts every rank with status 3.
//
//===----------------------------------------------------------------------===//

#include "runtime/base/Error.h"
#include "runtime/hal/Channel.h"
#include "test/runtime/hal/HostDevice.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

using namespace fbt;

namespace {

int failures = 0;

void expect(bool ok, const Channel &channel, const std::string &what) {
  if (ok)
    return;
  ++failures;
  std::fprintf(stderr, "mpi channel: rank %d: %s\n", channel.rank(), what.c_str());
}

/// Whether `values[i] == want(i)` for every i, saying where not.
template <typename Want>
void expectValues(const Channel &channel, const std::vector<float> &values, Want want,
                  const std::string &what) {
  for (size_t i = 0; i < values.size(); ++i)
    if (values[i] != want(float(i))) {
      expect(false, channel,
             what + "[" + std::to_string(i) + "] is " + std::to_string(values[i]) +
                 ", not " + std::to_string(want(float(i))));
      return;
    }
}

void checkReductions(Channel &channel) {
  float r = float(channel.rank());
  const size_t n = 1000, m = 37;
  // Bucket 0, out of place: in = (r + 1) * i, so the sum is 3 i.
  std::vector<float> in0(n), out0(n, -1), in1(m), out1(m, -1);
  for (size_t i = 0; i < n; ++i)
    in0[i] = (r + 1) * float(i);
  for (size_t i = 0; i < m; ++i)
    in1[i] = r == 0 ? 7 : float(i);
  // Bucket 1, in place: x = i on rank 0 and 1 - 2 i on rank 1, sum 1 - i.
  std::vector<float> x(n), y(3, r + 1);
  for (size_t i = 0; i < n; ++i)
    x[i] = r == 0 ? float(i) : 1 - 2 * float(i);

  channel.startAllReduce(0, {{in0.data(), out0.data(), int64_t(n)},
                             {in1.data(), out1.data(), int64_t(m)}},
                         0.5f);
  channel.startAllReduce(1, {{x.data(), x.data(), int64_t(n)}, {y.data(), y.data(), 3}}, 0.5f);
  bool refused = false;
  try {
    channel.startAllReduce(1, {}, 1.0f);
  } catch (const RuntimeError &) {
    refused = true;
  }
  expect(refused, channel, "bucket 1 was started twice without an error");
  channel.wait(2); // never started: returns at once
  channel.wait(1);
  channel.wait(0);
  channel.wait(0); // done: returns at once

  expectValues(channel, out0, [](float i) { return 1.5f * i; }, "bucket 0 out");
  expectValues(channel, out1, [](float i) { return 0.5f * (7 + i); }, "bucket 0 second out");
  expectValues(channel, in0, [&](float i) { return (r + 1) * i; }, "bucket 0 in");
  expectValues(channel, x, [](float i) { return 0.5f * (1 - i); }, "bucket 1 in place");
  expectValues(channel, y, [](float) { return 1.5f; }, "bucket 1 second in place");

  // Unscaled, to see that scale 1 leaves the sum alone.
  std::vector<float> z(5, r + 2);
  channel.startAllReduce(9, {{z.data(), z.data(), 5}}, 1.0f);
  channel.wait(9);
  expectValues(channel, z, [](float) { return 5.0f; }, "bucket 9 unscaled");

  // ZeRO-1: tensor a reduced onto rank 1 (in place, scaled), b onto rank 0
  // (out of place); then each owner's values gathered to every rank.
  std::vector<float> a(n), b(m), bOut(m, -1);
  for (size_t i = 0; i < n; ++i)
    a[i] = (r + 1) * float(i);
  for (size_t i = 0; i < m; ++i)
    b[i] = r == 0 ? 7 : float(i);
  ReduceBuffer ra{a.data(), a.data(), int64_t(n), 1}, rb{b.data(), bOut.data(), int64_t(m), 0};
  channel.startReduceScatter(5, {ra, rb}, 0.5f);
  channel.wait(5);
  if (r == 1)
    expectValues(channel, a, [](float i) { return 1.5f * i; }, "reduce-scatter onto rank 1");
  else
    expectValues(channel, bOut, [](float i) { return 0.5f * (7 + i); },
                 "reduce-scatter onto rank 0");
  std::vector<float> p(n, float(r + 10)), q(m, float(r + 20));
  channel.startAllGather(6, {{p.data(), p.data(), int64_t(n), 1},
                             {q.data(), q.data(), int64_t(m), 0}});
  channel.wait(6);
  expectValues(channel, p, [](float) { return 11.0f; }, "all-gather from rank 1");
  expectValues(channel, q, [](float) { return 20.0f; }, "all-gather from rank 0");

  double host[3] = {r + 1, 0.25 * r, -1};
  channel.allReduceHost(host, 3);
  expect(host[0] == 3 && host[1] == 0.25 && host[2] == -2, channel,
         "allReduceHost gave " + std::to_string(host[0]) + " " + std::to_string(host[1]) +
             " " + std::to_string(host[2]));

  std::vector<uint64_t> all = channel.allGatherHost((uint64_t(1) << 40) + channel.rank());
  expect(all == std::vector<uint64_t>{uint64_t(1) << 40, (uint64_t(1) << 40) + 1}, channel,
         "allGatherHost gave the wrong values");

  // From rank 1, an odd number of bytes.
  char text[13] = {};
  if (channel.rank() == 1)
    std::memcpy(text, "from rank 1!", sizeof text);
  channel.broadcastHost(text, sizeof text, 1);
  expect(std::strcmp(text, "from rank 1!") == 0, channel,
         "broadcastHost gave '" + std::string(text) + "'");
}

/// Rank 1 joins 5 s late; rank 0's wait must time out, naming rank 0.
/// Ends every rank (abort).
void checkTimeout(Channel &channel) {
  std::vector<float> v(8, 1);
  if (channel.rank() == 1)
    std::this_thread::sleep_for(std::chrono::seconds(5));
  try {
    channel.startAllReduce(4, {{v.data(), v.data(), 8}}, 1.0f);
    channel.wait(4);
  } catch (const RuntimeError &e) {
    std::string message = e.what();
    bool expected = channel.rank() == 0 &&
                    message == "rank 0: the all-reduce of bucket 4 has not completed after 1 "
                               "s: a peer rank died or stopped responding "
                               "(FBT_COLLECTIVE_TIMEOUT)";
    std::fprintf(stderr, "mpi channel: %s%s\n", expected ? "timed out as expected: " : "",
                 message.c_str());
    channel.abort(expected ? 3 : 1);
  }
  std::fprintf(stderr, "mpi channel: rank %d: the late all-reduce completed without a "
                       "timeout (is FBT_COLLECTIVE_TIMEOUT=1 set?)\n",
               channel.rank());
  channel.abort(1);
}

} // namespace

int main(int argc, char **argv) {
  bool timeout = argc > 1 && std::strcmp(argv[1], "timeout") == 0;
  HostDevice device;
  std::unique_ptr<Channel> channel;
  try {
    channel = openChannel(device);
  } catch (const RuntimeError &e) {
    std::fprintf(stderr, "mpi channel: %s\n", e.what());
    return 1;
  }
  if (channel->size() != 2) {
    std::fprintf(stderr, "mpi channel: %s: run it with mpirun -np 2\n",
                 channel->describe().c_str());
    return 1;
  }
  if (timeout) {
    checkTimeout(*channel);
    return 1; // not reached: abort() ends the process
  }
  try {
    checkReductions(*channel);
    double failed = failures;
    channel->allReduceHost(&failed, 1);
    if (failed != 0)
      return 1;
  } catch (const RuntimeError &e) {
    std::fprintf(stderr, "mpi channel: %s\n", e.what());
    channel->abort(1);
  }
  if (channel->rank() == 0)
    std::printf("mpi channel: ok (%s)\n", channel->describe().c_str());
  return 0;
}
