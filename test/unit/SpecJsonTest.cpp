//===- SpecJsonTest.cpp - the resolved spec is itself a spec ---------------===//
//
// A bundle records the resolved spec (specToJson); parsing it again must
// give the same resolved spec, or a bundle's model could not be compiled or
// described again (fbt.Bundle.describe does): every preset, the paper's
// recipe, and the fixed K schedule in place of a distribution.
//
//===----------------------------------------------------------------------===//

#include "frontend/LoadSpec.h"
#include "frontend/Spec.h"
#include "frontend/SpecJson.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include "gtest/gtest.h"

#ifndef FBT_SOURCE_DIR
#error "FBT_SOURCE_DIR (the source root) is set by test/unit/CMakeLists.txt"
#endif

using namespace fbt;
namespace json = llvm::json;

namespace {

std::string text(const json::Value &v) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << v;
  return s;
}

json::Object preset(const std::string &name) {
  auto buffer = llvm::MemoryBuffer::getFile(std::string(FBT_SOURCE_DIR) + "/specs/" + name +
                                            ".json");
  EXPECT_TRUE(bool(buffer)) << name;
  llvm::Expected<json::Value> v = json::parse((*buffer)->getBuffer());
  EXPECT_TRUE(bool(v)) << name;
  return std::move(*v->getAsObject());
}

/// The resolved spec of `spec`, and that of the resolved spec parsed again.
std::pair<std::string, std::string> twice(const json::Object &spec, const std::string &name) {
  llvm::Expected<ModelSpec> once = parseSpec(text(json::Object(spec)), name);
  EXPECT_TRUE(bool(once)) << name << ": " << llvm::toString(once.takeError());
  if (!once)
    return {"", ""};
  std::string first = text(specToJson(*once));
  llvm::Expected<ModelSpec> again = parseSpec(first, name + " (resolved)");
  EXPECT_TRUE(bool(again)) << name << ": " << llvm::toString(again.takeError()) << "\n"
                           << first;
  return {first, again ? text(specToJson(*again)) : ""};
}

} // namespace

TEST(SpecJsonTest, EveryPresetResolvesToAFixedPoint) {
  for (const char *name : {"tiny", "mini", "small", "124m", "1b"}) {
    auto [first, second] = twice(preset(name), name);
    EXPECT_EQ(first, second) << name;
  }
}

TEST(SpecJsonTest, RecipesAndFixedSchedulesResolveToAFixedPoint) {
  json::Object paper = preset("tiny");
  paper["recipe"] = "paper";
  paper.getObject("training")->erase("pass_distribution");
  auto [p1, p2] = twice(paper, "tiny (paper)");
  EXPECT_EQ(p1, p2);

  json::Object fixed = preset("tiny");
  json::Object &t = *fixed.getObject("training");
  t.erase("pass_distribution");
  t["passes"] = 2;
  t["deep_passes"] = 4;
  t["deep_pass_fraction"] = 0.1;
  auto [f1, f2] = twice(fixed, "tiny (fixed K)");
  EXPECT_EQ(f1, f2);
  EXPECT_NE(f1.find("\"deep_passes\":4"), std::string::npos) << f1;
  EXPECT_EQ(f1.find("pass_distribution"), std::string::npos) << f1;
}
