//===- CudaApi.h - the CUDA driver and cuBLASLt, loaded at run time -*- C++ -*-===//
//
// fbt links neither libcuda nor libcublasLt: it dlopen()s them the first
// time a GPU bundle runs, so the same binary runs CPU bundles on machines
// without a driver and says why a GPU bundle cannot run there. Only the
// entry points the CUDA backend calls are resolved, each by its exact
// exported name: cuda.h #defines many names to versioned symbols (cuMemAlloc
// is cuMemAlloc_v2), and dlsym knows only the latter, so the tables below
// spell the versioned names out.
//
// Every call goes through check(), which turns a failure into a
// RuntimeError naming the call and the CUDA error, e.g.
//   cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (out of memory)
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_HAL_CUDA_CUDAAPI_H
#define FBT_RUNTIME_HAL_CUDA_CUDAAPI_H

#include <cublasLt.h>
#include <cuda.h>

#include <string>

namespace fbt::cuda {

// X(symbol): the driver functions used, by exported symbol.
#define FBT_CUDA_DRIVER_FUNCTIONS(X)                                           \
  X(cuInit)                                                                    \
  X(cuDriverGetVersion)                                                        \
  X(cuGetErrorName)                                                            \
  X(cuGetErrorString)                                                          \
  X(cuDeviceGet)                                                               \
  X(cuDeviceGetCount)                                                          \
  X(cuDeviceGetAttribute)                                                      \
  X(cuDeviceGetName)                                                           \
  X(cuDeviceTotalMem_v2)                                                       \
  X(cuMemcpyHtoD_v2)                                                           \
  X(cuMemcpyDtoH_v2)                                                           \
  X(cuDevicePrimaryCtxRetain)                                                  \
  X(cuDevicePrimaryCtxRelease_v2)                                              \
  X(cuCtxSetCurrent)                                                           \
  X(cuModuleLoadDataEx)                                                        \
  X(cuModuleUnload)                                                            \
  X(cuModuleGetFunction)                                                       \
  X(cuLaunchKernel)                                                            \
  X(cuMemGetInfo_v2)                                                           \
  X(cuMemAlloc_v2)                                                             \
  X(cuMemFree_v2)                                                              \
  X(cuMemcpyHtoDAsync_v2)                                                      \
  X(cuMemcpyDtoHAsync_v2)                                                      \
  X(cuMemcpyDtoDAsync_v2)                                                      \
  X(cuMemsetD8Async)                                                           \
  X(cuMemsetD32Async)                                                          \
  X(cuStreamCreate)                                                            \
  X(cuStreamDestroy_v2)                                                        \
  X(cuStreamSynchronize)                                                       \
  X(cuStreamWaitEvent)                                                         \
  X(cuStreamBeginCapture_v2)                                                   \
  X(cuStreamEndCapture)                                                        \
  X(cuGraphInstantiateWithFlags)                                               \
  X(cuGraphLaunch)                                                             \
  X(cuGraphExecDestroy)                                                        \
  X(cuGraphDestroy)                                                            \
  X(cuEventCreate)                                                             \
  X(cuEventDestroy_v2)                                                         \
  X(cuEventRecord)                                                             \
  X(cuEventQuery)                                                              \
  X(cuEventSynchronize)

#define FBT_CUBLASLT_FUNCTIONS(X)                                              \
  X(cublasLtCreate)                                                            \
  X(cublasLtDestroy)                                                           \
  X(cublasLtGetVersion)                                                        \
  X(cublasLtGetStatusName)                                                     \
  X(cublasLtGetStatusString)                                                   \
  X(cublasLtMatmulDescCreate)                                                  \
  X(cublasLtMatmulDescDestroy)                                                 \
  X(cublasLtMatmulDescSetAttribute)                                            \
  X(cublasLtMatrixLayoutCreate)                                                \
  X(cublasLtMatrixLayoutDestroy)                                               \
  X(cublasLtMatmulPreferenceCreate)                                            \
  X(cublasLtMatmulPreferenceDestroy)                                           \
  X(cublasLtMatmulPreferenceSetAttribute)                                      \
  X(cublasLtMatmulAlgoGetHeuristic)                                            \
  X(cublasLtMatmul)

#define FBT_DECLARE_ENTRY(name) decltype(&::name) name = nullptr;

/// The driver's entry points. cuEventElapsedTime is apart: CUDA 13's cuda.h
/// maps it to cuEventElapsedTime_v2 (new in 12.8), and the original symbol
/// (the same signature) is what every driver fbt supports exports.
struct Driver {
  FBT_CUDA_DRIVER_FUNCTIONS(FBT_DECLARE_ENTRY)
  CUresult (*cuEventElapsedTime)(float *ms, CUevent start, CUevent end) = nullptr;
};

struct BlasLt {
  FBT_CUBLASLT_FUNCTIONS(FBT_DECLARE_ENTRY)
  std::string library; ///< the file it was loaded from
};

#undef FBT_DECLARE_ENTRY

/// The driver, loaded once: throws RuntimeError("no CUDA driver was found
/// (libcuda.so.1): ...") where there is none, or where cuInit fails.
const Driver &driver();
/// cuBLASLt, loaded once (libcublasLt.so.13, .so.12, .so; FBT_CUBLASLT
/// names a file to use instead).
const BlasLt &blasLt();

/// "CUDA_ERROR_X (what it means)".
std::string errorText(CUresult result);
/// Throws RuntimeError("<call>: <errorText>") unless `result` is success.
void check(CUresult result, const char *call);
void check(cublasStatus_t status, const char *call);

} // namespace fbt::cuda

#endif // FBT_RUNTIME_HAL_CUDA_CUDAAPI_H
