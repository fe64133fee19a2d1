//===- HalConformanceTest.cpp - one suite every HAL backend passes --------===//
//
// What Device.h and StepRunner.h promise, asked of each backend in turn as
// IREE's hal/cts asks each driver: memory zeroed and aligned, copies exact
// at any offset and in order, out-of-memory errors that name the buffer,
// runners that check their bindings, repeat themselves bit for bit (alone
// or in a shared arena), show every call to a probe and time it when
// profiled; and a GPU's runner computing what the CPU's does on the same
// step of the same spec.
//
// The backends are the CPU, the SIMT emulator (the GPU's kernels run on
// the CPU, fbtc --target=simt) and CUDA (a GPU, or the emulated driver),
// each given as a bundle of one small spec (test/e2e/Inputs/micro-b3.json,
// small enough for the emulator) in the folder FBT_HAL_CTS names
// (cpu.fbtb, simt.fbtb, cuda.fbtb). CTest's fixture compiles the first two;
// test/emucuda/hal-conformance.test runs all three on the emulated driver,
// where none may skip.
//
//===----------------------------------------------------------------------===//

#include "runtime/base/Error.h"
#include "runtime/base/FileIO.h"
#include "runtime/base/Hash.h"
#include "runtime/base/Random.h"
#include "runtime/format/Bundle.h"
#include "runtime/format/StepNames.h"
#include "runtime/hal/Device.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace fbt {
namespace {

struct Backend {
  const char *name; ///< the test's suffix and its bundle's stem
  const char *kind; ///< its tune key's "kind"
  bool hostMemory;
};
void PrintTo(const Backend &b, std::ostream *os) { *os << b.name; }
const Backend kCpu{"cpu", "cpu", true};
const Backend kSimt{"simt", "simt", true};
const Backend kCuda{"cuda", "cuda", false};

/// The bundle and device of `backend`, or why there is none here.
struct Opened {
  std::unique_ptr<Bundle> bundle;
  std::unique_ptr<Device> device;
  std::string why;
};
Opened open(const Backend &backend) {
  Opened o;
  const char *dir = std::getenv("FBT_HAL_CTS");
  if (!dir || !*dir) {
    o.why = "needs FBT_HAL_CTS, a folder of bundles (CTest's fixture.hal_cts_* compile the "
            "CPU's and the SIMT emulator's; test/emucuda/hal-conformance.test all three)";
    return o;
  }
  std::string path = std::string(dir) + "/" + backend.name + ".fbtb";
  if (!isFile(path)) {
    o.why = "no " + path + " (this backend's bundle)";
    return o;
  }
  o.bundle = std::make_unique<Bundle>(Bundle::load(path));
  try {
    o.device = openDevice(*o.bundle);
  } catch (const RuntimeError &e) {
    o.why = "this machine cannot run " + path + ": " + e.what();
  }
  return o;
}

/// A step's inputs, the same for every backend: parameters small and
/// deterministic by name, token ids inside the vocabulary, other values 1.
std::vector<std::vector<char>> inputsFor(const Bundle &bundle, const StepPlan &plan) {
  int64_t vocab = bundle.model().value("vocab_size", int64_t(256));
  std::vector<std::vector<char>> host;
  for (const TensorSpec &t : plan.inputs) {
    std::vector<char> bytes(t.bytes);
    int64_t n = t.bytes / (int64_t)dtypeSize(t.dtype);
    uint64_t stream = fnv1a64(t.name.data(), t.name.size());
    for (int64_t i = 0; i < n; ++i) {
      int64_t id = (i * 31 + 7) % vocab;
      if (t.dtype == DType::F32) {
        float v = t.param ? (rng::uniform(1234, stream, i) - 0.5f) * 0.2f : 1.0f;
        std::memcpy(&bytes[i * 4], &v, 4);
      } else if (t.dtype == DType::I32) {
        int32_t v = (int32_t)id;
        std::memcpy(&bytes[i * 4], &v, 4);
      } else {
        std::memcpy(&bytes[i * 8], &id, 8);
      }
    }
    host.push_back(std::move(bytes));
  }
  return host;
}

/// A step run once on a device: its inputs uploaded, its outputs read back
/// (each as f32, or its raw bytes as floats for integer outputs).
class StepRun {
public:
  StepRun(Device &device, const StepPlan &plan, const std::vector<std::vector<char>> &inputs)
      : device_(device), plan_(plan) {
    for (size_t i = 0; i < plan.inputs.size(); ++i) {
      in_.emplace_back(device, inputs[i].size(), plan.inputs[i].name);
      device.upload(in_.back().data(), inputs[i].data(), inputs[i].size());
    }
    for (const TensorSpec &t : plan.outputs)
      out_.emplace_back(device, t.updates < 0 ? t.bytes : 0, t.name);
  }
  std::vector<void *> inputs() const { return pointers(in_); }
  std::vector<void *> outputs() const {
    std::vector<void *> p = pointers(out_);
    for (size_t j = 0; j < p.size(); ++j)
      if (plan_.outputs[j].updates >= 0)
        p[j] = nullptr;
    return p;
  }
  /// Output `j` (or the input it updates in place) as floats.
  std::vector<float> read(size_t j) const {
    const TensorSpec &t = plan_.outputs[j];
    const DeviceBuffer &b = t.updates >= 0 ? in_[t.updates] : out_[j];
    std::vector<float> v(t.bytes / 4);
    device_.download(v.data(), b.data(), v.size() * 4);
    return v;
  }

private:
  static std::vector<void *> pointers(const std::vector<DeviceBuffer> &b) {
    std::vector<void *> p;
    for (const DeviceBuffer &x : b)
      p.push_back(x.data());
    return p;
  }
  Device &device_;
  const StepPlan &plan_;
  std::vector<DeviceBuffer> in_, out_;
};

/// The steps the runner tests use: the prompt's plain pass into the KV
/// cache, and two passes' losses with their gradients.
std::vector<std::string> testedSteps() { return {step::prefill(false), step::trainGrads(2)}; }

class HalConformanceTest : public ::testing::TestWithParam<Backend> {
protected:
  void SetUp() override {
    o_ = open(GetParam());
    if (!o_.device)
      GTEST_SKIP() << o_.why;
  }
  Device &device() { return *o_.device; }
  const Bundle &bundle() { return *o_.bundle; }
  Opened o_;
};

std::vector<unsigned char> download(Device &d, const void *p, size_t bytes) {
  std::vector<unsigned char> v(bytes);
  d.download(v.data(), p, bytes);
  return v;
}
char *at(void *p, size_t offset) { return static_cast<char *>(p) + offset; }

TEST_P(HalConformanceTest, DescribesItselfAndKeysItsTunings) {
  EXPECT_FALSE(device().describe().empty());
  EXPECT_EQ(device().hostMemory(), GetParam().hostMemory);
  Json key = device().tuneKey();
  ASSERT_TRUE(key.is_object());
  EXPECT_EQ(key.value("kind", std::string()), GetParam().kind);
}

TEST_P(HalConformanceTest, AllocationsAreZeroedAndAligned) {
  for (size_t bytes : {size_t(1), size_t(63), size_t(64), size_t(4097), size_t(1) << 20}) {
    // A buffer just released, dirty, must not come back dirty.
    {
      DeviceBuffer dirty(device(), bytes, "a dirty buffer");
      std::vector<unsigned char> ones(bytes, 0xab);
      device().upload(dirty.data(), ones.data(), bytes);
    }
    DeviceBuffer b(device(), bytes, "a test buffer");
    EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data()) % 64, 0u) << bytes << " bytes";
    std::vector<unsigned char> v = download(device(), b.data(), bytes);
    EXPECT_EQ(v, std::vector<unsigned char>(bytes, 0)) << bytes << " bytes";
  }
}

TEST_P(HalConformanceTest, CopiesAreExactAtAnyOffsetAndInOrder) {
  const size_t n = 3001;
  std::vector<unsigned char> pattern(n);
  for (size_t i = 0; i < n; ++i)
    pattern[i] = (unsigned char)(i * 7 + 3);
  DeviceBuffer a(device(), n + 64, "a"), b(device(), n + 64, "b");
  // Queued one after another; only the last download waits.
  device().upload(at(a.data(), 5), pattern.data(), n);
  device().copy(at(b.data(), 17), at(a.data(), 5), n);
  device().zero(at(b.data(), 17 + 100), 50);
  device().upload(at(a.data(), 5), std::vector<unsigned char>(n, 1).data(), n);
  device().copy(at(b.data(), 17 + 1000), at(a.data(), 5 + 1000), 3);

  std::vector<unsigned char> want(n + 64, 0);
  std::memcpy(&want[17], pattern.data(), n);
  std::memset(&want[17 + 100], 0, 50);
  std::memset(&want[17 + 1000], 1, 3);
  EXPECT_EQ(download(device(), b.data(), n + 64), want);
  std::vector<unsigned char> part(10);
  device().download(part.data(), at(b.data(), 17 + 95), 10);
  EXPECT_EQ(part, std::vector<unsigned char>(&want[17 + 95], &want[17 + 105]));
}

TEST_P(HalConformanceTest, OutOfMemoryNamesTheBuffer) {
  try {
    DeviceBuffer b(device(), size_t(1) << 60, "the conformance suite's huge buffer");
    FAIL() << "an exabyte was allocated";
  } catch (const RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find("the conformance suite's huge buffer"),
              std::string::npos)
        << e.what();
  }
  // And the device still works.
  DeviceBuffer after(device(), 64, "after");
  EXPECT_EQ(download(device(), after.data(), 64), std::vector<unsigned char>(64, 0));
}

TEST_P(HalConformanceTest, RunnersCheckTheirBindings) {
  const StepPlan &plan = bundle().step(step::prefill(false));
  std::unique_ptr<StepRunner> r = device().makeRunner(plan);
  ASSERT_TRUE(r);
  try {
    r->run({}, {});
    FAIL() << "ran unbound";
  } catch (const RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find(plan.name), std::string::npos) << e.what();
  }
  StepRun run(device(), plan, inputsFor(bundle(), plan));
  std::vector<void *> in = run.inputs();
  in[0] = nullptr;
  EXPECT_THROW(r->run(in, run.outputs()), RuntimeError);
}

/// Counts the calls it is shown.
class CountingProbe : public CallProbe {
public:
  void beforeCall(StepRunner &, size_t op) override { ops.push_back(op); }
  std::vector<size_t> ops;
};

TEST_P(HalConformanceTest, RunsRepeatBitForBitAloneOrInASharedArena) {
  for (const std::string &name : testedSteps()) {
    const StepPlan &plan = bundle().step(name);
    std::vector<std::vector<char>> inputs = inputsFor(bundle(), plan);
    // One runner twice (each time on fresh buffers: some outputs update
    // their inputs in place), and a second runner in an arena of its own.
    StepRun first(device(), plan, inputs), again(device(), plan, inputs),
        shared(device(), plan, inputs);
    std::unique_ptr<StepRunner> alone = device().makeRunner(plan);
    alone->run(first.inputs(), first.outputs());
    alone->run(again.inputs(), again.outputs());
    DeviceBuffer arena(device(), size_t(std::max<int64_t>(plan.arenaBytes, 1)), "a shared arena");
    std::unique_ptr<StepRunner> other = device().makeRunner(plan);
    other->shareArena(arena.data(), plan.arenaBytes);
    other->run(shared.inputs(), shared.outputs());
    for (size_t j = 0; j < plan.outputs.size(); ++j) {
      std::vector<float> want = first.read(j);
      EXPECT_EQ(again.read(j), want) << name << ": " << plan.outputs[j].name;
      EXPECT_EQ(shared.read(j), want) << name << ": " << plan.outputs[j].name;
    }
  }
}

TEST_P(HalConformanceTest, AProbeSeesEveryCallAndProfilingTimesThem) {
  const StepPlan &plan = bundle().step(step::trainGrads(2));
  StepRun run(device(), plan, inputsFor(bundle(), plan));
  std::unique_ptr<StepRunner> r = device().makeRunner(plan);
  CountingProbe probe;
  r->setProbe(&probe);
  r->setProfiling(true);
  r->run(run.inputs(), run.outputs());
  std::vector<size_t> calls;
  size_t gemms = 0;
  for (size_t i = 0; i < plan.ops.size(); ++i)
    if (plan.ops[i].isKernel() || plan.ops[i].isGemm()) {
      calls.push_back(i);
      gemms += plan.ops[i].isGemm();
    }
  EXPECT_EQ(probe.ops, calls);
  ASSERT_GT(gemms, 0u);
  EXPECT_GT(r->gemmSeconds(), 0);
  EXPECT_GT(r->kernelSeconds(), 0);
  EXPECT_TRUE(r->profile().count("gemm"));
}

INSTANTIATE_TEST_SUITE_P(Backends, HalConformanceTest, ::testing::Values(kCpu, kSimt, kCuda),
                         [](const auto &info) { return std::string(info.param.name); });

/// The GPU backends against the CPU: the same step of the same spec on the
/// same inputs gives the same losses and gradients, to f32 rounding (the
/// bundles keep f32 activations, and cuBLASLt computes in fp32 where the
/// test says FBT_GEMM_COMPUTE=fp32; bf16 would differ by a few percent).
class HalAgreesWithCpuTest : public HalConformanceTest {};

/// |a - b| / |b| over the whole vector (L2).
double relativeError(const std::vector<float> &a, const std::vector<float> &b) {
  double d = 0, n = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    d += double(a[i] - b[i]) * (a[i] - b[i]);
    n += double(b[i]) * b[i];
  }
  return std::sqrt(d / std::max(n, 1e-30));
}

TEST_P(HalAgreesWithCpuTest, LossesAndGradientsMatchTheCpus) {
  Opened cpu = open(kCpu);
  if (!cpu.device)
    GTEST_SKIP() << "the reference: " << cpu.why;
  for (const std::string &name : testedSteps()) {
    const StepPlan &plan = bundle().step(name), &ref = cpu.bundle->step(name);
    ASSERT_EQ(plan.outputs.size(), ref.outputs.size()) << name;
    StepRun mine(device(), plan, inputsFor(bundle(), plan));
    StepRun theirs(*cpu.device, ref, inputsFor(*cpu.bundle, ref));
    device().makeRunner(plan)->run(mine.inputs(), mine.outputs());
    cpu.device->makeRunner(ref)->run(theirs.inputs(), theirs.outputs());
    for (size_t j = 0; j < plan.outputs.size(); ++j) {
      const TensorSpec &t = plan.outputs[j];
      ASSERT_EQ(t.name, ref.outputs[j].name);
      if (t.dtype != DType::F32)
        continue;
      std::vector<float> a = mine.read(j), b = theirs.read(j);
      ASSERT_EQ(a.size(), b.size()) << name << ": " << t.name;
      EXPECT_LT(relativeError(a, b), 1e-4) << name << ": " << t.name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Backends, HalAgreesWithCpuTest, ::testing::Values(kSimt, kCuda),
                         [](const auto &info) { return std::string(info.param.name); });

} // namespace
} // namespace fbt
