// A CPU bundle's recorded features against this CPU's flags: what is
// missing is named in cpuinfo's spelling, and a bundle needing more than
// the CPU has is refused when opened, naming it.

#include "runtime/base/Error.h"
#include "runtime/format/BundleFormat.h"
#include "runtime/hal/cpu/CpuFeatures.h"

#include <gtest/gtest.h>

namespace fbt {
namespace {

const char *kZen3Flags = "fpu sse sse2 ssse3 sse4_1 sse4_2 avx f16c fma bmi1 avx2 bmi2";

TEST(CpuFeaturesTest, NothingMissingWhereTheCpuHasEveryFeature) {
  EXPECT_TRUE(missingCpuFeatures("+avx,+avx2,+fma,+f16c,+bmi2", kZen3Flags).empty());
  EXPECT_TRUE(missingCpuFeatures("", kZen3Flags).empty());
  // No flags listed (no /proc/cpuinfo): nothing is known to be missing.
  EXPECT_TRUE(missingCpuFeatures("+avx512bw", "").empty());
  EXPECT_TRUE(missingCpuFeatures("+avx512bw", " ").empty());
}

TEST(CpuFeaturesTest, NamesWhatIsMissingAsCpuinfoSpellsIt) {
  std::vector<std::string> missing =
      missingCpuFeatures("+avx2,+avx512bw,+avx512vnni,+avxvnni", kZen3Flags);
  EXPECT_EQ(missing, (std::vector<std::string>{"avx512bw", "avx512_vnni", "avx_vnni"}));
  // A flag that merely starts like the feature is not it.
  EXPECT_EQ(missingCpuFeatures("+avx512f", "avx512fp16"), std::vector<std::string>{"avx512f"});
  EXPECT_TRUE(missingCpuFeatures("+avx512vnni", "avx2 avx512_vnni").empty());
}

TEST(CpuFeaturesTest, ABundleNeedingAFeatureNoCpuHasIsRefusedByName) {
  BundleTarget target;
  target.kind = TargetKind::Cpu;
  target.chip = "imaginary";
  target.features = "+avx2,+nosuchfeature";
  try {
    checkCpuFeatures(target);
    FAIL() << "expected a refusal";
  } catch (const RuntimeError &e) {
    std::string what = e.what();
    EXPECT_NE(what.find("'imaginary'"), std::string::npos) << what;
    EXPECT_NE(what.find("nosuchfeature"), std::string::npos) << what;
    EXPECT_NE(what.find("--cpu=native"), std::string::npos) << what;
  }
  target.features = "";
  EXPECT_NO_THROW(checkCpuFeatures(target)); // bundles from before features were recorded
}

} // namespace
} // namespace fbt
