//===- KernelConfig.cpp - knobs, their names and the tuning spaces --------===//

#include "codegen/kernels/KernelConfig.h"

#include "mlir/IR/Builders.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::fbt;

namespace {
struct KnobInfo {
  Knob knob;
  llvm::StringLiteral name;
};
constexpr KnobInfo kKnobs[] = {
    {Knob::RowThreads, "row_threads"}, {Knob::BlockThreads, "block_threads"},
    {Knob::PerThread, "per_thread"},   {Knob::QueryBlock, "query_block"},
    {Knob::KeyTile, "key_tile"},       {Knob::Grain, "grain"},
    {Knob::HeadGroup, "head_group"},   {Knob::Parallel, "parallel"},
    {Knob::Prefetch, "prefetch"},      {Knob::PrefetchKeys, "prefetch_keys"},
};

/// The values a knob takes in a space, before the default is added.
std::vector<int64_t> knobValues(Knob k, TuneSpace space) {
  bool wide = space == TuneSpace::Wide;
  switch (k) {
  case Knob::RowThreads:
    return wide ? std::vector<int64_t>{32, 64, 128, 256, 512, 1024}
                : std::vector<int64_t>{128, 256, 512, 1024};
  case Knob::BlockThreads:
    return wide ? std::vector<int64_t>{64, 128, 256, 512, 1024}
                : std::vector<int64_t>{128, 256, 512};
  case Knob::PerThread:
    return wide ? std::vector<int64_t>{1, 2, 4, 8} : std::vector<int64_t>{1, 4};
  case Knob::QueryBlock:
    // GPU: warps per block; CPU: queries per block of the backward.
    return wide ? std::vector<int64_t>{1, 2, 4, 8, 16} : std::vector<int64_t>{2, 4, 8};
  case Knob::KeyTile:
    return wide ? std::vector<int64_t>{8, 16, 32, 64, 128}
                : std::vector<int64_t>{16, 32, 64};
  case Knob::Grain:
    return wide ? std::vector<int64_t>{0, 1, 2, 4, 8, 16, 64}
                : std::vector<int64_t>{0, 1, 8};
  case Knob::HeadGroup:
    return wide ? std::vector<int64_t>{1, 2, 4, 8, 16} : std::vector<int64_t>{1, 2, 8};
  case Knob::Parallel:
    return {0, 1};
  case Knob::Prefetch:
    return wide ? std::vector<int64_t>{0, 2048, 4096, 8192, 16384}
                : std::vector<int64_t>{0, 8192};
  case Knob::PrefetchKeys:
    return wide ? std::vector<int64_t>{0, 4, 8, 16, 32} : std::vector<int64_t>{0, 16};
  }
  return {};
}
} // namespace

StringRef mlir::fbt::knobName(Knob k) {
  for (const KnobInfo &i : kKnobs)
    if (i.knob == k)
      return i.name;
  return "?";
}

std::optional<Knob> mlir::fbt::knobNamed(StringRef name) {
  for (const KnobInfo &i : kKnobs)
    if (i.name == name)
      return i.knob;
  return std::nullopt;
}

DictionaryAttr mlir::fbt::toAttr(MLIRContext *ctx, const KernelConfig &config) {
  Builder b(ctx);
  SmallVector<NamedAttribute> attrs;
  for (auto [k, v] : config)
    attrs.push_back(b.getNamedAttr(knobName(k), b.getI64IntegerAttr(v)));
  return b.getDictionaryAttr(attrs);
}

KernelConfig mlir::fbt::configFromAttr(DictionaryAttr attr) {
  KernelConfig config;
  if (!attr)
    return config;
  for (NamedAttribute a : attr)
    if (auto k = knobNamed(a.getName().getValue()))
      if (auto v = dyn_cast<IntegerAttr>(a.getValue()))
        config[*k] = v.getInt();
  return config;
}

std::string mlir::fbt::describe(const KernelConfig &config) {
  std::string s;
  for (auto [k, v] : config)
    s += (s.empty() ? "" : ",") + knobName(k).str() + "=" + std::to_string(v);
  return s;
}

std::string mlir::fbt::configOption(StringRef kernel, const KernelConfig &config) {
  std::string s = kernel.str();
  for (auto [k, v] : config)
    s += ":" + knobName(k).str() + "=" + std::to_string(v);
  return s;
}

bool mlir::fbt::parseConfigOption(StringRef entry, std::string &kernel,
                                  KernelConfig &config, std::string &error) {
  SmallVector<StringRef> parts;
  entry.split(parts, ':');
  kernel = parts[0].str();
  if (kernel.empty()) {
    error = "'" + entry.str() + "': no kernel name before the knobs";
    return false;
  }
  for (StringRef part : ArrayRef<StringRef>(parts).drop_front()) {
    auto [name, value] = part.split('=');
    std::optional<Knob> k = knobNamed(name);
    int64_t v;
    if (!k) {
      error = "'" + entry.str() + "': unknown knob '" + name.str() + "'";
      return false;
    }
    if (value.getAsInteger(10, v) || v < 0) {
      error = "'" + entry.str() + "': knob '" + name.str() +
              "' needs a count, not '" + value.str() + "'";
      return false;
    }
    config[*k] = v;
  }
  return true;
}

bool mlir::fbt::interleavesInt8(bool int8Activations) { return int8Activations; }

bool mlir::fbt::runsSerially(const KernelConfig &config) {
  auto parallel = config.find(Knob::Parallel);
  return parallel != config.end() && parallel->second == 0;
}

std::vector<KernelConfig> mlir::fbt::tuneSpace(TuneSpace space,
                                               const KernelConfig &used) {
  std::vector<KernelConfig> configs{used};
  if (space == TuneSpace::None)
    return configs;
  // The cartesian product over the knobs the kernel asked for, in a fixed
  // order (knob, then value), so variant numbers are stable.
  std::vector<KernelConfig> all{KernelConfig{}};
  for (auto [k, fallback] : used) {
    std::vector<int64_t> values = knobValues(k, space);
    if (std::find(values.begin(), values.end(), fallback) == values.end())
      values.insert(values.begin(), fallback);
    std::vector<KernelConfig> next;
    for (const KernelConfig &c : all)
      for (int64_t v : values) {
        KernelConfig e = c;
        e[k] = v;
        next.push_back(std::move(e));
      }
    all = std::move(next);
  }
  for (KernelConfig &c : all) {
    if (runsSerially(c))
      c.erase(Knob::Grain);
    if (c != used && std::find(configs.begin(), configs.end(), c) == configs.end())
      configs.push_back(std::move(c));
  }
  return configs;
}
