//===- NcclApi.h - NCCL, loaded at run time -----------------------*- C++ -*-===//
//
// fbt does not link NCCL: the NCCL engine dlopen()s libnccl.so.2 when a
// run on GPUs first joins its ranks, as the CUDA backend loads the driver
// and cuBLASLt, so one fbt binary runs where NCCL is absent and says why a
// data-parallel GPU run cannot start there. Only the entry points the
// engine calls are resolved, each by its exported name; nccl.h (shipped
// with the CUDA toolkit) gives their types.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_HAL_NCCL_NCCLAPI_H
#define FBT_RUNTIME_HAL_NCCL_NCCLAPI_H

#include <nccl.h>

#include <string>

namespace fbt::nccl {

// X(symbol): the NCCL functions used, by exported symbol.
#define FBT_NCCL_FUNCTIONS(X)                                                  \
  X(ncclGetVersion)                                                            \
  X(ncclGetErrorString)                                                        \
  X(ncclGetUniqueId)                                                           \
  X(ncclCommInitRank)                                                          \
  X(ncclCommDestroy)                                                           \
  X(ncclCommAbort)                                                             \
  X(ncclCommGetAsyncError)                                                     \
  X(ncclGroupStart)                                                            \
  X(ncclGroupEnd)                                                              \
  X(ncclAllReduce)                                                             \
  X(ncclReduce)                                                                \
  X(ncclBroadcast)                                                             \
  X(ncclRedOpCreatePreMulSum)                                                  \
  X(ncclRedOpDestroy)

#define FBT_DECLARE_ENTRY(name) decltype(&::name) name = nullptr;

struct Api {
  FBT_NCCL_FUNCTIONS(FBT_DECLARE_ENTRY)
  std::string library; ///< the file it was loaded from
  std::string version; ///< "2.28.9"
};

#undef FBT_DECLARE_ENTRY

/// NCCL, loaded once from libnccl.so.2 (FBT_NCCL names a file to load
/// instead): throws RuntimeError("no NCCL was found (libnccl.so.2): ...")
/// where there is none, or where it lacks an entry point (older than 2.11,
/// which has no ncclRedOpCreatePreMulSum).
const Api &api();

/// "2.28.9" for ncclGetVersion's 22809 (and 2.8.4 for 2804: the codes
/// before 2.9 had one digit less for the minor version).
std::string versionText(int code);
/// "ncclRemoteError (remote process exited or there was a network error)".
std::string errorText(ncclResult_t result);

} // namespace fbt::nccl

#endif // FBT_RUNTIME_HAL_NCCL_NCCLAPI_H
