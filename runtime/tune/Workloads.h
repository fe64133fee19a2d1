//===- Workloads.h - the synthetic runs the tuner times ----------*- C++ -*-===//
//
// Internal to the tune room: one workload per way of running a bundle's
// steps (each training and evaluation step, generation in each regime), on
// synthetic inputs (rng::syntheticIds), and the median time of a few runs.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_TUNE_WORKLOADS_H
#define FBT_RUNTIME_TUNE_WORKLOADS_H

#include "runtime/format/Bundle.h"
#include "runtime/format/ModelConfig.h"
#include "runtime/session/Session.h"

#include <functional>
#include <string>
#include <vector>

namespace fbt::tune {

/// One way of running steps: a training step, an evaluation, generation in
/// a regime. run(session, i) runs it once, with inputs varied by i;
/// runs(step) says whether it runs that step.
struct Workload {
  std::string name;
  std::function<void(Session &, int64_t)> run;
  std::function<bool(const std::string &)> runs;
};

/// Every workload of `bundle`: the most used first (K = 1, 2, decoding,
/// evaluation, the other K), since the timing phase may run out of budget.
std::vector<Workload> workloads(const Bundle &bundle, const ModelConfig &c);

/// Runs `w` on `s` `repeats` times after one warm-up; the median seconds.
double timeWorkload(Session &s, const Workload &w, int repeats,
                    const std::function<double()> &clock);

} // namespace fbt::tune

#endif // FBT_RUNTIME_TUNE_WORKLOADS_H
