//===- EmuDevice.h - the emulated GPU behind the emulated driver --*- C++ -*-===//
//
// For tests only: the state of one emulated NVIDIA GPU, shared by the
// emulated driver (libcuda.so.1, Driver.cpp) and cuBLASLt
// (libcublasLt.so.13, BlasLt.cpp), which the runtime loads where it would
// load NVIDIA's (LD_LIBRARY_PATH). It behaves like a device, not a stub:
//   - device memory is host memory at addresses of its own (never a host
//     address), every access checked against the live allocations: an
//     access outside one, after its free, or through a host pointer is an
//     error that names the call;
//   - streams run their work in order, at once; a stream being captured
//     records it instead, and a graph replays what was recorded; what the
//     real driver refuses during a capture (a synchronous copy, a
//     synchronize) is refused, and invalidates the capture;
//   - events record when the work before them finished;
//   - a stream can hang (hang(): the emulated NCCL's all-reduce whose
//     peer never comes): its later work never runs, events recorded on it
//     stay pending, a stream that waits for one hangs too, and a call
//     that would wait for either forever is refused instead.
// The device's identity is an H200's unless FBT_EMU_GPU_NAME, _SM (90),
// _MEMORY_MIB and FBT_EMU_DRIVER_VERSION say otherwise; FBT_EMU_GPU_COUNT
// (default 1) such GPUs are visible, alike, so that the ranks of a
// data-parallel run each take their own (one process uses one of them:
// they share this process's memory and streams). Each refusal is also
// a line on stderr, "emulated CUDA: <call>: <why>", since a CUresult alone
// cannot say which address was wrong.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_TEST_EMUCUDA_EMUDEVICE_H
#define FBT_TEST_EMUCUDA_EMUDEVICE_H

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace fbt::emucuda {

/// What an emulated GPU reports about itself.
struct Identity {
  std::string name;
  int sm = 90;
  size_t memoryBytes = 0;
  int driverVersion = 13000;
  int count = 1; ///< GPUs visible
};
const Identity &identity();

/// Prints "emulated CUDA: <call>: <why>" and returns `result`.
CUresult refuse(const char *call, const std::string &why, CUresult result);

/// Device memory.
CUresult allocate(CUdeviceptr *out, size_t bytes, const char *call);
CUresult free(CUdeviceptr ptr, const char *call);
size_t bytesInUse();
/// The host bytes behind [ptr, ptr + bytes), which must lie in one live
/// allocation; null (after refuse(), CUDA_ERROR_INVALID_VALUE or
/// CUDA_ERROR_ILLEGAL_ADDRESS in `result`) otherwise. `bytes` 0 checks the
/// address alone.
char *hostOf(CUdeviceptr ptr, size_t bytes, const char *call, CUresult *result);
/// hostOf() without the stderr line: on failure null, with the reason in
/// `why` and the CUresult in `result`, for a library that words its own
/// refusals (the emulated NCCL).
char *lookup(CUdeviceptr ptr, size_t bytes, std::string *why, CUresult *result);

/// Work on a stream: runs now, or is recorded when the stream is being
/// captured. Returns the work's result (CUDA_SUCCESS when recorded).
using Work = std::function<CUresult()>;
CUresult enqueue(CUstream stream, const char *call, Work work);
/// Makes `stream` (not the legacy default stream) hang: its work from now
/// on is dropped, as if queued behind a kernel that never ends.
void hang(CUstream stream);
bool hung(CUstream stream);
/// Whether `stream` (or, for the legacy default stream 0, any stream of
/// this thread) is being captured: synchronous calls are refused then.
bool capturing(CUstream stream);
/// Refuses a call that may not run during a capture, invalidating it.
CUresult refuseDuringCapture(const char *call);

/// Streams and their capture (CU_STREAM_CAPTURE_MODE_THREAD_LOCAL: the
/// capturing thread's synchronous calls are refused).
CUstream newStream();
bool destroyStream(CUstream stream);
bool isStream(CUstream stream);
CUresult beginCapture(CUstream stream);
/// The work recorded since beginCapture; CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
/// (and none) if a refused call broke the capture.
CUresult endCapture(CUstream stream, std::vector<Work> *work);

/// Modules (Modules.cpp): a PTX or cubin image, its kernels resolved to
/// their SIMT twins, and launches run through the SIMT emulator.
CUresult loadModule(CUmodule *module, const void *image);
CUresult unloadModule(CUmodule module);
CUresult moduleFunction(CUfunction *function, CUmodule module, const char *name);
CUresult launch(CUfunction f, const unsigned grid[3], const unsigned block[3],
                unsigned sharedBytes, CUstream stream, void **params, void **extra);

} // namespace fbt::emucuda

#endif // FBT_TEST_EMUCUDA_EMUDEVICE_H
