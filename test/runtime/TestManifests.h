//===- TestManifests.h - Small manifests built by the tests -------*- C++ -*-===//
//
// Manifests built in the test, for the loader and backend tests to write
// with writeBundleFile (runtime/format/BundleFormat.h) and load: no compiler needed.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_TEST_RUNTIME_TESTMANIFESTS_H
#define FBT_TEST_RUNTIME_TESTMANIFESTS_H

#include "runtime/base/Json.h"
#include "runtime/format/Bundle.h"

#include <string>
#include <utility>
#include <vector>

namespace fbt::test {

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

#endif // FBT_TEST_RUNTIME_TESTMANIFESTS_H
