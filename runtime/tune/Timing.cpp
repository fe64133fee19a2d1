//===- Timing.cpp - what measuring a choice takes -------------------------===//

#include "runtime/tune/Timing.h"

#include "runtime/base/Bf16.h"
#include "runtime/base/Median.h"
#include "runtime/format/Safetensors.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace fbt {

bool resultsMatch(DType type, const void *want, const void *got, size_t bytes,
                  std::string &why) {
  if (std::memcmp(want, got, bytes) == 0)
    return true;
  if (type != DType::F32 && type != DType::BF16 && type != DType::F16) {
    why = "integers differ";
    return false;
  }
  bool bf16 = type == DType::BF16, f16 = type == DType::F16;
  size_t n = bytes / dtypeSize(type);
  double atol = bf16 ? 1e-2 : f16 ? 1e-3 : 1e-4, rtol = bf16 ? 1.0 / 64 : f16 ? 1.0 / 512 : 1e-3;
  for (size_t i = 0; i < n; ++i) {
    float w, g;
    if (bf16 || f16) {
      auto widen = bf16 ? bf16ToFloat : f16ToF32;
      w = widen(static_cast<const uint16_t *>(want)[i]);
      g = widen(static_cast<const uint16_t *>(got)[i]);
    } else {
      w = static_cast<const float *>(want)[i];
      g = static_cast<const float *>(got)[i];
    }
    if (std::isnan(w) && std::isnan(g))
      continue;
    if (!(std::fabs((double)g - w) <= atol + rtol * std::fabs((double)w))) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "element %zu is %.7g, the default's %.7g", i, g, w);
      why = buf;
      return false;
    }
  }
  return true;
}

std::vector<double> timeAlternatives(size_t count, const std::function<void(size_t)> &run,
                                     const std::function<void()> &restore,
                                     const std::function<double()> &clock, int warmup,
                                     int repeats) {
  std::vector<std::vector<double>> samples(count);
  for (int round = 0; round < warmup + repeats; ++round)
    for (size_t i = 0; i < count; ++i) {
      restore();
      double start = clock();
      run(i);
      double seconds = clock() - start;
      if (round >= warmup)
        samples[i].push_back(seconds);
    }
  std::vector<double> medians;
  for (auto &s : samples)
    medians.push_back(median(std::move(s)));
  return medians;
}

} // namespace fbt
