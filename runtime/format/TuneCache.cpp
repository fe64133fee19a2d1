//===- TuneCache.cpp - what `fbt tune` chose, per device and bundle -------===//

#include "runtime/format/TuneCache.h"

#include "runtime/base/Error.h"
#include "runtime/base/FileIO.h"
#include "runtime/base/Hash.h"
#include "runtime/format/BundleFormat.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fbt {

void tuneWarning(const std::string &message) {
  std::fprintf(stderr, "fbt: warning: %s\n", message.c_str());
}

namespace {
constexpr int kVersion = 1;

std::string slug(const std::string &s) {
  std::string out;
  for (char c : s) {
    if (std::isalnum((unsigned char)c))
      out += (char)std::tolower((unsigned char)c);
    else if (!out.empty() && out.back() != '-')
      out += '-';
    if (out.size() >= 40)
      break;
  }
  while (!out.empty() && out.back() == '-')
    out.pop_back();
  return out;
}

Json toJson(const std::map<std::string, int64_t> &config) {
  Json j = Json::object();
  for (const auto &[k, v] : config)
    j[k] = v;
  return j;
}

/// An exclusive lock on `path`.lock for the scope.
class FileLock {
public:
  explicit FileLock(const std::string &path) {
    fd_ = ::open((path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd_ < 0 || ::flock(fd_, LOCK_EX) != 0)
      throw RuntimeError("cannot lock the tune cache " + path + ".lock");
  }
  ~FileLock() {
    if (fd_ >= 0)
      ::close(fd_); // releases the lock
  }

private:
  int fd_ = -1;
};

void makeDirectories(const std::string &dir) {
  for (size_t at = 1; at <= dir.size(); ++at)
    if (at == dir.size() || dir[at] == '/')
      ::mkdir(dir.substr(0, at).c_str(), 0755); // existing ones fail, harmlessly
}
} // namespace

std::string defaultTuneDir() {
  const char *xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && *xdg)
    return std::string(xdg) + "/fbt/tune";
  const char *home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.cache/fbt/tune";
}

std::string tuneCachePath(const Json &deviceKey, const std::string &dir) {
  std::string name = asString(jsonAt(deviceKey, "kind"));
  if (const Json *n = jsonFind(deviceKey, "name"))
    if (n->is_string())
      name += "-" + slug(n->get<std::string>());
  std::string key = dumpJson(deviceKey);
  return (dir.empty() ? defaultTuneDir() : dir) + "/" + name + "-" +
         hexDigits(fnv1a64(key.data(), key.size())).substr(0, 8) + ".json";
}

std::string modelHash(const Json &model) {
  std::string text = dumpJson(model);
  return hexDigits(fnv1a64(text.data(), text.size()));
}

std::string targetName(const Json &target) {
  std::string kind = asString(jsonAt(target, "kind"));
  const Json *chip = jsonFind(target, "chip"); // nvptx; a CPU's is "cpu"
  if (!chip)
    chip = jsonFind(target, "cpu");
  std::string name = chip && chip->is_string() && !chip->get<std::string>().empty()
                         ? kind + ":" + chip->get<std::string>()
                         : kind;
  // GPU bundles differ in their kernels with the activations' storage.
  if (const Json *storage = jsonFind(target, "storage"))
    if (storage->is_string() && !storage->get<std::string>().empty())
      name += ":" + storage->get<std::string>();
  return name;
}

Json toJson(const TuneCache &cache) {
  Json entries = Json::object();
  for (const auto &[key, e] : cache.entries) {
    Json kernels = Json::object(), gemms = Json::array();
    for (const auto &[name, k] : e.kernels)
      kernels[name] = Json::object({{"symbol", k.symbol},
                                    {"config", toJson(k.config)},
                                    {"speedup", k.speedup}});
    for (const TunedGemm &g : e.gemms)
      gemms.push_back(Json::object({{"shape", g.shape},
                                    {"algorithm", g.algorithm},
                                    {"speedup", g.speedup}}));
    entries[key] = Json::object({{"model", e.model},
                                 {"target", e.target},
                                 {"tuned_at", e.tunedAt},
                                 {"kernels", std::move(kernels)},
                                 {"gemms", std::move(gemms)}});
  }
  return Json::object({{"format", "fbt-tune-cache"},
                       {"version", kVersion},
                       {"device", cache.device},
                       {"entries", std::move(entries)}});
}

TuneCache tuneCacheFromJson(const Json &j, const std::string &path) {
  try {
    if (asString(jsonAt(j, "format")) != "fbt-tune-cache")
      throw RuntimeError("its format is not 'fbt-tune-cache'");
    if (asInt(jsonAt(j, "version")) != kVersion)
      throw RuntimeError("version " + std::to_string(asInt(jsonAt(j, "version"))) +
                         ", this fbt reads version " + std::to_string(kVersion));
    TuneCache cache;
    cache.device = jsonAt(j, "device");
    asObject(cache.device);
    for (const auto &[key, e] : asObject(jsonAt(j, "entries"))) {
      TuneEntry entry;
      entry.model = asString(jsonAt(e, "model"));
      entry.target = asString(jsonAt(e, "target"));
      entry.tunedAt = asString(jsonAt(e, "tuned_at"));
      for (const auto &[name, k] : asObject(jsonAt(e, "kernels"))) {
        TunedKernel t;
        t.symbol = asString(jsonAt(k, "symbol"));
        for (const auto &[knob, v] : asObject(jsonAt(k, "config")))
          t.config[knob] = asInt(v);
        t.speedup = asDouble(jsonAt(k, "speedup"));
        entry.kernels[name] = std::move(t);
      }
      for (const Json &g : asArray(jsonAt(e, "gemms")))
        entry.gemms.push_back({asString(jsonAt(g, "shape")), asInt(jsonAt(g, "algorithm")),
                               asDouble(jsonAt(g, "speedup"))});
      cache.entries[key] = std::move(entry);
    }
    return cache;
  } catch (const RuntimeError &e) {
    throw RuntimeError("tune cache " + path + ": " + e.what());
  }
}

TuneCache readTuneCache(const std::string &path) {
  return tuneCacheFromJson(loadJsonFile(path), path);
}

void storeTuneEntry(const std::string &path, const Json &deviceKey,
                    const std::string &key, const TuneEntry &entry) {
  size_t slash = path.rfind('/');
  if (slash != std::string::npos && slash > 0)
    makeDirectories(path.substr(0, slash));
  FileLock lock(path);
  TuneCache cache;
  cache.device = deviceKey;
  if (::access(path.c_str(), F_OK) == 0) {
    try {
      TuneCache old = readTuneCache(path);
      if (old.device == deviceKey)
        cache = std::move(old);
      else
        tuneWarning("tune cache " + path + " was for another device; replacing it");
    } catch (const RuntimeError &e) {
      tuneWarning(std::string(e.what()) + "; replacing it");
    }
  }
  cache.entries[key] = entry;
  std::string text = dumpJson(toJson(cache), 2) + "\n";
  writeFileAtomic(path, {text});
}

} // namespace fbt
