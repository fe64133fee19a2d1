//===- KernelConfig.h - the tunable knobs of a generated kernel -*- C++ -*-===//
//
// A kernel's generator fixes a few numbers by reasoning: threads per row
// block, elements per GPU thread, attention's query and key tiles, the chunk
// of a CPU parallel loop. Each is a knob: the generator asks the builder for
// it (KernelBuilder::knob) with its own choice as the fallback, and a
// KernelConfig may override it. The builder records which knobs a kernel
// asked for, so fbtc's tuning space (--tune-space) only varies those, and
// the chosen values are written on the kernel (`fbt.config`) for the targets'
// lowerings and for the bundle's variant table.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_CODEGEN_KERNELS_KERNELCONFIG_H
#define FBT_CODEGEN_KERNELS_KERNELCONFIG_H

#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlir::fbt {

enum class Knob {
  RowThreads,  ///< GPU: threads per row block of norms and the loss
  BlockThreads,///< GPU: threads per block of one-thread-per-element grids
  PerThread,   ///< GPU: consecutive elements per thread of those grids
  QueryBlock,  ///< attention: queries per block (GPU warps, CPU backward)
  KeyTile,     ///< GPU attention: rows per shared-memory tile
  Grain,       ///< CPU: iterations per OpenMP chunk (0: one even split)
  HeadGroup,   ///< CPU attention: heads that walk the keys together
  Parallel,    ///< CPU: 1 runs the grids on the OpenMP threads, 0 on the
               ///< calling thread alone (a fork costs more than it saves)
  Prefetch,    ///< CPU products: bytes ahead of its reads a weight row is
               ///< prefetched (0: none, the hardware's prefetchers alone)
  PrefetchKeys,///< CPU attention: keys ahead of its reads whose cache rows
               ///< are prefetched (0: none)
};

/// Knob values; a knob absent here takes the generator's own choice.
using KernelConfig = std::map<Knob, int64_t>;

/// Whether a kernel built with `config` runs its grids on the calling
/// thread alone (Knob::Parallel = 0): then it has no chunks (no Grain).
bool runsSerially(const KernelConfig &config);

/// Its name in `fbt.config`, the bundle's variant table and the tune cache.
llvm::StringRef knobName(Knob k);
std::optional<Knob> knobNamed(llvm::StringRef name);

/// The kernel attribute holding the knobs' values it was built with.
constexpr llvm::StringLiteral kConfigAttr = "fbt.config";
/// On a variant: the kernel (the default variant) whose calls it may serve.
constexpr llvm::StringLiteral kVariantOfAttr = "fbt.variant_of";

DictionaryAttr toAttr(MLIRContext *ctx, const KernelConfig &config);
KernelConfig configFromAttr(DictionaryAttr attr);
/// "row_threads=512,per_thread=4" (empty for the default).
std::string describe(const KernelConfig &config);

/// fbt-to-kernels' `configs` entries: "k3_rmsnorm:row_threads=512:grain=8".
std::string configOption(llvm::StringRef kernel, const KernelConfig &config);
/// The kernel and its configuration, or an error naming what is wrong.
bool parseConfigOption(llvm::StringRef entry, std::string &kernel,
                       KernelConfig &config, std::string &error);

/// What the kernels' grids map to: CPU loops, or GPU blocks and threads.
enum class KernelTarget { Cpu, Gpu };

enum class TuneSpace { None, Default, Wide };

/// The vectors a CPU target's products are written in: AVX2's 256 bits (8
/// f32 lanes, 32 bytes per int8 dot, pmaddubsw); AVX-512's 512 (16 f32
/// lanes, 64 bytes per int8 dot, AVX-512BW's pmaddubsw); and with AVX-512
/// VNNI the int8 dot's 64 bytes summed into i32 in one (vpdpbusd).
enum class CpuVectors { Avx2, Avx512, Avx512Vnni };

/// Whether a CPU bundle's int8 inference weights lie interleaved 16 rows
/// at a time (runtime/format/WeightNames.h's interleaved16 layout) rather
/// than row by row: where its products multiply int8 activations (on x86,
/// AVX2 at least), whose 4 bytes of x broadcast then meet 4 columns of 16
/// rows at once, each row's sum in its own lane (a row's dot spends a
/// convert, a shuffle and a multiply-add per 32 or 64 bytes summing lanes
/// across). The kernels read, the bundle's target records, and the runtime
/// binds by this one rule.
bool interleavesInt8(bool int8Activations);

/// The configurations worth trying for a kernel whose default build asked
/// for `used` (the values it chose), the default first and every other
/// different from it. `None` gives only the default.
std::vector<KernelConfig> tuneSpace(TuneSpace space, const KernelConfig &used);

/// A CPU kernel whose largest buffer has fewer elements runs its parallel
/// loops serially (CpuTargetOptions::parallelMinElements' default): its
/// grain is no knob.
constexpr int64_t kCpuParallelMinElements = 1 << 15;

/// Static shared memory a GPU block may declare without opting in.
constexpr int64_t kGpuStaticSharedBytes = 48 * 1024;

/// The GPU's elementwise grids by default (Knob::BlockThreads,
/// Knob::PerThread): 256 threads per block, and 4 consecutive elements per
/// thread where a grid is large enough, so that the NVPTX backend can merge
/// their loads and stores into 16-byte accesses (codegen/nvptx/GpuKernels.cpp).
constexpr int64_t kGpuBlockThreads = 256;
constexpr int64_t kGpuPerThread = 4;

} // namespace mlir::fbt

#endif // FBT_CODEGEN_KERNELS_KERNELCONFIG_H
