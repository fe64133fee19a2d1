//===- CpuFeatures.h - whether this CPU runs a bundle's kernels ---*- C++ -*-===//
//
// A CPU bundle records the vector extensions its kernels were compiled with
// (fbtc --cpu; codegen/cpu/CpuTarget.h's cpuTargetFeatures, in LLVM's
// names). Opening it on a CPU without one of them is refused here, naming
// what is missing, instead of the kernels stopping on an illegal
// instruction.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_HAL_CPU_CPUFEATURES_H
#define FBT_RUNTIME_HAL_CPU_CPUFEATURES_H

#include <string>
#include <vector>

namespace fbt {

struct BundleTarget;

/// The features of `features` (LLVM's, "+avx2,+avx512vnni") that `flags`
/// (/proc/cpuinfo's flags, space separated) lacks, in cpuinfo's names
/// ("avx512_vnni"). None where `flags` is empty: a system that does not
/// list its CPU's flags is not refused for it.
std::vector<std::string> missingCpuFeatures(const std::string &features,
                                            const std::string &flags);

/// This CPU's flags, from /proc/cpuinfo (empty where it lists none).
std::string hostCpuFlags();

/// Throws, naming the features and the CPU the bundle was compiled for,
/// when this CPU lacks one of a CPU bundle's features.
void checkCpuFeatures(const BundleTarget &target);

} // namespace fbt

#endif // FBT_RUNTIME_HAL_CPU_CPUFEATURES_H
