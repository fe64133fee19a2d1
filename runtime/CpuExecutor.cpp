//===- CpuExecutor.cpp - running a step plan on the CPU -------------------===//

#include "runtime/CpuExecutor.h"

#include "runtime/Error.h"

#include <cblas.h>

#include <chrono>
#include <cstdio>
#include <cstring>

namespace fbt {

CpuStepRunner::CpuStepRunner(const StepPlan &plan, const KernelLibrary &kernels)
    : StepRunner(plan), arena_(plan.arenaBytes) {
  for (const PlanOp &op : plan.ops) {
    if (op.kernel.empty() && (op.lhsType != "f32" || op.resultType != "f32"))
      throw RuntimeError("step '" + plan.name + "': a " + op.lhsType +
                         " GEMM; the CPU backend runs f32 plans only");
    kernels_.push_back(op.kernel.empty() ? nullptr : kernels.lookup(op.kernel));
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
    if (!kernels_[i]) {
      const float *a = static_cast<const float *>(at(op.args[0]));
      const float *b = static_cast<const float *>(at(op.args[1]));
      float *c = static_cast<float *>(at(op.args[2]));
      cblas_sgemm(CblasRowMajor, op.transposeLhs ? CblasTrans : CblasNoTrans,
                  op.transposeRhs ? CblasTrans : CblasNoTrans, (int)op.m,
                  (int)op.n, (int)op.k, 1.0f, a,
                  (int)(op.transposeLhs ? op.m : op.k), b,
                  (int)(op.transposeRhs ? op.k : op.n), 0.0f, c, (int)op.n);
    } else {
      if (op.args.size() > 16)
        throw RuntimeError("kernel '" + op.kernel + "' takes too many buffers");
      for (size_t a = 0; a < op.args.size(); ++a)
        args[a] = at(op.args[a]);
      KernelLibrary::call(kernels_[i], args, op.args.size());
    }
    if (profile_)
      record(i, std::chrono::duration<double>(Clock::now() - start).count());
  }
  for (const OutputCopy &c : plan_.copies)
    std::memcpy(outputs[c.output], at(c.source), c.source.bytes);
}

} // namespace fbt
