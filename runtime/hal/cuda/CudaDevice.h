//===- CudaDevice.h - the CUDA backend: an NVIDIA GPU --------------*- C++ -*-===//
//
// GPU 0 (CUDA_VISIBLE_DEVICES picks another), through its primary context
// and one stream: every copy, kernel and GEMM is queued on that stream in
// program order, so nothing needs an explicit dependency. Host-to-device
// copies return once the host bytes are consumed; device-to-host copies
// wait for the work queued before them.
//
// A rank of a data-parallel run (launchInfo(), hal/Channel.h) takes the GPU
// of its local rank, one GPU per rank: local rank 3 opens GPU 3. Where the
// launcher gave each rank its own (CUDA_VISIBLE_DEVICES naming one GPU),
// that one is GPU 0 of every rank. More ranks on a machine than GPUs is an
// error: NCCL refuses two ranks on one GPU.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_HAL_CUDA_CUDADEVICE_H
#define FBT_RUNTIME_HAL_CUDA_CUDADEVICE_H

#include "runtime/hal/Device.h"
#include "runtime/hal/cuda/CudaApi.h"
#include "runtime/hal/cuda/CudaGemm.h"
#include "runtime/hal/cuda/CudaKernels.h"

#include <memory>

namespace fbt::cuda {

class CudaDevice : public Device {
public:
  /// Opens the GPU and loads `bundle`'s kernels; `bundle` must outlive it.
  explicit CudaDevice(const Bundle &bundle);
  ~CudaDevice() override;

  std::string describe() const override;
  void *allocate(size_t bytes, const std::string &what) override;
  void release(void *ptr) noexcept override;
  void upload(void *device, const void *host, size_t bytes) override;
  void download(void *host, const void *device, size_t bytes) override;
  void copy(void *to, const void *from, size_t bytes) override;
  void zero(void *device, size_t bytes) override;
  std::unique_ptr<StepRunner> makeRunner(const StepPlan &plan) override;
  Json tuneKey() const override;
  void selectGemms(const GemmChoice &gemms) override;

  /// The compute stream: every step's work, in program order.
  CUstream stream() const { return stream_; }
  /// The GPU, by its ordinal among the visible ones: an engine that queues
  /// work of its own on it retains its primary context (hal/nccl).
  CUdevice ordinal() const { return device_; }
  const CudaKernels &kernels() const { return *kernels_; }
  CudaGemm &gemm() { return *gemm_; }
  /// Major * 10 + minor: 90 for an H100 or H200.
  int capability() const { return capability_; }

private:
  void close() noexcept; // releases what the constructor took, once

  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CUstream stream_ = nullptr;
  std::string name_;
  int capability_ = 0, driverVersion_ = 0;
  size_t totalBytes_ = 0;
  void *workspace_ = nullptr;
  std::unique_ptr<CudaKernels> kernels_;
  std::unique_ptr<CudaGemm> gemm_;
};

/// A device for `bundle` (an "nvptx" bundle): RuntimeError naming the
/// bundle's chip and why when there is no driver or no GPU.
std::unique_ptr<Device> openCudaDevice(const Bundle &bundle);

/// "NVIDIA H200 (sm_90, 140 GiB), driver 13.0" for each visible GPU, or a
/// one-line reason why there is none; returns false in the latter case.
bool probeCuda(std::vector<std::string> *lines);

} // namespace fbt::cuda

#endif // FBT_RUNTIME_HAL_CUDA_CUDADEVICE_H
