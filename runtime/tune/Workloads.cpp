//===- Workloads.cpp - the synthetic runs the tuner times -----------------===//

#include "runtime/tune/Workloads.h"

#include "runtime/base/Median.h"
#include "runtime/base/Random.h"
#include "runtime/decode/Decoder.h"
#include "runtime/format/StepNames.h"

#include <algorithm>

namespace fbt::tune {

namespace {


bool startsWith(const std::string &s, const std::string &prefix) { return s.rfind(prefix, 0) == 0; }

} // namespace

std::vector<Workload> workloads(const Bundle &bundle, const ModelConfig &c) {
  std::vector<Workload> list;
  auto tokens = [&c](int64_t n, uint64_t stream, int64_t i) {
    return rng::syntheticIds(n, c.vocabSize, stream, uint64_t(i));
  };
  using namespace rng::streams;
  int64_t bt = c.training.batchSize * c.training.sequenceLength;
  for (const auto &[name, plan] : bundle.steps()) {
    int64_t k = step::passesOf(name);
    if (k == 0)
      continue;
    auto itself = [name = name](const std::string &step) { return step == name; };
    if (plan.kind == StepKind::Train)
      list.push_back({name,
                      [=](Session &s, int64_t i) {
                        s.trainStep(k, tokens(bt, kSyntheticIds, i).data(), tokens(bt, kSyntheticTargets, i).data(), i,
                                    1e-4f);
                      },
                      itself});
    else if (plan.kind == StepKind::Grads)
      list.push_back({name,
                      [=](Session &s, int64_t i) {
                        s.gradientStep(k, tokens(bt, kSyntheticIds, i).data(), tokens(bt, kSyntheticTargets, i).data(), i);
                      },
                      itself});
    else if (plan.kind == StepKind::Eval)
      list.push_back({name,
                      [=](Session &s, int64_t i) {
                        s.evalStep(k, tokens(bt, kSyntheticIds, i).data(), tokens(bt, kSyntheticTargets, i).data());
                      },
                      itself});
  }
  // The most used first (K = 1, 2, then decoding below, evaluation, the
  // other K): the timing phase may run out of budget.
  auto rank = [](const std::string &n) {
    return n == step::train(1) || n == step::train(2) ? 0 : n == step::eval(step::passesOf(n)) ? 1 : 2;
  };
  std::vector<Workload> ordered;
  for (int r = 0; r < 3; ++r)
    for (const Workload &w : list)
      if (rank(w.name) == r)
        ordered.push_back(w);
  list = std::move(ordered);
  if (bundle.hasStep(step::prefill(false)) && bundle.hasStep(step::kDecode)) {
    std::vector<std::string> regimes = {"standard", "soft"};
    if (bundle.hasStep(step::prefill(true)))
      regimes.push_back("fused");
    std::vector<Workload> decoding;
    for (const std::string &r : regimes)
      decoding.push_back(
          {"decode:" + r,
           [=](Session &s, int64_t i) {
             Decoder d(s);
             std::vector<std::vector<int32_t>> prompts;
             for (int64_t row = 0; row < d.batchSize(); ++row)
               prompts.push_back(tokens(d.maxPrompt(), kSyntheticPrompts, (i << 16) | row));
             SamplingOptions greedy;
             d.generate(prompts, Regime::parse(r), greedy, 8,
                        [](int64_t, int32_t) { return true; });
             // Each one-row prefill once (a prompt of its length), so that
             // its kernels are timed too.
             for (int64_t t : d.rowPrefillLengths())
               d.generate({tokens(t, kSyntheticPrompts, (i << 16) | 0xFFFF)}, Regime::parse(r), greedy, 2,
                          [](int64_t, int32_t) { return true; });
           },
           [=](const std::string &name) {
             if (startsWith(name, step::prefill(true)))
               return r == "fused";
             if (name == step::kDecodePlain)
               return r == "standard";
             return startsWith(name, step::prefill(false)) || name == step::kDecode;
           }});
    list.insert(list.begin() + std::min<size_t>(2, list.size()), decoding.begin(),
                decoding.end());
  }
  return list;
}

/// Runs `w` on `s` `repeats` times after one warm-up; the median seconds.
double timeWorkload(Session &s, const Workload &w, int repeats,
                    const std::function<double()> &clock) {
  w.run(s, 0);
  std::vector<double> t;
  for (int r = 0; r < repeats; ++r) {
    double start = clock();
    w.run(s, r + 1);
    t.push_back(clock() - start);
  }
  return median(t);
}


} // namespace fbt::tune
