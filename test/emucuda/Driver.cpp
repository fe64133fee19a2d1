//===- Driver.cpp - the emulated CUDA driver's entry points ---------------===//
//
// The driver API functions the runtime resolves (runtime/hal/cuda/CudaApi.h),
// exported under the names it looks up. cuda.h maps most of them to
// versioned symbols (cuMemAlloc is cuMemAlloc_v2), so defining them by
// their plain names defines what the runtime finds.
//
//===----------------------------------------------------------------------===//

#include "EmuDevice.h"

#include <array>
#include <chrono>
#include <cstring>
#include <string>

using namespace fbt::emucuda;

struct CUctx_st {};
struct CUevent_st {
  bool recorded = false;
  bool pending = false; ///< recorded on a stream that hangs: never reached
  double seconds = 0; ///< when the work before it finished
};
struct CUgraph_st {
  std::vector<Work> work;
};
struct CUgraphExec_st {
  std::vector<Work> work;
};

namespace {
bool initialized = false;
CUctx_st primaryContext;
int contextRefs = 0;

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

CUresult needInit(const char *call) {
  return initialized ? CUDA_SUCCESS
                     : refuse(call, "cuInit was not called", CUDA_ERROR_NOT_INITIALIZED);
}

CUresult checkDevice(CUdevice dev, const char *call) {
  if (CUresult r = needInit(call))
    return r;
  return dev >= 0 && dev < identity().count
             ? CUDA_SUCCESS
             : refuse(call,
                      "device " + std::to_string(dev) + " does not exist (" +
                          std::to_string(identity().count) + " visible: FBT_EMU_GPU_COUNT)",
                      CUDA_ERROR_INVALID_DEVICE);
}

CUresult checkStream(CUstream s, const char *call) {
  return !s || isStream(s) ? CUDA_SUCCESS
                           : refuse(call, "not a live stream", CUDA_ERROR_INVALID_HANDLE);
}

/// A device range of stream work.
struct Range {
  CUdeviceptr ptr;
  size_t bytes;
};

/// Stream work on `ranges`: each is checked when the call is made and again
/// when the work runs (a captured graph may replay after a free); `op` gets
/// their host bytes.
template <size_t N, typename Op>
CUresult rangeWork(CUstream stream, const char *call, std::array<Range, N> ranges, Op op) {
  if (CUresult r = checkStream(stream, call))
    return r;
  CUresult r;
  for (const Range &g : ranges)
    if (!hostOf(g.ptr, g.bytes, call, &r))
      return r;
  return enqueue(stream, call, [=]() -> CUresult {
    std::array<char *, N> host;
    CUresult e;
    for (size_t i = 0; i < N; ++i)
      if (!(host[i] = hostOf(ranges[i].ptr, ranges[i].bytes, call, &e)))
        return e;
    op(host);
    return CUDA_SUCCESS;
  });
}

struct ErrorName {
  CUresult code;
  const char *name, *text;
};
const ErrorName kErrors[] = {
    {CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX",
     "a PTX JIT compilation failed"},
    {CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {CUDA_ERROR_ILLEGAL_STATE, "CUDA_ERROR_ILLEGAL_STATE",
     "the operation is not permitted in the current state"},
    {CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CUDA_ERROR_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {CUDA_ERROR_LAUNCH_TIMEOUT, "CUDA_ERROR_LAUNCH_TIMEOUT",
     "the launch timed out and was terminated"},
    {CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
    {CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
     "too many resources requested for launch"},
    {CUDA_ERROR_INVALID_SOURCE, "CUDA_ERROR_INVALID_SOURCE", "device kernel image is invalid"},
    {CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED, "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
     "operation not permitted when stream is capturing"},
    {CUDA_ERROR_STREAM_CAPTURE_INVALIDATED, "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
     "operation failed due to a previous error during capture"},
    {CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};
const ErrorName *errorOf(CUresult r) {
  for (const ErrorName &e : kErrors)
    if (e.code == r)
      return &e;
  return nullptr;
}
} // namespace

extern "C" {

CUresult CUDAAPI cuInit(unsigned int flags) {
  if (flags != 0)
    return refuse("cuInit", "flags must be 0", CUDA_ERROR_INVALID_VALUE);
  initialized = true;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDriverGetVersion(int *version) {
  if (!version)
    return CUDA_ERROR_INVALID_VALUE;
  *version = identity().driverVersion;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorName(CUresult error, const char **out) {
  const ErrorName *e = errorOf(error);
  if (!out || !e)
    return CUDA_ERROR_INVALID_VALUE;
  *out = e->name;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGetErrorString(CUresult error, const char **out) {
  const ErrorName *e = errorOf(error);
  if (!out || !e)
    return CUDA_ERROR_INVALID_VALUE;
  *out = e->text;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetCount(int *count) {
  if (CUresult r = needInit("cuDeviceGetCount"))
    return r;
  *count = identity().count;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal) {
  if (CUresult r = checkDevice(ordinal, "cuDeviceGet"))
    return r;
  *device = ordinal;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGetAttribute(int *value, CUdevice_attribute attribute, CUdevice dev) {
  if (CUresult r = checkDevice(dev, "cuDeviceGetAttribute"))
    return r;
  switch (attribute) {
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
    *value = identity().sm / 10;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
    *value = identity().sm % 10;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
    *value = 1024;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
    *value = 48 << 10;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
    *value = 32;
    return CUDA_SUCCESS;
  case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
    *value = 132;
    return CUDA_SUCCESS;
  default:
    return refuse("cuDeviceGetAttribute",
                  "attribute " + std::to_string((int)attribute) + " is not emulated",
                  CUDA_ERROR_INVALID_VALUE);
  }
}

CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev) {
  if (CUresult r = checkDevice(dev, "cuDeviceGetName"))
    return r;
  if (!name || len <= 0)
    return CUDA_ERROR_INVALID_VALUE;
  std::strncpy(name, identity().name.c_str(), (size_t)len - 1);
  name[len - 1] = '\0';
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceTotalMem(size_t *bytes, CUdevice dev) {
  if (CUresult r = checkDevice(dev, "cuDeviceTotalMem_v2"))
    return r;
  *bytes = identity().memoryBytes;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev) {
  if (CUresult r = checkDevice(dev, "cuDevicePrimaryCtxRetain"))
    return r;
  ++contextRefs;
  *ctx = &primaryContext;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev) {
  if (CUresult r = checkDevice(dev, "cuDevicePrimaryCtxRelease_v2"))
    return r;
  if (contextRefs == 0)
    return refuse("cuDevicePrimaryCtxRelease_v2", "the context was not retained",
                  CUDA_ERROR_INVALID_CONTEXT);
  --contextRefs;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx) {
  if (ctx && ctx != &primaryContext)
    return refuse("cuCtxSetCurrent", "not a context of this device",
                  CUDA_ERROR_INVALID_CONTEXT);
  return needInit("cuCtxSetCurrent");
}

CUresult CUDAAPI cuMemGetInfo(size_t *free, size_t *total) {
  *total = identity().memoryBytes;
  *free = *total - bytesInUse();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAlloc(CUdeviceptr *ptr, size_t bytes) {
  return allocate(ptr, bytes, "cuMemAlloc_v2");
}

CUresult CUDAAPI cuMemFree(CUdeviceptr ptr) {
  if (capturing(nullptr))
    return refuseDuringCapture("cuMemFree_v2");
  return fbt::emucuda::free(ptr, "cuMemFree_v2");
}

// Copies. The synchronous ones run on the legacy default stream and are
// refused while this thread captures; the asynchronous ones are stream work.
CUresult CUDAAPI cuMemcpyHtoD(CUdeviceptr dst, const void *src, size_t bytes) {
  const char *call = "cuMemcpyHtoD_v2";
  if (capturing(nullptr))
    return refuseDuringCapture(call);
  CUresult r;
  char *to = hostOf(dst, bytes, call, &r);
  if (to && bytes)
    std::memcpy(to, src, bytes);
  return r;
}

CUresult CUDAAPI cuMemcpyDtoH(void *dst, CUdeviceptr src, size_t bytes) {
  const char *call = "cuMemcpyDtoH_v2";
  if (capturing(nullptr))
    return refuseDuringCapture(call);
  CUresult r;
  const char *from = hostOf(src, bytes, call, &r);
  if (from && bytes)
    std::memcpy(dst, from, bytes);
  return r;
}

CUresult CUDAAPI cuMemcpyHtoDAsync(CUdeviceptr dst, const void *src, size_t bytes,
                                   CUstream stream) {
  return rangeWork<1>(stream, "cuMemcpyHtoDAsync_v2", {{{dst, bytes}}},
                      [=](auto &host) { std::memcpy(host[0], src, bytes); });
}

CUresult CUDAAPI cuMemcpyDtoHAsync(void *dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  return rangeWork<1>(stream, "cuMemcpyDtoHAsync_v2", {{{src, bytes}}},
                      [=](auto &host) { std::memcpy(dst, host[0], bytes); });
}

CUresult CUDAAPI cuMemcpyDtoDAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes,
                                   CUstream stream) {
  return rangeWork<2>(stream, "cuMemcpyDtoDAsync_v2", {{{dst, bytes}, {src, bytes}}},
                      [=](auto &host) { std::memmove(host[0], host[1], bytes); });
}

CUresult CUDAAPI cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t count,
                                 CUstream stream) {
  return rangeWork<1>(stream, "cuMemsetD8Async", {{{dst, count}}},
                      [=](auto &host) { std::memset(host[0], value, count); });
}

CUresult CUDAAPI cuMemsetD32Async(CUdeviceptr dst, unsigned int value, size_t count,
                                  CUstream stream) {
  if (dst % 4)
    return refuse("cuMemsetD32Async", "the address is not 4-byte aligned",
                  CUDA_ERROR_INVALID_VALUE);
  return rangeWork<1>(stream, "cuMemsetD32Async", {{{dst, count * 4}}}, [=](auto &host) {
    for (size_t i = 0; i < count; ++i)
      std::memcpy(host[0] + 4 * i, &value, 4);
  });
}

CUresult CUDAAPI cuStreamCreate(CUstream *stream, unsigned int flags) {
  (void)flags;
  if (CUresult r = needInit("cuStreamCreate"))
    return r;
  *stream = newStream();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuStreamDestroy(CUstream stream) {
  if (capturing(stream))
    return refuse("cuStreamDestroy_v2", "the stream is being captured",
                  CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  return destroyStream(stream)
             ? CUDA_SUCCESS
             : refuse("cuStreamDestroy_v2", "not a live stream", CUDA_ERROR_INVALID_HANDLE);
}

CUresult CUDAAPI cuStreamSynchronize(CUstream stream) {
  const char *call = "cuStreamSynchronize";
  if (CUresult r = checkStream(stream, call))
    return r;
  if (capturing(stream))
    return refuseDuringCapture(call);
  if (hung(stream))
    return refuse(call, "the stream hangs: this would wait forever", CUDA_ERROR_LAUNCH_TIMEOUT);
  return CUDA_SUCCESS; // stream work runs when it is queued
}

// Streams run their work when it is queued, so what an event marks is
// done already: waiting for it orders nothing that is not ordered. It is
// stream work all the same, so that a capture records it.
CUresult CUDAAPI cuStreamWaitEvent(CUstream stream, CUevent event, unsigned int flags) {
  const char *call = "cuStreamWaitEvent";
  if (CUresult r = checkStream(stream, call))
    return r;
  if (!event)
    return refuse(call, "a null event", CUDA_ERROR_INVALID_HANDLE);
  if (flags != 0)
    return refuse(call, "flags must be 0", CUDA_ERROR_INVALID_VALUE);
  if (event->pending && !capturing(stream))
    hang(stream); // it waits for work that never ends
  return enqueue(stream, call, [] { return CUDA_SUCCESS; });
}

CUresult CUDAAPI cuStreamBeginCapture(CUstream stream, CUstreamCaptureMode mode) {
  if (CUresult r = checkStream(stream, "cuStreamBeginCapture_v2"))
    return r;
  if (mode != CU_STREAM_CAPTURE_MODE_THREAD_LOCAL && mode != CU_STREAM_CAPTURE_MODE_GLOBAL &&
      mode != CU_STREAM_CAPTURE_MODE_RELAXED)
    return CUDA_ERROR_INVALID_VALUE;
  return beginCapture(stream);
}

CUresult CUDAAPI cuStreamEndCapture(CUstream stream, CUgraph *graph) {
  if (CUresult r = checkStream(stream, "cuStreamEndCapture"))
    return r;
  std::vector<Work> work;
  CUresult r = endCapture(stream, &work);
  *graph = r == CUDA_SUCCESS ? new CUgraph_st{std::move(work)} : nullptr;
  return r;
}

CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec *exec, CUgraph graph,
                                             unsigned long long flags) {
  (void)flags;
  if (!graph)
    return refuse("cuGraphInstantiateWithFlags", "a null graph", CUDA_ERROR_INVALID_VALUE);
  *exec = new CUgraphExec_st{graph->work};
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphLaunch(CUgraphExec exec, CUstream stream) {
  const char *call = "cuGraphLaunch";
  if (CUresult r = checkStream(stream, call))
    return r;
  if (!exec)
    return refuse(call, "a null graph", CUDA_ERROR_INVALID_VALUE);
  std::vector<Work> work = exec->work;
  return enqueue(stream, call, [work] {
    for (const Work &w : work)
      if (CUresult r = w())
        return r;
    return CUDA_SUCCESS;
  });
}

CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec exec) {
  delete exec;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuGraphDestroy(CUgraph graph) {
  delete graph;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventCreate(CUevent *event, unsigned int flags) {
  (void)flags;
  *event = new CUevent_st;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventDestroy(CUevent event) {
  delete event;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventRecord(CUevent event, CUstream stream) {
  const char *call = "cuEventRecord";
  if (CUresult r = checkStream(stream, call))
    return r;
  if (!event)
    return refuse(call, "a null event", CUDA_ERROR_INVALID_HANDLE);
  if (hung(stream)) {
    event->pending = true;
    return CUDA_SUCCESS;
  }
  return enqueue(stream, call, [event] {
    event->pending = false;
    event->recorded = true;
    event->seconds = now();
    return CUDA_SUCCESS;
  });
}

// Done, as the work before it (or never recorded, which the real driver
// also reports as done), unless recorded on a stream that hangs.
CUresult CUDAAPI cuEventQuery(CUevent event) {
  if (!event)
    return refuse("cuEventQuery", "a null event", CUDA_ERROR_INVALID_HANDLE);
  if (capturing(nullptr))
    return refuseDuringCapture("cuEventQuery");
  return event->pending ? CUDA_ERROR_NOT_READY : CUDA_SUCCESS;
}

CUresult CUDAAPI cuEventSynchronize(CUevent event) {
  if (!event)
    return CUDA_ERROR_INVALID_HANDLE;
  if (capturing(nullptr))
    return refuseDuringCapture("cuEventSynchronize");
  if (event->pending)
    return refuse("cuEventSynchronize", "the event's stream hangs: this would wait forever",
                  CUDA_ERROR_LAUNCH_TIMEOUT);
  return CUDA_SUCCESS;
}

// cuda.h maps cuEventElapsedTime to its _v2; the runtime resolves the
// original symbol, which every driver exports. Both are here.
#undef cuEventElapsedTime
CUresult CUDAAPI cuEventElapsedTime(float *ms, CUevent start, CUevent end) {
  if (!ms || !start || !end)
    return CUDA_ERROR_INVALID_HANDLE;
  if (!start->recorded || !end->recorded)
    return refuse("cuEventElapsedTime", "an event was never recorded", CUDA_ERROR_NOT_READY);
  *ms = (float)(1e3 * (end->seconds - start->seconds));
  return CUDA_SUCCESS;
}
CUresult CUDAAPI cuEventElapsedTime_v2(float *ms, CUevent start, CUevent end) {
  return cuEventElapsedTime(ms, start, end);
}

CUresult CUDAAPI cuModuleLoadDataEx(CUmodule *module, const void *image, unsigned int count,
                                    CUjit_option *options, void **values) {
  if (CUresult r = needInit("cuModuleLoadDataEx"))
    return r;
  CUresult r = loadModule(module, image);
  // The JIT's error log, where the caller asked for one.
  for (unsigned i = 0; r != CUDA_SUCCESS && i + 1 < count; ++i)
    if (options[i] == CU_JIT_ERROR_LOG_BUFFER &&
        options[i + 1] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES) {
      size_t size = reinterpret_cast<size_t>(values[i + 1]);
      if (size > 0)
        std::snprintf(static_cast<char *>(values[i]), size,
                      "emulated CUDA: the image is neither PTX nor a cubin");
    }
  return r;
}

CUresult CUDAAPI cuModuleUnload(CUmodule module) { return unloadModule(module); }

CUresult CUDAAPI cuModuleGetFunction(CUfunction *function, CUmodule module, const char *name) {
  return moduleFunction(function, module, name);
}

CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gx, unsigned int gy,
                                unsigned int gz, unsigned int bx, unsigned int by,
                                unsigned int bz, unsigned int sharedBytes, CUstream stream,
                                void **params, void **extra) {
  if (CUresult r = checkStream(stream, "cuLaunchKernel"))
    return r;
  const unsigned grid[3] = {gx, gy, gz}, block[3] = {bx, by, bz};
  return launch(f, grid, block, sharedBytes, stream, params, extra);
}

} // extern "C"
