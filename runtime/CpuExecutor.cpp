//===- CpuExecutor.cpp - running a step plan on the CPU -------------------===//

#include "runtime/CpuExecutor.h"

#include "runtime/Bf16.h"
#include "runtime/Error.h"
#include "runtime/simt/Emulator.h"

#include <cblas.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace fbt {

CpuStepRunner::CpuStepRunner(const StepPlan &plan, const KernelLibrary &kernels,
                             const Bundle *emulated)
    : StepRunner(plan), arena_(plan.arenaBytes) {
  for (const PlanOp &op : plan.ops) {
    if (!emulated && op.kernel.empty() &&
        (op.lhsType != "f32" || op.resultType != "f32"))
      throw RuntimeError("step '" + plan.name + "': a " + op.lhsType +
                         " GEMM; the CPU backend runs f32 plans only");
    std::vector<Launch> launches;
    if (emulated && !op.kernel.empty())
      for (const KernelLaunch &l : emulated->launches(op.kernel))
        launches.push_back({kernels.lookup(l.entry), &l});
    launches_.push_back(std::move(launches));
    kernels_.push_back(op.kernel.empty() || emulated ? nullptr
                                                     : kernels.lookup(op.kernel));
  }
  // Constants are splats, filled once.
  for (const ConstantSpec &c : plan.constants) {
    AlignedBuffer b(c.bytes());
    for (int64_t i = 0; i < c.count; ++i) {
      if (c.dtype == "f32")
        b.as<float>()[i] = (float)c.value;
      else if (c.dtype == "i32")
        b.as<int32_t>()[i] = (int32_t)c.value;
      else if (c.dtype == "i64")
        b.as<int64_t>()[i] = (int64_t)c.value;
      else
        throw RuntimeError("step '" + plan.name + "': constant of unsupported type " + c.dtype);
    }
    constants_.push_back(std::move(b));
    constantAddresses_.push_back(constants_.back().as<char>());
  }
}

void CpuStepRunner::run(const std::vector<void *> &inputs,
                        const std::vector<void *> &outputs) {
  checkBinding(inputs, outputs);
  char *arena = arena_.as<char>();
  auto at = [&](const BufferRef &r) -> void * {
    return address(r, inputs, outputs, constantAddresses_, arena);
  };

  using Clock = std::chrono::steady_clock;
  void *args[16];
  for (size_t i = 0; i < plan_.ops.size(); ++i) {
    const PlanOp &op = plan_.ops[i];
    auto start = profile_ ? Clock::now() : Clock::time_point();
    if (tracing())
      std::fprintf(stderr, "fbt: %s #%zu %s\n", plan_.name.c_str(), i,
                   op.kernel.empty() ? "gemm" : op.kernel.c_str());
    if (op.kernel.empty()) {
      gemm(op, at(op.args[0]), at(op.args[1]), at(op.args[2]));
    } else {
      if (op.args.size() > 16)
        throw RuntimeError("kernel '" + op.kernel + "' takes too many buffers");
      for (size_t a = 0; a < op.args.size(); ++a)
        args[a] = at(op.args[a]);
      if (kernels_[i])
        KernelLibrary::call(kernels_[i], args, op.args.size());
      for (const Launch &l : launches_[i])
        simt::launch(l.fn, args, op.args.size(), l.shape->grid[0],
                     l.shape->block[0], l.shape->cooperative);
    }
    if (profile_)
      record(i, std::chrono::duration<double>(Clock::now() - start).count());
  }
  for (const OutputCopy &c : plan_.copies)
    std::memcpy(outputs[c.output], at(c.source), c.source.bytes);
}

void CpuStepRunner::gemm(const PlanOp &op, void *a, void *b, void *c) {
  auto operand = [](void *p, const std::string &type, int64_t n,
                    std::vector<float> &wide) -> float * {
    if (type != "bf16")
      return static_cast<float *>(p);
    wide.resize(n);
    const uint16_t *h = static_cast<const uint16_t *>(p);
    for (int64_t i = 0; i < n; ++i)
      wide[i] = bf16ToFloat(h[i]);
    return wide.data();
  };
  const float *x = operand(a, op.lhsType, op.m * op.k, lhs_);
  const float *y = operand(b, op.rhsType, op.k * op.n, rhs_);
  bool round = op.resultType == "bf16";
  if (round)
    result_.resize(op.m * op.n);
  float *z = round ? result_.data() : static_cast<float *>(c);
  cblas_sgemm(CblasRowMajor, op.transposeLhs ? CblasTrans : CblasNoTrans,
              op.transposeRhs ? CblasTrans : CblasNoTrans, (int)op.m, (int)op.n,
              (int)op.k, 1.0f, x, (int)(op.transposeLhs ? op.m : op.k), y,
              (int)(op.transposeRhs ? op.k : op.n), 0.0f, z, (int)op.n);
  if (round) {
    uint16_t *h = static_cast<uint16_t *>(c);
    for (int64_t i = 0; i < op.m * op.n; ++i)
      h[i] = floatToBf16(result_[i]);
  }
}

} // namespace fbt
