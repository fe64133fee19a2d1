//===- CpuFeatures.cpp - whether this CPU runs a bundle's kernels ---------===//

#include "runtime/hal/cpu/CpuFeatures.h"

#include "runtime/base/Error.h"
#include "runtime/format/BundleFormat.h"

#include <fstream>
#include <map>
#include <sstream>

namespace fbt {

namespace {
/// cpuinfo's name of an LLVM feature, where the two differ.
std::string cpuinfoName(const std::string &llvm) {
  static const std::map<std::string, std::string> renamed = {
      {"avx512vnni", "avx512_vnni"}, {"avxvnni", "avx_vnni"}, {"avx512bf16", "avx512_bf16"},
      {"avx512fp16", "avx512_fp16"}, {"bmi", "bmi1"},         {"sse4.2", "sse4_2"}};
  auto it = renamed.find(llvm);
  return it == renamed.end() ? llvm : it->second;
}
} // namespace

std::vector<std::string> missingCpuFeatures(const std::string &features,
                                            const std::string &flags) {
  std::vector<std::string> missing;
  if (flags.find_first_not_of(" \t") == std::string::npos)
    return missing; // flags unknown (no /proc/cpuinfo): nothing is known to be missing
  std::string padded = " " + flags + " ";
  std::stringstream list(features);
  std::string item;
  while (std::getline(list, item, ',')) {
    if (item.size() < 2 || item[0] != '+')
      continue; // "-x" turns a feature off: nothing to have
    std::string name = cpuinfoName(item.substr(1));
    if (padded.find(" " + name + " ") == std::string::npos)
      missing.push_back(name);
  }
  return missing;
}

std::string hostCpuFlags() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("flags", 0) == 0) {
      size_t colon = line.find(':');
      return colon == std::string::npos ? "" : line.substr(colon + 1);
    }
  return "";
}

void checkCpuFeatures(const BundleTarget &target) {
  if (target.kind != TargetKind::Cpu || target.features.empty())
    return;
  std::vector<std::string> missing = missingCpuFeatures(target.features, hostCpuFlags());
  if (missing.empty())
    return;
  std::string names;
  for (const std::string &m : missing)
    names += (names.empty() ? "" : ", ") + m;
  throw RuntimeError("the bundle's kernels were compiled for the CPU '" + target.chip +
                     "', whose " + names + " this CPU lacks: compile it again for this CPU "
                     "(fbtc --cpu=native) or for any x86-64 with AVX2 (the default, "
                     "--cpu=x86-64-v3)");
}

} // namespace fbt
