//===- StepRunner.cpp - running one compiled step on a device -------------===//

#include "runtime/hal/StepRunner.h"

#include "runtime/base/Error.h"

#include <cstdlib>

namespace fbt {

StepRunner::StepRunner(const StepPlan &plan) : plan_(plan) {
  for (const PlanOp &op : plan.ops) {
    size_t cut = op.kernel.find('_');
    stems_.push_back(op.isKernel() ? op.kernel.substr(cut + 1) : op.label());
  }
}

void StepRunner::checkBinding(const std::vector<void *> &inputs,
                              const std::vector<void *> &outputs) const {
  if (inputs.size() != plan_.inputs.size() || outputs.size() != plan_.outputs.size())
    throw RuntimeError("step '" + plan_.name + "' bound with the wrong number of buffers");
}

char *StepRunner::address(const BufferRef &r, const std::vector<void *> &inputs,
                          const std::vector<void *> &outputs,
                          const std::vector<char *> &constants, char *arena) const {
  char *base = nullptr;
  switch (r.kind) {
  case BufferRef::Kind::Input:
    base = static_cast<char *>(inputs[r.index]);
    break;
  case BufferRef::Kind::Output:
    base = static_cast<char *>(outputs[r.index]);
    break;
  case BufferRef::Kind::Const:
    base = constants[r.index];
    break;
  case BufferRef::Kind::Arena:
    base = arena;
    break;
  }
  if (!base)
    throw RuntimeError("step '" + plan_.name + "': a buffer it uses is not bound");
  return base + r.offset;
}

void StepRunner::record(size_t index, double seconds) {
  const PlanOp &op = plan_.ops[index];
  (op.isCollectiveOrWait() ? collectiveSeconds_ : op.isGemm() ? gemmSeconds_ : kernelSeconds_) +=
      seconds;
  byName_[stems_[index]] += seconds;
}

void StepRunner::collective(const PlanOp &op, void *const *args) {
  if (op.isWait()) {
    if (collectives_) {
      collectives_->wait(op.bucket);
      --inFlight_;
    }
    return;
  }
  size_t n = op.names.size();
  std::vector<ReduceBuffer> buffers(n);
  for (size_t i = 0; i < n; ++i)
    buffers[i] = {args[i], args[n + i], op.args[i].bytes / (int64_t)sizeof(float)};
  if (collectives_) {
    collectives_->start(op, buffers);
    ++inFlight_;
    return;
  }
  for (const ReduceBuffer &b : buffers) // the mean or sum over one rank
    if (b.out != b.in)
      copyWithin(b.out, b.in, b.count * sizeof(float));
}

void StepRunner::shareArena(void *arena, int64_t bytes) {
  if (bytes < plan_.arenaBytes)
    throw RuntimeError("step '" + plan_.name + "' needs an arena of " +
                       std::to_string(plan_.arenaBytes) + " bytes, given " +
                       std::to_string(bytes));
  sharedArena_ = static_cast<char *>(arena);
}

bool StepRunner::anotherRanks(const PlanOp &op, const std::vector<void *> &inputs,
                              const std::vector<void *> &outputs,
                              const std::vector<char *> &constants, char *arena) {
  if (op.shard.empty() || !collectives_ || collectives_->owns(op.shard))
    return false;
  size_t operands = op.args.size() - op.tied.size();
  // Only inputs can be unbound here: the moments another rank keeps.
  auto bound = [&](const BufferRef &r) {
    return r.kind != BufferRef::Kind::Input || inputs[r.index];
  };
  for (size_t r = 0; r < op.tied.size(); ++r) {
    if (op.tied[r] < 0)
      continue;
    const BufferRef &from = op.args[size_t(op.tied[r])], &to = op.args[operands + r];
    if (!bound(from) || !bound(to))
      continue; // a moment kept by its owner only
    char *src = address(from, inputs, outputs, constants, arena);
    char *dst = address(to, inputs, outputs, constants, arena);
    if (src != dst)
      copyWithin(dst, src, size_t(to.bytes));
  }
  return true;
}

bool StepRunner::tracing() {
  static const bool trace = std::getenv("FBT_TRACE") != nullptr;
  return trace;
}

} // namespace fbt
