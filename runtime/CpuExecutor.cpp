//===- CpuExecutor.cpp - running a step plan on the CPU -------------------===//

#include "runtime/CpuExecutor.h"

#include "runtime/Error.h"

#include <cblas.h>

#include <chrono>
#include <cstdio>
#include <cstring>

namespace fbt {

AlignedBuffer::AlignedBuffer(size_t bytes) : size_(bytes) {
  size_t rounded = (std::max<size_t>(bytes, 1) + 63) / 64 * 64;
  void *p = std::aligned_alloc(64, rounded);
  if (!p)
    throw RuntimeError("out of memory allocating " + std::to_string(bytes) + " bytes");
  std::memset(p, 0, rounded);
  ptr_.reset(p);
}

StepRunner::StepRunner(const StepPlan &plan, const KernelLibrary &kernels)
    : plan_(plan), arena_(plan.arenaBytes) {
  for (const PlanOp &op : plan.ops) {
    kernels_.push_back(op.kernel.empty() ? nullptr : kernels.lookup(op.kernel));
    size_t cut = op.kernel.find('_');
    stems_.push_back(op.kernel.empty() ? "gemm" : op.kernel.substr(cut + 1));
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
  }
}

void StepRunner::run(const std::vector<void *> &inputs,
                     const std::vector<void *> &outputs) {
  if (inputs.size() != plan_.inputs.size() || outputs.size() != plan_.outputs.size())
    throw RuntimeError("step '" + plan_.name + "' bound with the wrong number of buffers");
  auto address = [&](const BufferRef &r) -> void * {
    char *base = nullptr;
    switch (r.kind) {
    case BufferRef::Kind::Input:
      base = static_cast<char *>(inputs[r.index]);
      break;
    case BufferRef::Kind::Output:
      base = static_cast<char *>(outputs[r.index]);
      break;
    case BufferRef::Kind::Const:
      base = static_cast<char *>(constants_[r.index].data());
      break;
    case BufferRef::Kind::Arena:
      base = static_cast<char *>(arena_.data());
      break;
    }
    if (!base)
      throw RuntimeError("step '" + plan_.name + "': a buffer it uses is not bound");
    return base + r.offset;
  };

  using Clock = std::chrono::steady_clock;
  // FBT_TRACE=1 names each call before it runs (for debugging a bundle).
  static const bool trace = std::getenv("FBT_TRACE") != nullptr;
  void *args[16];
  for (size_t i = 0; i < plan_.ops.size(); ++i) {
    const PlanOp &op = plan_.ops[i];
    auto start = profile_ ? Clock::now() : Clock::time_point();
    if (trace)
      std::fprintf(stderr, "fbt: %s #%zu %s\n", plan_.name.c_str(), i,
                   op.kernel.empty() ? "gemm" : op.kernel.c_str());
    if (!kernels_[i]) {
      const float *a = static_cast<const float *>(address(op.args[0]));
      const float *b = static_cast<const float *>(address(op.args[1]));
      float *c = static_cast<float *>(address(op.args[2]));
      cblas_sgemm(CblasRowMajor, op.transposeLhs ? CblasTrans : CblasNoTrans,
                  op.transposeRhs ? CblasTrans : CblasNoTrans, (int)op.m,
                  (int)op.n, (int)op.k, 1.0f, a,
                  (int)(op.transposeLhs ? op.m : op.k), b,
                  (int)(op.transposeRhs ? op.k : op.n), 0.0f, c, (int)op.n);
    } else {
      if (op.args.size() > 16)
        throw RuntimeError("kernel '" + op.kernel + "' takes too many buffers");
      for (size_t a = 0; a < op.args.size(); ++a)
        args[a] = address(op.args[a]);
      KernelLibrary::call(kernels_[i], args, op.args.size());
    }
    if (profile_) {
      double s = std::chrono::duration<double>(Clock::now() - start).count();
      (kernels_[i] ? kernelSeconds_ : gemmSeconds_) += s;
      byName_[stems_[i]] += s;
    }
  }
  for (const OutputCopy &c : plan_.copies)
    std::memcpy(outputs[c.output], address(c.source), c.source.bytes);
}

} // namespace fbt
