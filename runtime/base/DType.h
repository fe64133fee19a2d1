//===- DType.h - element types of tensors and plans -------------*- C++ -*-===//
//
// One enum for what an element is, wherever it is stored: safetensors
// checkpoints spell it "F32", "BF16", ...; bundle manifests spell a plan's
// tensors, constants and GEMM operands "f32", "bf16", "i32", "i64" (and
// inference weights' "i8", "f16").
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_BASE_DTYPE_H
#define FBT_RUNTIME_BASE_DTYPE_H

#include <cstddef>
#include <optional>
#include <string_view>

namespace fbt {

enum class DType { F32, BF16, F16, I32, I64, U8, I8 };

/// Bytes per element.
size_t dtypeSize(DType dtype);
/// The safetensors spelling: "F32", "BF16", "F16", "I32", "I64", "U8", "I8".
const char *dtypeName(DType dtype);
/// The dtype spelled `name` (safetensors spelling), or nullopt.
std::optional<DType> parseDType(std::string_view name);

/// The bundle manifest's spelling: "f32", "bf16", "f16", "i32", "i64",
/// "i8" (plans use no other types; f16 and i8 hold inference weights).
const char *planTypeName(DType dtype);
/// The plan type spelled `name`, or nullopt.
std::optional<DType> parsePlanType(std::string_view name);

} // namespace fbt

#endif // FBT_RUNTIME_BASE_DTYPE_H
