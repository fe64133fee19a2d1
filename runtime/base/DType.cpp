//===- DType.cpp - element types of tensors and plans ---------------------===//

#include "runtime/base/DType.h"

namespace fbt {

namespace {
struct DTypeInfo {
  DType dtype;
  const char *name, *planName; // planName: null where plans never use it
  size_t size;
};
constexpr DTypeInfo kDTypes[] = {
    {DType::F32, "F32", "f32", 4}, {DType::BF16, "BF16", "bf16", 2},
    {DType::F16, "F16", "f16", 2}, {DType::I32, "I32", "i32", 4},
    {DType::I64, "I64", "i64", 8}, {DType::U8, "U8", nullptr, 1},
    {DType::I8, "I8", "i8", 1},
};
} // namespace

size_t dtypeSize(DType dtype) {
  for (const DTypeInfo &info : kDTypes)
    if (info.dtype == dtype)
      return info.size;
  return 0;
}

const char *dtypeName(DType dtype) {
  for (const DTypeInfo &info : kDTypes)
    if (info.dtype == dtype)
      return info.name;
  return "?";
}

std::optional<DType> parseDType(std::string_view name) {
  for (const DTypeInfo &info : kDTypes)
    if (name == info.name)
      return info.dtype;
  return std::nullopt;
}

const char *planTypeName(DType dtype) {
  for (const DTypeInfo &info : kDTypes)
    if (info.dtype == dtype && info.planName)
      return info.planName;
  return "?";
}

std::optional<DType> parsePlanType(std::string_view name) {
  for (const DTypeInfo &info : kDTypes)
    if (info.planName && name == info.planName)
      return info.dtype;
  return std::nullopt;
}

} // namespace fbt
