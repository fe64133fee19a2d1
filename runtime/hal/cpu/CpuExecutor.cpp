//===- CpuExecutor.cpp - running a step plan on the CPU -------------------===//

#include "runtime/hal/cpu/CpuExecutor.h"

#include "runtime/base/Bf16.h"
#include "runtime/base/Error.h"
#include "runtime/base/Median.h"
#include "runtime/hal/cpu/CpuGemm.h"
#include "runtime/hal/simt/Emulator.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace fbt {

CpuStepRunner::CpuStepRunner(const StepPlan &plan, const KernelLibrary &kernels,
                             const Bundle *emulated, const KernelChoice &choice,
                             const std::map<std::string, int> &gemms)
    : StepRunner(plan), library_(kernels), emulated_(emulated) {
  for (const PlanOp &op : plan.ops) {
    if (!emulated && op.isGemm() &&
        (op.lhsType != DType::F32 || op.resultType != DType::F32))
      throw RuntimeError("step '" + plan.name + "': a " + planTypeName(op.lhsType) +
                         " GEMM; the CPU backend runs f32 plans only");
    auto chosen = choice.find(op.kernel);
    const std::string &symbol = chosen == choice.end() ? op.kernel : chosen->second;
    symbols_.push_back(op.isKernel() ? symbol : op.label());
    auto split = op.isGemm() ? gemms.find(gemmShapeKey(op)) : gemms.end();
    splits_.push_back(split != gemms.end() && split->second >= 0 &&
                              split->second < kGemmSplits
                          ? static_cast<GemmSplit>(split->second)
                          : GemmSplit::Auto);
    launches_.push_back(emulated && op.isKernel() ? launchesOf(symbol)
                                                       : std::vector<Launch>());
    kernels_.push_back(!op.isKernel() || emulated ? nullptr : kernels.lookup(symbol));
  }
  size_t most = 16;
  for (const PlanOp &op : plan.ops)
    most = std::max(most, op.args.size());
  args_.resize(most);
  // Constants are splats, filled once.
  for (const ConstantSpec &c : plan.constants) {
    AlignedBuffer b(c.bytes());
    c.fill(b.data(), plan.name);
    constants_.push_back(std::move(b));
    constantAddresses_.push_back(constants_.back().as<char>());
  }
}

void CpuStepRunner::run(const std::vector<void *> &inputs,
                        const std::vector<void *> &outputs) {
  checkBinding(inputs, outputs);
  // Its own arena, made at the first run, unless it shares one.
  if (!sharedArena_ && arena_.size() < size_t(plan_.arenaBytes))
    arena_ = AlignedBuffer(size_t(plan_.arenaBytes));
  char *arena = sharedArena_ ? sharedArena_ : arena_.as<char>();
  auto at = [&](const BufferRef &r) -> void * {
    return address(r, inputs, outputs, constantAddresses_, arena);
  };

  using Clock = std::chrono::steady_clock;
  void **args = args_.data();
  for (size_t i = 0; i < plan_.ops.size(); ++i) {
    const PlanOp &op = plan_.ops[i];
    auto start = profile_ ? Clock::now() : Clock::time_point();
    if (tracing())
      std::fprintf(stderr, "fbt: %s #%zu %s\n", plan_.name.c_str(), i,
                   symbols_[i].c_str());
    if (anotherRanks(op, inputs, outputs, constantAddresses_, arena))
      continue; // ZeRO-1: this parameter's owner makes the call
    if (op.isKernel() && op.args.size() > 16)
      throw RuntimeError("kernel '" + op.kernel + "' takes too many buffers");
    for (size_t a = 0; a < op.args.size(); ++a)
      args[a] = at(op.args[a]);
    if (op.isCollectiveOrWait()) {
      collective(op, args);
      if (profile_)
        record(i, std::chrono::duration<double>(Clock::now() - start).count());
      continue;
    }
    if (probe_) {
      probedOp_ = i;
      probe_->beforeCall(*this, i);
      probedOp_ = ~size_t(0);
    }
    if (size_t n = batchable(i) ? gemmBatch(i, inputs, outputs, arena) : 0) {
      // This GEMM and the independent ones right after it: one parallel
      // region (CpuGemm.h), its time shared out evenly in the profile.
      double share = 0;
      parallelSgemms(batch_);
      if (profile_)
        share = std::chrono::duration<double>(Clock::now() - start).count() / n;
      for (size_t j = i; j < i + n; ++j) {
        if (tracing() && j > i)
          std::fprintf(stderr, "fbt: %s #%zu %s\n", plan_.name.c_str(), j,
                       symbols_[j].c_str());
        if (profile_)
          record(j, share);
      }
      progressCollectives();
      i += n - 1;
      continue;
    }
    if (op.isGemm())
      gemm(op, args[0], args[1], args[2], splits_[i]);
    else
      call(kernels_[i], launches_[i], op.args.size());
    progressCollectives();
    if (profile_)
      record(i, std::chrono::duration<double>(Clock::now() - start).count());
  }
  for (const OutputCopy &c : plan_.copies)
    std::memcpy(outputs[c.output], at(c.source), c.source.bytes);
}

bool CpuStepRunner::batchable(size_t i) const {
  const PlanOp &op = plan_.ops[i];
  return op.isGemm() && !emulated_ && !probe_ && op.shard.empty() &&
         splits_[i] == GemmSplit::Auto && gemmIsSplit(op.m, op.n, op.k);
}

size_t CpuStepRunner::gemmBatch(size_t i, const std::vector<void *> &inputs,
                                const std::vector<void *> &outputs, char *arena) {
  auto at = [&](const BufferRef &r) {
    return reinterpret_cast<float *>(address(r, inputs, outputs, constantAddresses_, arena));
  };
  batch_.clear();
  for (size_t j = i; j < plan_.ops.size() && batchable(j); ++j) {
    const PlanOp &op = plan_.ops[j];
    batch_.push_back({op.transposeLhs, op.transposeRhs, op.m, op.n, op.k,
                      at(op.args[0]), at(op.args[1]), at(op.args[2])});
  }
  batch_.resize(independentGemms(batch_));
  return batch_.size();
}

void CpuStepRunner::copyWithin(void *to, const void *from, size_t bytes) {
  std::memcpy(to, from, bytes);
}

void CpuStepRunner::call(KernelLibrary::Kernel fn, const std::vector<Launch> &launches,
                         size_t count) {
  if (fn)
    callKernel(fn, args_.data(), count);
  for (const Launch &l : launches)
    simt::launch(l.fn, args_.data(), count, l.shape->grid[0], l.shape->block[0],
                 l.shape->cooperative);
}

std::vector<CpuStepRunner::Launch>
CpuStepRunner::launchesOf(const std::string &symbol) const {
  std::vector<Launch> launches;
  for (const KernelLaunch &l : emulated_->launches(symbol))
    launches.push_back({library_.lookup(l.entry), &l});
  return launches;
}

char *CpuStepRunner::argument(size_t op, size_t arg) const {
  if (op != probedOp_ || arg >= plan_.ops[op].args.size())
    throw RuntimeError("step '" + plan_.name + "': argument " + std::to_string(arg) +
                       " of call " + std::to_string(op) + " read outside its probe");
  return static_cast<char *>(args_[arg]);
}

void CpuStepRunner::readArgument(size_t op, size_t arg, void *host) {
  std::memcpy(host, argument(op, arg), plan_.ops[op].args[arg].bytes);
}

void CpuStepRunner::writeArgument(size_t op, size_t arg, const void *host) {
  std::memcpy(argument(op, arg), host, plan_.ops[op].args[arg].bytes);
}

void CpuStepRunner::callVariant(size_t op, const std::string &symbol) {
  argument(op, 0);
  const PlanOp &call = plan_.ops[op];
  if (!call.isKernel())
    throw RuntimeError("call " + std::to_string(op) + " of step '" + plan_.name +
                       "' is a " + call.label() + ", not a kernel");
  if (emulated_)
    this->call(nullptr, launchesOf(symbol), call.args.size());
  else
    this->call(library_.lookup(symbol), {}, call.args.size());
}

int CpuStepRunner::gemmAlgorithms(size_t op) {
  argument(op, 0);
  const PlanOp &call = plan_.ops[op];
  return call.isGemm() && gemmIsSplit(call.m, call.n, call.k) ? kGemmSplits : 0;
}

void CpuStepRunner::callGemm(size_t op, int algorithm) {
  argument(op, 0);
  if (algorithm < 0 || algorithm >= kGemmSplits || !plan_.ops[op].isGemm())
    throw RuntimeError("call " + std::to_string(op) + " of step '" + plan_.name +
                       "': no GEMM algorithm " + std::to_string(algorithm));
  gemm(plan_.ops[op], args_[0], args_[1], args_[2], static_cast<GemmSplit>(algorithm));
}

double CpuStepRunner::gemmAloneGflops(int repeats) {
  // One set of buffers, as large as the largest GEMM's, serves them all.
  auto bytes = [](int64_t n, DType type) { return n * (int64_t)dtypeSize(type); };
  int64_t aBytes = 0, bBytes = 0, cBytes = 0;
  double flops = 0;
  for (const PlanOp &op : plan_.ops)
    if (op.isGemm()) {
      aBytes = std::max(aBytes, bytes(op.m * op.k, op.lhsType));
      bBytes = std::max(bBytes, bytes(op.k * op.n, op.rhsType));
      cBytes = std::max(cBytes, bytes(op.m * op.n, op.resultType));
      flops += 2.0 * op.m * op.n * op.k;
    }
  if (flops == 0)
    return 0;
  AlignedBuffer a(aBytes), b(bBytes), c(cBytes);
  // Small values: no denormals, no overflow, whatever the shape.
  std::memset(a.data(), 0x3c, aBytes);
  std::memset(b.data(), 0x3c, bBytes);
  std::vector<double> times;
  for (int r = -1; r < repeats; ++r) { // r = -1 warms up
    auto start = std::chrono::steady_clock::now();
    for (const PlanOp &op : plan_.ops)
      if (op.isGemm())
        gemm(op, a.data(), b.data(), c.data(), GemmSplit::Auto);
    if (r >= 0)
      times.push_back(std::chrono::duration<double>(
                          std::chrono::steady_clock::now() - start).count());
  }
  return flops / median(times) / 1e9;
}

void CpuStepRunner::gemm(const PlanOp &op, void *a, void *b, void *c, GemmSplit split) {
  auto operand = [](void *p, DType type, int64_t n,
                    std::vector<float> &wide) -> float * {
    if (type != DType::BF16)
      return static_cast<float *>(p);
    wide.resize(n);
    const uint16_t *h = static_cast<const uint16_t *>(p);
    for (int64_t i = 0; i < n; ++i)
      wide[i] = bf16ToFloat(h[i]);
    return wide.data();
  };
  const float *x = operand(a, op.lhsType, op.m * op.k, lhs_);
  const float *y = operand(b, op.rhsType, op.k * op.n, rhs_);
  bool round = op.resultType == DType::BF16;
  if (round)
    result_.resize(op.m * op.n);
  float *z = round ? result_.data() : static_cast<float *>(c);
  parallelSgemm(op.transposeLhs, op.transposeRhs, op.m, op.n, op.k, x, y, z, split);
  if (round) {
    uint16_t *h = static_cast<uint16_t *>(c);
    for (int64_t i = 0; i < op.m * op.n; ++i)
      h[i] = floatToBf16(result_[i]);
  }
}

} // namespace fbt
