//===- tune_cache_fuzzer.cpp - libFuzzer target for tune caches -----------===//
//
// Any file image must read as a tune cache or give one fbt::RuntimeError
// with a message; anything else is a bug. What reads must survive the
// writer: stored back under the file's lock (as fbt tune stores an entry)
// and read again, it holds the same device and entries. A file the writer
// cannot read is replaced, never a crash.
//
//===----------------------------------------------------------------------===//

#include "FuzzFile.h"

#include "runtime/base/Error.h"
#include "runtime/format/TuneCache.h"

using namespace fbt;

namespace {
bool sameEntry(const TuneEntry &a, const TuneEntry &b) {
  if (a.model != b.model || a.target != b.target || a.tunedAt != b.tunedAt ||
      a.kernels.size() != b.kernels.size() || a.gemms.size() != b.gemms.size())
    return false;
  for (const auto &[name, k] : a.kernels) {
    auto it = b.kernels.find(name);
    if (it == b.kernels.end() || it->second.symbol != k.symbol ||
        it->second.config != k.config)
      return false;
  }
  for (size_t i = 0; i < a.gemms.size(); ++i)
    if (a.gemms[i].shape != b.gemms[i].shape || a.gemms[i].algorithm != b.gemms[i].algorithm)
      return false;
  return true;
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path = fuzz::asFile(data, size, ".json");
  TuneCache cache;
  bool read = true;
  try {
    cache = readTuneCache(path);
  } catch (const RuntimeError &e) {
    if (!*e.what())
      std::abort();
    read = false;
  }
  // Storing over it keeps what was there (when it read, and the device is
  // the same) and adds the new entry; stderr's warning is the only trace of
  // a file it could not read.
  Json device = read ? cache.device : Json::object({{"kind", "cpu"}});
  TuneEntry fresh;
  fresh.model = "m";
  fresh.target = "cpu";
  fresh.tunedAt = "t";
  fresh.kernels["k0_a"] = {"k0_a__v1", {{"grain", 8}}, 1.5};
  storeTuneEntry(path, device, "fuzz-entry", fresh); // throws: a bug too
  TuneCache again = readTuneCache(path);
  if (again.device != device || !sameEntry(again.entries.at("fuzz-entry"), fresh))
    std::abort();
  if (read)
    for (const auto &[key, e] : cache.entries)
      if (key != "fuzz-entry" &&
          (!again.entries.count(key) || !sameEntry(e, again.entries.at(key))))
        std::abort();
  return 0;
}
