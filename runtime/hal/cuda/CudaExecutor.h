//===- CudaExecutor.h - running a step plan on an NVIDIA GPU -------*- C++ -*-===//
//
// The CUDA StepRunner: the step's arena and constants live on the device
// (constants filled once), generated kernels run as the bundle's launches,
// GEMMs on cuBLASLt, all on the device's one stream.
//
// Decode steps run thousands of times with the same buffers and are short,
// so launch overhead dominates them: their second run is captured into a
// CUDA graph (the first warms up cuBLASLt and the kernels), and later runs
// with the same buffers replay it with one launch. A capture that fails
// falls back to plain launches. FBT_CUDA_GRAPHS=0 turns
// graphs off; FBT_TRACE=1 (or profiling) runs plain launches, and tracing
// also waits for each call, so a failing kernel is named.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_HAL_CUDA_CUDAEXECUTOR_H
#define FBT_RUNTIME_HAL_CUDA_CUDAEXECUTOR_H

#include "runtime/hal/Device.h"
#include "runtime/hal/StepRunner.h"
#include "runtime/hal/cuda/CudaApi.h"
#include "runtime/hal/cuda/CudaGemm.h"
#include "runtime/hal/cuda/CudaKernels.h"

namespace fbt::cuda {

/// What a runner uses of its device (CudaDevice, which makes the runners):
/// the memory it allocates and copies in, whose kernel choice it follows,
/// the one stream, the loaded kernels and cuBLASLt. All outlive the runner.
struct CudaQueue {
  Device &memory;
  CUstream stream;
  const CudaKernels &kernels;
  CudaGemm &gemm;
};

class CudaStepRunner : public StepRunner {
public:
  CudaStepRunner(const StepPlan &plan, const CudaQueue &queue);
  ~CudaStepRunner() override;

  void run(const std::vector<void *> &inputs,
           const std::vector<void *> &outputs) override;

  void readArgument(size_t op, size_t arg, void *host) override;
  void writeArgument(size_t op, size_t arg, const void *host) override;
  void callVariant(size_t op, const std::string &symbol) override;
  int gemmAlgorithms(size_t op) override;
  void callGemm(size_t op, int algorithm) override;

protected:
  void copyWithin(void *to, const void *from, size_t bytes) override;

private:
  /// Queues `launches` of op `i`'s kernel on the current pointers.
  void launch(size_t i, const std::vector<Launch> &launches);
  /// The probed op's argument `arg`, checked.
  CUdeviceptr argument(size_t op, size_t arg) const;

  /// Queues every call of the plan and the output copies.
  void enqueue(const std::vector<void *> &inputs, const std::vector<void *> &outputs);
  /// Records enqueue() into graph_; false if the driver would not.
  bool capture(const std::vector<void *> &inputs, const std::vector<void *> &outputs);
  void dropGraph();
  /// Adds the timings of the last profiled run to the profile.
  void collectProfile();

  CudaQueue queue_;
  DeviceBuffer arena_, constants_;
  std::vector<char *> constantAddresses_;
  std::vector<const std::vector<Launch> *> launches_; // per op, null for GEMMs
  bool graphs_ = false;
  int64_t runs_ = 0;
  CUgraphExec graph_ = nullptr;
  std::vector<void *> graphInputs_, graphOutputs_;
  std::vector<CUevent> events_; // profiling: one before each op, one after all
  std::vector<CUdeviceptr> pointers_; // the current call's arguments
  std::vector<void *> params_;        // kernelParams: &pointers_[j]
  size_t probedOp_ = ~size_t(0);
};

} // namespace fbt::cuda

#endif // FBT_RUNTIME_HAL_CUDA_CUDAEXECUTOR_H
