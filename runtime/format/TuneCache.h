//===- TuneCache.h - what `fbt tune` chose, per device and bundle -*- C++ -*-===//
//
// One JSON file per device (docs/tuning.md):
//
//   {"format": "fbt-tune-cache", "version": 1,
//    "device": {"kind": "cpu", "name": "...", "isa": "avx2", "threads": 2},
//    "entries": {"<bundle key>": {"model": "<hash>", "target": "cpu:x86-64-v3",
//                                 "tuned_at": "...", "kernels": {...},
//                                 "gemms": [...]}}}
//
// The default file is $XDG_CACHE_HOME/fbt/tune/<device>.json (else
// ~/.cache/fbt/tune/). An entry is keyed by a hash of the bundle's kernels
// (their binaries, variant table and target), so a recompiled bundle never
// picks up choices made for another. Writers lock the file (flock on a
// sibling ".lock") and replace it atomically, so concurrent tuners keep each
// other's entries and readers never see half a file. Applying an entry to a
// bundle is Tuner.h's.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_FORMAT_TUNECACHE_H
#define FBT_RUNTIME_FORMAT_TUNECACHE_H

#include "runtime/base/Json.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace fbt {

/// What `fbt tune` chose for one kernel.
struct TunedKernel {
  std::string symbol;
  std::map<std::string, int64_t> config;
  double speedup = 1; ///< the default's time over the chosen one's
};

/// What it chose for one GEMM shape (GPU: an index into cuBLASLt's
/// heuristic list, 0 being the heuristic's own first choice).
struct TunedGemm {
  std::string shape; ///< "m,n,k,ta,tb,lhs,rhs,result", as CudaGemm keys it
  int64_t algorithm = 0;
  double speedup = 1;
};

struct TuneEntry {
  std::string model;  ///< modelHash(): the spec it was compiled from
  std::string target; ///< targetName(): "cpu:x86-64-v3", "nvptx:sm_90:bf16"
  std::string tunedAt;
  std::map<std::string, TunedKernel> kernels;
  std::vector<TunedGemm> gemms;
};

struct TuneCache {
  Json device; ///< the device key, as deviceKey() gives it
  std::map<std::string, TuneEntry> entries; ///< by bundleKey()
};

/// The "fbt: warning: ..." line on stderr.
void tuneWarning(const std::string &message);

/// The cache file of `deviceKey` (Device::tuneKey(): kind, name and what
/// makes timings differ) under `dir` (defaultTuneDir() if empty).
std::string tuneCachePath(const Json &deviceKey, const std::string &dir = {});
std::string defaultTuneDir();

/// Hashes (16 hex digits) that key an entry (bundleKey: Tuner.h).
std::string modelHash(const Json &model);
std::string targetName(const Json &target);

Json toJson(const TuneCache &cache);
/// Throws a RuntimeError naming the file and what is wrong.
TuneCache tuneCacheFromJson(const Json &json, const std::string &path);
TuneCache readTuneCache(const std::string &path);

/// Adds (or replaces) `entry` under `key` in the cache file `path` of
/// `deviceKey`, under the file's lock; a corrupt or foreign file there is
/// replaced (with a warning on stderr).
void storeTuneEntry(const std::string &path, const Json &deviceKey,
                    const std::string &key, const TuneEntry &entry);

} // namespace fbt

#endif // FBT_RUNTIME_FORMAT_TUNECACHE_H
