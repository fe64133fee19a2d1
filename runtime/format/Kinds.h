//===- Kinds.h - the kinds the compiler and the runtime agree on --*- C++ -*-===//
//
// One definition of each kind that crosses the compiler/runtime line, with
// its name in files: a model's fusion, inference weights and KV cache, a step's kind,
// a collective's kind and reduction, a bundle's target. Both sides hold them as these enums and
// meet the strings only where a file or a command line is read or written
// (the spec, the manifest, the IR's fbt.step), through kindName() and
// parseKind(). Adding a value without its name, or a name out of order,
// fails to compile (the static_asserts below).
//
// Header-only, on runtime/base alone, so the compiler can include it.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_FORMAT_KINDS_H
#define FBT_RUNTIME_FORMAT_KINDS_H

#include "runtime/base/DType.h"
#include "runtime/base/Error.h"

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace fbt {

/// How the fed-back state meets the token embedding ("feedback.fusion");
/// None: a plain transformer, no feedback path.
enum class Fusion { Glu, Add, Concat, None };
/// How the inference steps read the weight matrices ("inference.weights",
/// fbtc --inference-weights): as trained (f32), rounded to bf16, or int8
/// with an f16 scale per group of 32 along each row (Q8_0's rule).
enum class WeightForm { F32, BF16, Int8 };
/// How the inference steps store the KV cache ("inference.kv_cache", fbtc
/// --inference-kv-cache): f32, or f16 (half the bytes a decoded token's
/// attention reads; the keys and values rounded to nearest even as they are
/// written, llama.cpp's default cache type).
enum class CacheForm { F32, F16 };
/// How the bytes of an int8 inference weight lie in its step inputs (a CPU
/// bundle's "target.int8_layout", WeightNames.h): row by row, or rows
/// interleaved 16 at a time for products by int8 activations.
enum class Int8Layout { Rows, Interleaved16 };
/// What a compiled step does (a plan's "kind", the IR's fbt.step).
enum class StepKind { Train, Grads, Eval, Prefill, Decode };
/// A collective across the ranks of a data-parallel run (PlanOp).
enum class CollectiveKind { AllReduce, ReduceScatter, AllGather };
/// How a reducing collective combines the ranks' values.
enum class Reduction { Mean, Sum };
/// What a bundle's kernels run on (the manifest's "target.kind").
enum class TargetKind { Cpu, Nvptx, Simt };

namespace detail {
template <class E> struct KindTable;
template <> struct KindTable<Fusion> {
  static constexpr std::array<const char *, 4> names = {"glu", "add", "concat", "none"};
  static_assert(names.size() == size_t(Fusion::None) + 1);
};
template <> struct KindTable<WeightForm> {
  static constexpr std::array<const char *, 3> names = {"f32", "bf16", "int8"};
  static_assert(names.size() == size_t(WeightForm::Int8) + 1);
};
template <> struct KindTable<CacheForm> {
  static constexpr std::array<const char *, 2> names = {"f32", "f16"};
  static_assert(names.size() == size_t(CacheForm::F16) + 1);
};
template <> struct KindTable<Int8Layout> {
  static constexpr std::array<const char *, 2> names = {"rows", "interleaved16"};
  static_assert(names.size() == size_t(Int8Layout::Interleaved16) + 1);
};
template <> struct KindTable<StepKind> {
  static constexpr std::array<const char *, 5> names = {"train", "grads", "eval", "prefill",
                                                         "decode"};
  static_assert(names.size() == size_t(StepKind::Decode) + 1);
};
template <> struct KindTable<CollectiveKind> {
  static constexpr std::array<const char *, 3> names = {"all_reduce", "reduce_scatter",
                                                         "all_gather"};
  static_assert(names.size() == size_t(CollectiveKind::AllGather) + 1);
};
template <> struct KindTable<Reduction> {
  static constexpr std::array<const char *, 2> names = {"mean", "sum"};
  static_assert(names.size() == size_t(Reduction::Sum) + 1);
};
template <> struct KindTable<TargetKind> {
  static constexpr std::array<const char *, 3> names = {"cpu", "nvptx", "simt"};
  static_assert(names.size() == size_t(TargetKind::Simt) + 1);
};
} // namespace detail

/// The element type of a KV cache stored as `form`.
inline DType cacheType(CacheForm form) {
  return form == CacheForm::F16 ? DType::F16 : DType::F32;
}

/// The name of `kind` in files ("glu", "train", "all_reduce", ...).
template <class E> const char *kindName(E kind) {
  return detail::KindTable<E>::names[size_t(kind)];
}

/// The kind called `name`, or nullopt.
template <class E> std::optional<E> parseKind(std::string_view name) {
  const auto &names = detail::KindTable<E>::names;
  for (size_t i = 0; i < names.size(); ++i)
    if (name == names[i])
      return E(i);
  return std::nullopt;
}

/// Every name of E, for an error message: "\"glu\", \"add\", ...".
template <class E> std::string kindNames() {
  std::string out;
  for (const char *name : detail::KindTable<E>::names)
    out += std::string(out.empty() ? "" : ", ") + "\"" + name + "\"";
  return out;
}

/// The kind called `name`; RuntimeError "unknown WHAT 'NAME' (expected one
/// of ...)" when there is none.
template <class E> E requireKind(std::string_view name, const std::string &what) {
  std::optional<E> kind = parseKind<E>(name);
  if (!kind)
    throw RuntimeError("unknown " + what + " '" + std::string(name) + "' (expected one of " +
                       kindNames<E>() + ")");
  return *kind;
}

} // namespace fbt

#endif // FBT_RUNTIME_FORMAT_KINDS_H
