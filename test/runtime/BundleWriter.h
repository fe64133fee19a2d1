//===- BundleWriter.h - Small bundles written by the tests ---------*- C++ -*-===//
//
// Writes the .fbtb format (header, manifest, 64-byte aligned blobs; see
// codegen/BundleWriter.h) from a manifest built in the test, so that loader
// and backend tests need no compiler.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_TEST_RUNTIME_BUNDLEWRITER_H
#define FBT_TEST_RUNTIME_BUNDLEWRITER_H

#include "runtime/Bundle.h"
#include "runtime/Json.h"

#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace fbt::test {

inline void writeBundle(const std::string &path, Json manifest,
                        const std::vector<std::pair<std::string, std::string>> &blobs) {
  std::string area;
  Json table = Json::object();
  for (const auto &[name, bytes] : blobs) {
    area.resize((area.size() + 63) / 64 * 64, '\0');
    char sum[17];
    std::snprintf(sum, sizeof(sum), "%016llx",
                  (unsigned long long)fnv1a64(bytes.data(), bytes.size()));
    table[name] = Json::object({{"offset", (int64_t)area.size()},
                                {"size", (int64_t)bytes.size()},
                                {"fnv1a64", std::string(sum)}});
    area += bytes;
  }
  manifest["blobs"] = std::move(table);
  std::string text = dumpJson(manifest);
  auto u64 = [](uint64_t v) {
    std::string s(8, '\0');
    for (int i = 0; i < 8; ++i)
      s[i] = (char)(v >> (8 * i));
    return s;
  };
  std::string file = "FBTBNDL1" + u64(text.size()) +
                     u64(fnv1a64(text.data(), text.size())) + text;
  file.resize((file.size() + 63) / 64 * 64, '\0');
  std::ofstream(path, std::ios::binary) << file << area;
}

/// A launch as the manifest spells it.
inline Json launchJson(const std::string &entry, std::vector<int64_t> grid,
                       std::vector<int64_t> block, int64_t shared = 0) {
  return Json::object({{"entry", entry},
                       {"grid", Json(Json::array_t(grid.begin(), grid.end()))},
                       {"block", Json(Json::array_t(block.begin(), block.end()))},
                       {"shared_bytes", shared}});
}

/// An "nvptx" manifest with `kernels`, each launched once, and no steps.
inline Json gpuManifest(const std::vector<std::string> &kernels,
                        const std::string &chip = "sm_90") {
  Json launches = Json::object();
  Json names = Json::array();
  for (const std::string &k : kernels) {
    names.push_back(k);
    launches[k] = Json::array({launchJson(k, {8, 1, 1}, {256, 1, 1})});
  }
  return Json::object({
      {"format", "fbt-bundle"},
      {"target", Json::object({{"kind", "nvptx"}, {"chip", chip}, {"features", "+ptx80"}})},
      {"model", Json::object({{"name", "test"}})},
      {"params", Json::array()},
      {"kernels", std::move(names)},
      {"launches", std::move(launches)},
      {"steps", Json::object()},
  });
}

} // namespace fbt::test

#endif // FBT_TEST_RUNTIME_BUNDLEWRITER_H
