//===- Median.h - the median of timings ---------------------------*- C++ -*-===//
//
// Every timing fbt reports or compares (the tuner's alternatives, fbt
// bench's GEMM rates) is the median of its samples, so one slow outlier (a
// page fault, another process) moves nothing. With an even count it is the
// lower middle sample: a time that was measured, not an average of two.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_BASE_MEDIAN_H
#define FBT_RUNTIME_BASE_MEDIAN_H

#include <algorithm>
#include <vector>

namespace fbt {

/// The lower middle of `samples`; 0 for none.
inline double median(std::vector<double> samples) {
  if (samples.empty())
    return 0;
  auto middle = samples.begin() + (samples.size() - 1) / 2;
  std::nth_element(samples.begin(), middle, samples.end());
  return *middle;
}

} // namespace fbt

#endif // FBT_RUNTIME_BASE_MEDIAN_H
