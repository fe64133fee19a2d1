//===- Nccl.cpp - the emulated NCCL: GPU all-reduces over MPI -------------===//
//
// For tests only: libnccl.so.2 in <build>/test/emucuda/lib, which the NCCL
// engine (runtime/hal/nccl) loads where it would load NVIDIA's, so that its
// code runs in CI, each rank of a data-parallel run a process with an
// emulated GPU of its own (EmuDevice.h). Only the entry points the engine
// resolves are here, and of them only what it uses: float all-reduces and
// reductions onto one rank, summed, averaged or pre-multiplied by a host
// scalar, and broadcasts.
//
// A collective is stream work, like everything on an emulated stream: it
// runs when it is queued (or is recorded by a capture), the device pointers
// translated to their host bytes and checked as the driver checks its own,
// and the ranks reduce through MPI on a duplicate of MPI_COMM_WORLD made by
// ncclCommInitRank. MPI is the process's own: the MPI channel the engine
// bootstraps over initializes it and finalizes it; this library does
// neither. Inside ncclGroupStart/End the calls are held and queued at the
// end, in order, as NCCL launches a group. Averages and pre-multiplied sums
// scale each rank's values before the sum, as NCCL computes them for
// floats, so the results are NCCL's to the last bit for two ranks.
// Reductions and broadcasts go through MPI_Reduce and MPI_Bcast.
//
// Each refusal is a line on stderr, "emulated NCCL: <call>: <why>", and the
// ncclResult_t NCCL would return. Two faults can be injected, each into
// one rank's n-th collective (from 0), for the engine's error paths:
//   FBT_EMU_NCCL_ASYNC_ERROR=<rank>:<n>  it ends with an asynchronous
//       ncclRemoteError, as when NCCL loses a peer (its values are reduced
//       all the same, so that the other ranks are not left waiting);
//   FBT_EMU_NCCL_HANG=<rank>:<n>  it never completes, as when a peer
//       stops responding: its stream hangs (EmuDevice.h), and the other
//       ranks wait for it in MPI until the run is aborted.
//
//===----------------------------------------------------------------------===//

#include "EmuDevice.h"

#include <nccl.h>

// The C API only, as the MPI engine uses it.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

using namespace fbt::emucuda;

struct ncclComm {
  MPI_Comm mpi = MPI_COMM_NULL;
  int rank = 0, size = 1;
  ncclResult_t asyncError = ncclSuccess;
  int64_t collectives = 0; ///< called so far
  int64_t failAt = -1;    ///< FBT_EMU_NCCL_ASYNC_ERROR's n for this rank
  int64_t hangAt = -1;    ///< FBT_EMU_NCCL_HANG's
  std::map<int, float> premulSums; ///< by ncclRedOp_t
  int nextOp = ncclNumOps;
};

namespace {

/// Prints "emulated NCCL: <call>: <why>" and returns `result`.
ncclResult_t refuse(const char *call, const std::string &why, ncclResult_t result) {
  std::fprintf(stderr, "emulated NCCL: %s: %s\n", call, why.c_str());
  return result;
}

const char kIdMagic[] = "fbt emulated NCCL unique id";

/// One collective, as queued: its scale is resolved when it is called, so
/// that its op may be destroyed before the work runs.
struct Collective {
  enum class Kind { AllReduce, Reduce, Broadcast } kind = Kind::AllReduce;
  const char *call = "ncclAllReduce";
  int root = 0; ///< Reduce, Broadcast
  ncclComm_t comm = nullptr;
  CUdeviceptr send = 0, recv = 0;
  size_t count = 0;
  float scale = 1; ///< each rank's values are multiplied by it before the sum
  bool failAfter = false, hangs = false;
  CUstream stream = nullptr;
};

int groupDepth = 0;
std::vector<Collective> grouped;

std::string mpiError(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, size_t(length));
}

/// The stream work of `a`: the host bytes, scaled, then summed over the
/// ranks (onto one, for a reduction), or the root's sent to every rank.
CUresult run(const Collective &a) {
  const char *call = a.call;
  size_t bytes = a.count * sizeof(float);
  std::string why;
  CUresult r;
  char *send = lookup(a.send, bytes, &why, &r);
  char *recv = send ? lookup(a.recv, bytes, &why, &r) : nullptr;
  if (!recv) {
    refuse(call, why, ncclUnhandledCudaError);
    return r;
  }
  bool root = a.comm->rank == a.root;
  // A reduction's values, scaled, where the sum starts: the result buffer on
  // the root and every rank of an all-reduce, a copy elsewhere (NCCL leaves
  // a non-root's result alone).
  std::vector<float> scratch;
  float *values = reinterpret_cast<float *>(recv);
  if (a.kind == Collective::Kind::Reduce && !root) {
    scratch.assign(reinterpret_cast<const float *>(send),
                   reinterpret_cast<const float *>(send) + a.count);
    values = scratch.data();
  } else if (send != recv && (a.kind != Collective::Kind::Broadcast || root)) {
    std::memmove(recv, send, bytes);
  }
  if (a.scale != 1.0f && a.kind != Collective::Kind::Broadcast)
    for (size_t i = 0; i < a.count; ++i)
      values[i] *= a.scale;
  for (size_t offset = 0; offset < a.count; offset += INT_MAX) {
    int n = int(std::min<size_t>(INT_MAX, a.count - offset));
    float *at = values + offset;
    int code = MPI_SUCCESS;
    const char *mpiCall = "MPI_Allreduce";
    // In place on every rank: MPI wants MPI_IN_PLACE everywhere or nowhere
    // (a reduction: on the root only).
    if (a.kind == Collective::Kind::AllReduce) {
      code = MPI_Allreduce(MPI_IN_PLACE, at, n, MPI_FLOAT, MPI_SUM, a.comm->mpi);
    } else if (a.kind == Collective::Kind::Reduce) {
      mpiCall = "MPI_Reduce";
      code = MPI_Reduce(root ? MPI_IN_PLACE : at, root ? at : nullptr, n, MPI_FLOAT, MPI_SUM,
                        a.root, a.comm->mpi);
    } else {
      mpiCall = "MPI_Bcast";
      code = MPI_Bcast(at, n, MPI_FLOAT, a.root, a.comm->mpi);
    }
    if (code != MPI_SUCCESS) {
      // A lost peer: NCCL reports it asynchronously, not at the call.
      refuse(call, std::string(mpiCall) + " failed: " + mpiError(code), ncclSystemError);
      a.comm->asyncError = ncclSystemError;
      return CUDA_SUCCESS;
    }
  }
  if (a.failAfter) {
    refuse(call, "FBT_EMU_NCCL_ASYNC_ERROR: an asynchronous ncclRemoteError after this one",
           ncclRemoteError);
    a.comm->asyncError = ncclRemoteError;
  }
  return CUDA_SUCCESS;
}

ncclResult_t queue(const Collective &a) {
  if (a.hangs) {
    refuse(a.call, "FBT_EMU_NCCL_HANG: this collective never completes", ncclSuccess);
    hang(a.stream);
    return ncclSuccess;
  }
  CUresult r = enqueue(a.stream, a.call, [a] { return run(a); });
  return r == CUDA_SUCCESS ? ncclSuccess : ncclUnhandledCudaError;
}

/// The n of fault `variable` ("<rank>:<n>") for `rank`, or -1.
int64_t faultAt(const char *variable, int rank) {
  const char *v = std::getenv(variable);
  int which = -1;
  long long n = -1;
  if (!v || std::sscanf(v, "%d:%lld", &which, &n) != 2 || which != rank)
    return -1;
  return n;
}

} // namespace

namespace {
/// Checks and queues (or holds, inside a group) collective `a`, whose
/// reduction `op` is resolved to its scale here.
ncclResult_t call(Collective a, ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm) {
  const char *call = a.call;
  if (!comm)
    return refuse(call, "a null communicator", ncclInvalidArgument);
  if (datatype != ncclFloat32)
    return refuse(call,
                  "type " + std::to_string(int(datatype)) + " is not emulated (only ncclFloat32)",
                  ncclInvalidArgument);
  if (a.stream && !isStream(a.stream))
    return refuse(call, "not a live stream", ncclInvalidArgument);
  if (a.root < 0 || a.root >= comm->size)
    return refuse(call, "root " + std::to_string(a.root) + " is not a rank", ncclInvalidArgument);
  a.comm = comm;
  if (op == ncclAvg)
    a.scale = 1.0f / float(comm->size);
  else if (op != ncclSum) {
    auto it = comm->premulSums.find(int(op));
    if (it == comm->premulSums.end())
      return refuse(call, "op " + std::to_string(int(op)) + " is not emulated (ncclSum, "
                          "ncclAvg and pre-multiplied sums of this communicator are)",
                    ncclInvalidArgument);
    a.scale = it->second;
  }
  std::string why;
  CUresult r;
  size_t bytes = a.count * sizeof(float);
  if (a.count > 0 && (!lookup(a.send, bytes, &why, &r) || !lookup(a.recv, bytes, &why, &r)))
    return refuse(call, why, ncclInvalidArgument);
  a.failAfter = comm->collectives == comm->failAt;
  a.hangs = comm->collectives++ == comm->hangAt;
  if (a.count == 0)
    return ncclSuccess;
  if (groupDepth > 0) {
    grouped.push_back(a);
    return ncclSuccess;
  }
  return queue(a);
}

Collective collective(Collective::Kind kind, const char *name, const void *sendbuff,
                     void *recvbuff, size_t count, int root, cudaStream_t stream) {
  Collective a;
  a.kind = kind;
  a.call = name;
  a.root = root;
  a.send = reinterpret_cast<CUdeviceptr>(sendbuff);
  a.recv = reinterpret_cast<CUdeviceptr>(recvbuff);
  a.count = count;
  a.stream = stream;
  return a;
}
} // namespace

extern "C" {

ncclResult_t ncclGetVersion(int *version) {
  if (!version)
    return refuse("ncclGetVersion", "a null result pointer", ncclInvalidArgument);
  *version = NCCL_VERSION_CODE; // the header's: the NCCL it stands in for
  return ncclSuccess;
}

const char *ncclGetErrorString(ncclResult_t result) {
  switch (result) {
  case ncclSuccess:
    return "no error";
  case ncclUnhandledCudaError:
    return "unhandled CUDA error (emulated)";
  case ncclSystemError:
    return "unhandled system error (emulated)";
  case ncclInternalError:
    return "internal error (emulated)";
  case ncclInvalidArgument:
    return "invalid argument (emulated)";
  case ncclInvalidUsage:
    return "invalid usage (emulated)";
  case ncclRemoteError:
    return "remote process exited or there was a network error (emulated)";
  case ncclInProgress:
    return "NCCL operation in progress (emulated)";
  default:
    return "unknown result code (emulated)";
  }
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id) {
  if (!id)
    return refuse("ncclGetUniqueId", "a null result pointer", ncclInvalidArgument);
  static int made = 0;
  std::memset(id->internal, 0, sizeof id->internal);
  std::snprintf(id->internal, sizeof id->internal, "%s: pid %d #%d", kIdMagic, int(getpid()),
                made++);
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
  const char *call = "ncclCommInitRank";
  if (!comm)
    return refuse(call, "a null result pointer", ncclInvalidArgument);
  if (nranks < 1 || rank < 0 || rank >= nranks)
    return refuse(call, "rank " + std::to_string(rank) + " of " + std::to_string(nranks),
                  ncclInvalidArgument);
  if (std::strncmp(id.internal, kIdMagic, sizeof kIdMagic - 1) != 0)
    return refuse(call, "the unique id is not one ncclGetUniqueId made", ncclInvalidArgument);
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized)
    return refuse(call,
                  "MPI is not initialized: the emulated NCCL reduces through the MPI of its "
                  "process, which the engine's bootstrap initializes",
                  ncclInvalidUsage);
  auto c = std::make_unique<ncclComm>();
  if (MPI_Comm_dup(MPI_COMM_WORLD, &c->mpi) != MPI_SUCCESS)
    return refuse(call, "MPI_Comm_dup failed", ncclSystemError);
  MPI_Comm_set_errhandler(c->mpi, MPI_ERRORS_RETURN);
  MPI_Comm_rank(c->mpi, &c->rank);
  MPI_Comm_size(c->mpi, &c->size);
  if (c->rank != rank || c->size != nranks)
    return refuse(call,
                  "told rank " + std::to_string(rank) + " of " + std::to_string(nranks) +
                      ", but MPI_COMM_WORLD has this process as rank " +
                      std::to_string(c->rank) + " of " + std::to_string(c->size),
                  ncclInvalidArgument);
  // Every rank must hold rank 0's id: the engine broadcasts it.
  ncclUniqueId first = id;
  if (MPI_Bcast(first.internal, sizeof first.internal, MPI_BYTE, 0, c->mpi) != MPI_SUCCESS)
    return refuse(call, "MPI_Bcast failed", ncclSystemError);
  if (std::memcmp(first.internal, id.internal, sizeof id.internal) != 0)
    return refuse(call,
                  "rank " + std::to_string(rank) + " was given another unique id than rank " +
                      "0 (" + id.internal + ", not " + first.internal + ")",
                  ncclInvalidUsage);
  c->failAt = faultAt("FBT_EMU_NCCL_ASYNC_ERROR", rank);
  c->hangAt = faultAt("FBT_EMU_NCCL_HANG", rank);
  *comm = c.release();
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (!comm)
    return refuse("ncclCommDestroy", "a null communicator", ncclInvalidArgument);
  MPI_Comm_free(&comm->mpi);
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t comm) {
  if (!comm)
    return refuse("ncclCommAbort", "a null communicator", ncclInvalidArgument);
  // Its MPI communicator is left alone: peers may be inside a collective
  // on it, and the process is about to end.
  delete comm;
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError) {
  if (!comm || !asyncError)
    return refuse("ncclCommGetAsyncError", "a null argument", ncclInvalidArgument);
  *asyncError = comm->asyncError;
  return ncclSuccess;
}

ncclResult_t ncclGroupStart() {
  ++groupDepth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  if (groupDepth == 0)
    return refuse("ncclGroupEnd", "no ncclGroupStart to end", ncclInvalidUsage);
  if (--groupDepth > 0)
    return ncclSuccess;
  std::vector<Collective> held;
  held.swap(grouped);
  ncclResult_t result = ncclSuccess;
  for (const Collective &a : held)
    if (ncclResult_t r = queue(a); r != ncclSuccess && result == ncclSuccess)
      result = r;
  return result;
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                           cudaStream_t stream) {
  return call(collective(Collective::Kind::AllReduce, "ncclAllReduce", sendbuff, recvbuff, count,
                         0, stream),
              datatype, op, comm);
}

ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count,
                        ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
                        cudaStream_t stream) {
  return call(collective(Collective::Kind::Reduce, "ncclReduce", sendbuff, recvbuff, count, root,
                         stream),
              datatype, op, comm);
}

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t datatype, int root, ncclComm_t comm,
                           cudaStream_t stream) {
  return call(collective(Collective::Kind::Broadcast, "ncclBroadcast", sendbuff, recvbuff, count,
                         root, stream),
              datatype, ncclSum, comm);
}

ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,
                                      ncclScalarResidence_t residence, ncclComm_t comm) {
  const char *call = "ncclRedOpCreatePreMulSum";
  if (!op || !scalar || !comm)
    return refuse(call, "a null argument", ncclInvalidArgument);
  if (datatype != ncclFloat32)
    return refuse(call, "only ncclFloat32 scalars are emulated", ncclInvalidArgument);
  if (residence != ncclScalarHostImmediate)
    return refuse(call, "only ncclScalarHostImmediate is emulated", ncclInvalidArgument);
  int id = comm->nextOp++;
  comm->premulSums[id] = *static_cast<const float *>(scalar);
  *op = ncclRedOp_t(id);
  return ncclSuccess;
}

ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  const char *call = "ncclRedOpDestroy";
  if (!comm)
    return refuse(call, "a null communicator", ncclInvalidArgument);
  if (!comm->premulSums.erase(int(op)))
    return refuse(call, "op " + std::to_string(int(op)) +
                            " is no pre-multiplied sum of this communicator",
                  ncclInvalidArgument);
  return ncclSuccess;
}

} // extern "C"
