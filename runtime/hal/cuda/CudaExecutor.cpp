//===- CudaExecutor.cpp - running a step plan on an NVIDIA GPU ------------===//

#include "runtime/hal/cuda/CudaExecutor.h"

#include "runtime/base/Error.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fbt::cuda {

namespace {
size_t align256(size_t v) { return (v + 255) / 256 * 256; }

CUdeviceptr devicePtr(const void *p) { return reinterpret_cast<CUdeviceptr>(p); }
} // namespace

CudaStepRunner::CudaStepRunner(const StepPlan &plan, const CudaQueue &queue)
    : StepRunner(plan), queue_(queue) {
  for (const PlanOp &op : plan.ops)
    launches_.push_back(!op.isKernel() // GEMMs and collectives
                            ? nullptr
                            : &queue.kernels.launches(queue.memory.chosen(op.kernel)));

  // Constants are splats, filled once, side by side in one buffer.
  size_t total = 0;
  std::vector<size_t> offsets;
  for (const ConstantSpec &c : plan.constants) {
    offsets.push_back(total);
    total += align256(c.bytes());
  }
  constants_ = DeviceBuffer(queue.memory, total, "the constants of step '" + plan.name + "'");
  for (size_t i = 0; i < plan.constants.size(); ++i) {
    const ConstantSpec &c = plan.constants[i];
    char *at = static_cast<char *>(constants_.data()) + offsets[i];
    constantAddresses_.push_back(at);
    std::vector<char> host(c.bytes());
    c.fill(host.data(), plan.name);
    queue.memory.upload(at, host.data(), host.size());
  }

  const char *graphs = std::getenv("FBT_CUDA_GRAPHS");
  graphs_ = plan.kind == StepKind::Decode && !tracing() &&
            !(graphs && std::string(graphs) == "0");
}

CudaStepRunner::~CudaStepRunner() {
  const Driver &d = driver();
  d.cuStreamSynchronize(queue_.stream);
  dropGraph();
  for (CUevent e : events_)
    d.cuEventDestroy_v2(e);
}

void CudaStepRunner::dropGraph() {
  if (!graph_)
    return;
  // It may still be running.
  driver().cuStreamSynchronize(queue_.stream);
  driver().cuGraphExecDestroy(graph_);
  graph_ = nullptr;
}

void CudaStepRunner::run(const std::vector<void *> &inputs,
                         const std::vector<void *> &outputs) {
  checkBinding(inputs, outputs);
  // The first run is plain: it picks the GEMM algorithms and loads the
  // kernels (lazily, on first launch), neither of which a capture may do.
  if (graphs_ && !profile_ && !probe_ && runs_++ > 0) {
    // A graph holds the buffers it was captured with.
    if (!graph_ || inputs != graphInputs_ || outputs != graphOutputs_) {
      dropGraph();
      if (!capture(inputs, outputs)) {
        graphs_ = false;
        enqueue(inputs, outputs);
        return;
      }
    }
    check(driver().cuGraphLaunch(graph_, queue_.stream), "cuGraphLaunch");
    return;
  }
  enqueue(inputs, outputs);
  if (profile_)
    collectProfile();
}

bool CudaStepRunner::capture(const std::vector<void *> &inputs,
                             const std::vector<void *> &outputs) {
  const Driver &d = driver();
  CUstream stream = queue_.stream;
  if (d.cuStreamBeginCapture_v2(stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL) !=
      CUDA_SUCCESS)
    return false;
  bool queued = true;
  try {
    enqueue(inputs, outputs);
  } catch (const RuntimeError &) {
    queued = false; // the plain run that follows reports it, if it is real
  }
  CUgraph graph = nullptr;
  CUresult ended = d.cuStreamEndCapture(stream, &graph);
  CUgraphExec exec = nullptr;
  bool ok = queued && ended == CUDA_SUCCESS && graph &&
            d.cuGraphInstantiateWithFlags(&exec, graph, 0) == CUDA_SUCCESS;
  if (graph)
    d.cuGraphDestroy(graph);
  if (!ok) {
    if (exec)
      d.cuGraphExecDestroy(exec);
    return false;
  }
  graph_ = exec;
  graphInputs_ = inputs;
  graphOutputs_ = outputs;
  return true;
}

void CudaStepRunner::enqueue(const std::vector<void *> &inputs,
                             const std::vector<void *> &outputs) {
  const Driver &d = driver();
  CUstream stream = queue_.stream;
  // Its own arena, made at the first run, unless it shares one.
  if (!sharedArena_ && arena_.size() < size_t(plan_.arenaBytes))
    arena_ = DeviceBuffer(queue_.memory, size_t(plan_.arenaBytes),
                          "the arena of step '" + plan_.name + "'");
  char *arena = sharedArena_ ? sharedArena_ : static_cast<char *>(arena_.data());
  auto at = [&](const BufferRef &r) {
    return address(r, inputs, outputs, constantAddresses_, arena);
  };
  if (profile_ && events_.empty()) {
    events_.resize(plan_.ops.size() + 1);
    for (CUevent &e : events_)
      check(d.cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
  }

  for (size_t i = 0; i < plan_.ops.size(); ++i) {
    const PlanOp &op = plan_.ops[i];
    if (tracing())
      std::fprintf(stderr, "fbt: %s #%zu %s\n", plan_.name.c_str(), i, op.label().c_str());
    if (profile_)
      check(d.cuEventRecord(events_[i], stream), "cuEventRecord");
    if (anotherRanks(op, inputs, outputs, constantAddresses_, arena))
      continue; // ZeRO-1: this parameter's owner makes the call
    // Every launch takes the kernel's whole argument list, one device
    // pointer per buffer; kernelParams[j] points at pointer j.
    pointers_.resize(op.args.size());
    params_.resize(op.args.size());
    for (size_t a = 0; a < op.args.size(); ++a) {
      pointers_[a] = devicePtr(at(op.args[a]));
      params_[a] = &pointers_[a];
    }
    if (op.isCollectiveOrWait()) {
      // The collectives order themselves with the stream (Channel).
      std::vector<void *> args(op.args.size());
      for (size_t a = 0; a < args.size(); ++a)
        args[a] = at(op.args[a]);
      collective(op, args.data());
      continue;
    }
    if (probe_) {
      check(d.cuStreamSynchronize(stream), "cuStreamSynchronize");
      probedOp_ = i;
      probe_->beforeCall(*this, i);
      probedOp_ = ~size_t(0);
    }
    if (!launches_[i])
      queue_.gemm.run(op, at(op.args[0]), at(op.args[1]), at(op.args[2]));
    else
      launch(i, *launches_[i]);
    if (tracing()) {
      CUresult r = d.cuStreamSynchronize(stream);
      if (r != CUDA_SUCCESS)
        throw RuntimeError("step '" + plan_.name + "': call #" + std::to_string(i) +
                           " (" + op.label() + ") failed: " + errorText(r));
    }
  }
  if (profile_)
    check(d.cuEventRecord(events_.back(), stream), "cuEventRecord");
  for (const OutputCopy &c : plan_.copies)
    queue_.memory.copy(outputs[c.output], at(c.source), c.source.bytes);
}

void CudaStepRunner::copyWithin(void *to, const void *from, size_t bytes) {
  check(driver().cuMemcpyDtoDAsync_v2(devicePtr(to), devicePtr(from), bytes,
                                      queue_.stream),
        "cuMemcpyDtoDAsync_v2");
}

void CudaStepRunner::launch(size_t i, const std::vector<Launch> &launches) {
  const Driver &d = driver();
  for (size_t l = 0; l < launches.size(); ++l) {
    const KernelLaunch &s = launches[l].shape;
    CUresult r = d.cuLaunchKernel(launches[l].function, s.grid[0], s.grid[1], s.grid[2],
                                  s.block[0], s.block[1], s.block[2],
                                  /*sharedMemBytes=*/0, queue_.stream, params_.data(),
                                  nullptr);
    if (r != CUDA_SUCCESS)
      throw RuntimeError("step '" + plan_.name + "': kernel '" + plan_.ops[i].kernel +
                         "' (launch " + std::to_string(l) + ", " + s.entry +
                         "): cuLaunchKernel: " + errorText(r));
  }
}

CUdeviceptr CudaStepRunner::argument(size_t op, size_t arg) const {
  if (op != probedOp_ || arg >= pointers_.size())
    throw RuntimeError("step '" + plan_.name + "': argument " + std::to_string(arg) +
                       " of call " + std::to_string(op) + " read outside its probe");
  return pointers_[arg];
}

void CudaStepRunner::readArgument(size_t op, size_t arg, void *host) {
  check(driver().cuMemcpyDtoH_v2(host, argument(op, arg), plan_.ops[op].args[arg].bytes),
        "cuMemcpyDtoH_v2");
}

void CudaStepRunner::writeArgument(size_t op, size_t arg, const void *host) {
  check(driver().cuMemcpyHtoD_v2(argument(op, arg), host, plan_.ops[op].args[arg].bytes),
        "cuMemcpyHtoD_v2");
}

void CudaStepRunner::callVariant(size_t op, const std::string &symbol) {
  argument(op, 0);
  if (!plan_.ops[op].isKernel())
    throw RuntimeError("call " + std::to_string(op) + " of step '" + plan_.name +
                       "' is not a kernel");
  launch(op, queue_.kernels.launches(symbol));
  CUresult r = driver().cuStreamSynchronize(queue_.stream);
  if (r != CUDA_SUCCESS)
    throw RuntimeError("kernel '" + symbol + "' failed: " + errorText(r));
}

int CudaStepRunner::gemmAlgorithms(size_t op) {
  const PlanOp &call = plan_.ops[op];
  if (!call.isGemm())
    return 0;
  auto p = [&](size_t a) { return reinterpret_cast<void *>(argument(op, a)); };
  return queue_.gemm.algorithms(call, p(0), p(1), p(2));
}

void CudaStepRunner::callGemm(size_t op, int algorithm) {
  const PlanOp &call = plan_.ops[op];
  auto p = [&](size_t a) { return reinterpret_cast<void *>(argument(op, a)); };
  queue_.gemm.run(call, p(0), p(1), p(2), algorithm);
  CUresult r = driver().cuStreamSynchronize(queue_.stream);
  if (r != CUDA_SUCCESS)
    throw RuntimeError("GEMM " + gemmShapeKey(call) + " (algorithm " +
                       std::to_string(algorithm) + ") failed: " + errorText(r));
}

void CudaStepRunner::collectProfile() {
  const Driver &d = driver();
  check(d.cuEventSynchronize(events_.back()), "cuEventSynchronize");
  for (size_t i = 0; i < plan_.ops.size(); ++i) {
    float ms = 0;
    check(d.cuEventElapsedTime(&ms, events_[i], events_[i + 1]), "cuEventElapsedTime");
    record(i, ms / 1e3);
  }
}

} // namespace fbt::cuda
