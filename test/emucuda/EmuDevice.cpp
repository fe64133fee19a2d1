//===- EmuDevice.cpp - the emulated GPU behind the emulated driver --------===//

#include "EmuDevice.h"

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

// The driver's handle types are opaque in cuda.h; these are the emulator's.
struct CUstream_st {
  bool capturing = false, invalidated = false;
  bool hung = false; ///< its work never runs again (hang())
  std::thread::id owner;
  std::vector<fbt::emucuda::Work> recorded;
};

namespace fbt::emucuda {

namespace {
std::recursive_mutex &lock() {
  static std::recursive_mutex m;
  return m;
}

size_t envSize(const char *name, size_t fallback) {
  const char *v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

/// Device addresses start above what a host pointer can be (2^56 is not a
/// canonical x86-64 or AArch64 user address): a device pointer used as a host
/// one faults, and a host pointer is never mistaken for a device one.
constexpr uint64_t kBase = uint64_t(1) << 56;
/// Between allocations, so that a read just past one lands in none.
constexpr uint64_t kGap = 4096;

struct Allocation {
  uint64_t bytes = 0;
  std::unique_ptr<char[]> host; ///< null once freed
};
std::map<uint64_t, Allocation> &allocations() {
  static std::map<uint64_t, Allocation> all; // by start address; freed ones kept
  return all;
}
uint64_t nextAddress = kBase;
size_t inUse = 0;

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)v);
  return buf;
}
} // namespace

const Identity &identity() {
  static const Identity id = [] {
    Identity i;
    const char *name = std::getenv("FBT_EMU_GPU_NAME");
    i.name = name && *name ? name : "NVIDIA H200 (emulated)";
    i.sm = (int)envSize("FBT_EMU_GPU_SM", 90);
    i.memoryBytes = envSize("FBT_EMU_GPU_MEMORY_MIB", 143771) << 20;
    i.driverVersion = (int)envSize("FBT_EMU_DRIVER_VERSION", 13000);
    i.count = (int)envSize("FBT_EMU_GPU_COUNT", 1);
    return i;
  }();
  return id;
}

CUresult refuse(const char *call, const std::string &why, CUresult result) {
  std::fprintf(stderr, "emulated CUDA: %s: %s\n", call, why.c_str());
  return result;
}

CUresult allocate(CUdeviceptr *out, size_t bytes, const char *call) {
  std::lock_guard<std::recursive_mutex> g(lock());
  if (!out)
    return refuse(call, "a null result pointer", CUDA_ERROR_INVALID_VALUE);
  if (bytes == 0)
    return refuse(call, "0 bytes requested", CUDA_ERROR_INVALID_VALUE);
  if (inUse + bytes > identity().memoryBytes)
    return CUDA_ERROR_OUT_OF_MEMORY; // an ordinary answer, said by the caller
  Allocation a;
  a.bytes = bytes;
  a.host.reset(new (std::nothrow) char[bytes]);
  if (!a.host)
    return CUDA_ERROR_OUT_OF_MEMORY;
  uint64_t at = nextAddress;
  nextAddress += (bytes + kGap + 255) / 256 * 256;
  allocations()[at] = std::move(a);
  inUse += bytes;
  *out = at;
  return CUDA_SUCCESS;
}

CUresult free(CUdeviceptr ptr, const char *call) {
  std::lock_guard<std::recursive_mutex> g(lock());
  auto it = allocations().find(ptr);
  if (it == allocations().end())
    return refuse(call, hex(ptr) + " is not the start of an allocation",
                  CUDA_ERROR_INVALID_VALUE);
  if (!it->second.host)
    return refuse(call, hex(ptr) + " was freed already", CUDA_ERROR_INVALID_VALUE);
  it->second.host.reset();
  inUse -= it->second.bytes;
  return CUDA_SUCCESS;
}

size_t bytesInUse() {
  std::lock_guard<std::recursive_mutex> g(lock());
  return inUse;
}

char *lookup(CUdeviceptr ptr, size_t bytes, std::string *why, CUresult *result) {
  std::lock_guard<std::recursive_mutex> g(lock());
  *result = CUDA_SUCCESS;
  if (ptr < kBase) {
    *why = hex(ptr) + " is not a device address (a host pointer?)";
    *result = CUDA_ERROR_INVALID_VALUE;
    return nullptr;
  }
  auto it = allocations().upper_bound(ptr);
  if (it == allocations().begin() || (--it, ptr >= it->first + it->second.bytes)) {
    *why = hex(ptr) + " is in no allocation";
    *result = CUDA_ERROR_ILLEGAL_ADDRESS;
    return nullptr;
  }
  uint64_t offset = ptr - it->first;
  if (!it->second.host) {
    *why = hex(ptr) + " is in an allocation freed earlier (" + hex(it->first) + ", " +
           std::to_string(it->second.bytes) + " bytes)";
    *result = CUDA_ERROR_ILLEGAL_ADDRESS;
    return nullptr;
  }
  if (bytes > it->second.bytes - offset) {
    *why = std::to_string(bytes) + " bytes at " + hex(ptr) + " run past the end of " +
           "its allocation (" + hex(it->first) + ", " + std::to_string(it->second.bytes) +
           " bytes)";
    *result = CUDA_ERROR_ILLEGAL_ADDRESS;
    return nullptr;
  }
  return it->second.host.get() + offset;
}

char *hostOf(CUdeviceptr ptr, size_t bytes, const char *call, CUresult *result) {
  std::string why;
  char *host = lookup(ptr, bytes, &why, result);
  if (!host)
    refuse(call, why, *result);
  return host;
}

CUresult enqueue(CUstream stream, const char *call, Work work) {
  std::lock_guard<std::recursive_mutex> g(lock());
  if (stream && stream->capturing) {
    stream->recorded.push_back(std::move(work));
    return CUDA_SUCCESS;
  }
  if (!stream && capturing(nullptr))
    return refuseDuringCapture(call); // the legacy stream syncs with the captured one
  if (stream && stream->hung)
    return CUDA_SUCCESS; // queued behind work that never finishes
  return work();
}

void hang(CUstream stream) {
  std::lock_guard<std::recursive_mutex> g(lock());
  if (stream)
    stream->hung = true;
}

bool hung(CUstream stream) {
  std::lock_guard<std::recursive_mutex> g(lock());
  return stream && stream->hung;
}

namespace {
std::vector<CUstream> &streams() {
  static std::vector<CUstream> all;
  return all;
}
} // namespace

bool capturing(CUstream stream) {
  std::lock_guard<std::recursive_mutex> g(lock());
  if (stream)
    return stream->capturing;
  for (CUstream s : streams())
    if (s->capturing && s->owner == std::this_thread::get_id())
      return true;
  return false;
}

CUresult refuseDuringCapture(const char *call) {
  std::lock_guard<std::recursive_mutex> g(lock());
  for (CUstream s : streams())
    if (s->capturing && s->owner == std::this_thread::get_id())
      s->invalidated = true;
  return refuse(call, "not allowed while a stream is being captured",
                CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
}

/// Streams, for Driver.cpp.
CUstream newStream() {
  std::lock_guard<std::recursive_mutex> g(lock());
  streams().push_back(new CUstream_st);
  return streams().back();
}

bool destroyStream(CUstream s) {
  std::lock_guard<std::recursive_mutex> g(lock());
  for (size_t i = 0; i < streams().size(); ++i)
    if (streams()[i] == s) {
      streams().erase(streams().begin() + i);
      delete s;
      return true;
    }
  return false;
}

bool isStream(CUstream s) {
  std::lock_guard<std::recursive_mutex> g(lock());
  for (CUstream t : streams())
    if (t == s)
      return true;
  return false;
}

CUresult beginCapture(CUstream s) {
  std::lock_guard<std::recursive_mutex> g(lock());
  if (!s)
    return refuse("cuStreamBeginCapture_v2", "the legacy default stream cannot be captured",
                  CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
  if (s->capturing)
    return refuse("cuStreamBeginCapture_v2", "the stream is being captured already",
                  CUDA_ERROR_ILLEGAL_STATE);
  s->capturing = true;
  s->invalidated = false;
  s->owner = std::this_thread::get_id();
  s->recorded.clear();
  return CUDA_SUCCESS;
}

CUresult endCapture(CUstream s, std::vector<Work> *work) {
  std::lock_guard<std::recursive_mutex> g(lock());
  if (!s || !s->capturing)
    return refuse("cuStreamEndCapture", "the stream is not being captured",
                  CUDA_ERROR_ILLEGAL_STATE);
  s->capturing = false;
  *work = std::move(s->recorded);
  s->recorded.clear();
  if (s->invalidated) {
    work->clear();
    return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
  }
  return CUDA_SUCCESS;
}

} // namespace fbt::emucuda
