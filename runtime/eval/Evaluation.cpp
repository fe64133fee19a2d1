//===- Evaluation.cpp - held-out losses, tasks and contraction ------------===//

#include "runtime/eval/Evaluation.h"

#include "runtime/base/Error.h"
#include "runtime/base/IgnoredTarget.h"
#include "runtime/format/StepNames.h"
#include "runtime/text/DataSplits.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>

namespace fbt {

namespace {
/// Cross-entropy of `target` under `logits` (natural log), in double.
double crossEntropy(const std::vector<float> &logits, int32_t target) {
  float top = *std::max_element(logits.begin(), logits.end());
  double sum = 0;
  for (float l : logits)
    sum += std::exp(double(l) - double(top));
  return std::log(sum) + double(top) - double(logits[target]);
}

/// The mean of `v` (units of equal weight) with its standard error, and the
/// cluster standard error over the groups `group[i]` names (0 with fewer
/// than two groups): sqrt(G / (G - 1) * sum_g S_g^2) / n, S_g the sum of a
/// group's deviations from the mean.
MeanLoss meanLoss(const std::vector<double> &v, const std::vector<int64_t> &group) {
  MeanLoss m;
  const double n = double(v.size());
  if (v.empty())
    return m;
  for (double x : v)
    m.loss += x / n;
  double squares = 0;
  std::map<int64_t, double> sums;
  for (size_t i = 0; i < v.size(); ++i) {
    double d = v[i] - m.loss;
    squares += d * d;
    if (!group.empty())
      sums[group[i]] += d;
  }
  if (v.size() > 1)
    m.se = std::sqrt(squares / (n - 1) / n);
  if (sums.size() > 1) {
    double g = double(sums.size()), between = 0;
    for (const auto &[id, sum] : sums)
      between += sum * sum;
    m.seDocuments = std::sqrt(g / (g - 1) * between) / n;
  }
  return m;
}

/// The document each window starting at `offsets[i]` starts in: the index
/// of the last document start at or before it (-1: before the first).
std::vector<int64_t> documentsOf(const TokenStream &tokens, int32_t bos,
                                 const std::vector<int64_t> &offsets) {
  std::vector<int64_t> starts = documentStarts(tokens, bos);
  std::vector<int64_t> docs;
  for (int64_t at : offsets)
    docs.push_back(int64_t(std::upper_bound(starts.begin(), starts.end(), at) -
                           starts.begin()) - 1);
  return docs;
}

double rms(const float *v, int64_t n) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i)
    s += double(v[i]) * double(v[i]);
  return std::sqrt(s / double(std::max<int64_t>(n, 1)));
}
} // namespace

std::vector<Regime> defaultRegimes(const Bundle &bundle) {
  std::vector<Regime> regimes = {Regime::parse("standard")};
  if (bundle.hasStep(step::prefill(true)))
    for (const char *name : {"soft", "fused:2", "fused:3"})
      regimes.push_back(Regime::parse(name));
  return regimes;
}

namespace {
void checkLossOptions(const LossOptions &o, int64_t evalK) {
  if (evalK == 0)
    throw RuntimeError("the bundle has no eval_k<K> step (recompile it with "
                       "this fbtc)");
  if (o.passes < 1 || o.passes > evalK)
    throw RuntimeError("--passes " + std::to_string(o.passes) +
                       ": the bundle's eval step runs 1.." +
                       std::to_string(evalK) + " passes");
  if (o.promptFraction <= 0 || o.promptFraction >= 1) {
    char got[32];
    std::snprintf(got, sizeof got, "%g", o.promptFraction);
    throw RuntimeError(std::string("--prompt-fraction must be in (0, 1), got ") + got);
  }
  if (o.windows < 0)
    throw RuntimeError("--windows must be >= 1 (or all)");
}

/// Each window's mean loss over its continuation (positions P-1 .. T-1
/// predict tokens P .. T) in `regime`, teacher-forced through the decoder,
/// counting the targets the data trains on (instruction data masks the
/// rest: kIgnoredTarget); NaN for a window without one. `counted` gets the
/// targets counted.
std::vector<double> continuationLosses(Decoder &decoder, const Batch &b, int64_t promptLength,
                                       const Regime &regime, int64_t *counted) {
  const int64_t seqLen = b.seqLen;
  std::vector<double> out;
  for (int64_t first = 0; first < b.batchSize; first += decoder.batchSize()) {
    int64_t count = std::min(decoder.batchSize(), b.batchSize - first);
    std::vector<std::vector<int32_t>> seqs;
    for (int64_t w = first; w < first + count; ++w)
      seqs.emplace_back(b.inputs.begin() + w * seqLen, b.inputs.begin() + (w + 1) * seqLen);
    std::vector<int64_t> prompts(count, promptLength);
    auto logits = decoder.score(seqs, prompts, regime);
    for (int64_t w = 0; w < count; ++w) {
      double nats = 0;
      int64_t n = 0;
      for (int64_t t = promptLength - 1; t < seqLen; ++t) {
        int32_t target = b.targets[(first + w) * seqLen + t];
        if (target == kIgnoredTarget)
          continue;
        nats += crossEntropy(logits[w][t], target);
        ++n;
      }
      *counted += n;
      out.push_back(n ? nats / double(n) : std::nan(""));
    }
  }
  return out;
}

/// Drops the windows without a counted target (NaN: the same ones in every
/// regime) from the windows' losses and their documents.
void dropUncounted(std::vector<std::vector<double>> &windowLoss, std::vector<int64_t> &docs) {
  std::vector<size_t> keep;
  for (size_t w = 0; w < docs.size(); ++w)
    if (windowLoss.empty() || !std::isnan(windowLoss[0][w]))
      keep.push_back(w);
  if (keep.size() == docs.size())
    return;
  auto pick = [&](auto &v) {
    std::remove_reference_t<decltype(v)> kept;
    for (size_t w : keep)
      kept.push_back(v[w]);
    v = std::move(kept);
  };
  for (std::vector<double> &l : windowLoss)
    pick(l);
  pick(docs);
}

/// The report's regimes from each window's loss per regime: means, standard
/// errors and, after standard, the paired differences from it.
std::vector<RegimeLoss> regimeLosses(const std::vector<Regime> &regimes,
                                     const std::vector<std::vector<double>> &windowLoss,
                                     const std::vector<int64_t> &docs, bool byteLevel) {
  std::vector<RegimeLoss> out;
  for (size_t g = 0; g < regimes.size(); ++g) {
    RegimeLoss l;
    l.name = regimes[g].name();
    l.loss = meanLoss(windowLoss[g], docs);
    if (byteLevel)
      l.bpb = l.loss.loss / std::log(2.0);
    if (g > 0 && regimes[0].name() == "standard") {
      std::vector<double> diff(windowLoss[g].size());
      for (size_t w = 0; w < diff.size(); ++w)
        diff[w] = windowLoss[g][w] - windowLoss[0][w];
      l.minusStandard = meanLoss(diff, docs);
    }
    out.push_back(l);
  }
  return out;
}
} // namespace

LossReport evaluateLosses(Session &session, const TokenStream &heldOut,
                          const LossOptions &o,
                          const std::function<void(int64_t, int64_t)> &progress) {
  const ModelConfig::Training &training = session.model().training;
  const int64_t batch = training.batchSize;
  const int64_t seqLen = training.sequenceLength;
  const int64_t evalK = session.evalPasses();
  checkLossOptions(o, evalK);
  ValBatches val = [&] {
    try {
      return ValBatches(heldOut, batch, seqLen, o.windows);
    } catch (const RuntimeError &e) {
      throw RuntimeError(std::string(e.what()) +
                         " (the held-out data is too short for one batch of "
                         "windows; give more data or a larger held-out part)");
    }
  }();

  Decoder decoder(session);
  if (seqLen > decoder.maxSequence())
    throw RuntimeError("windows of " + std::to_string(seqLen) +
                       " tokens do not fit the decoder's context of " +
                       std::to_string(decoder.maxSequence()));
  LossReport r;
  r.windows = val.windows();
  r.windowsInPart = val.windowsInStream();
  r.batchWindows = batch;
  r.windowLength = seqLen;
  r.promptLength = std::clamp<int64_t>(
      std::llround(o.promptFraction * double(seqLen)), 1,
      std::min(seqLen - 1, decoder.maxPrompt()));
  std::vector<int64_t> offsets;
  for (int64_t w = 0; w < r.windows; ++w)
    offsets.push_back(val.offset(w));
  std::vector<int64_t> docs =
      documentsOf(heldOut, int32_t(session.model().bosTokenId), offsets);
  r.documents = int64_t(std::set<int64_t>(docs.begin(), docs.end()).size());

  std::vector<Regime> regimes = o.regimes.empty() ? defaultRegimes(session.bundle()) : o.regimes;
  // Per batch (passes) and per window (regimes): the mean loss of the unit.
  std::vector<std::vector<double>> passLoss(o.passes), windowLoss(regimes.size());
  int64_t total = val.size() * (1 + int64_t(regimes.size()));
  int64_t done = 0;
  for (int64_t i = 0; i < val.size(); ++i) {
    Batch b = val[i];
    StepResult s = session.evalStep(evalK, b.inputs.data(), b.targets.data());
    for (int64_t k = 0; k < o.passes; ++k)
      passLoss[k].push_back(double(s.passLosses[k]));
    if (progress)
      progress(++done, total);
    for (size_t g = 0; g < regimes.size(); ++g) {
      int64_t counted = 0;
      std::vector<double> l =
          continuationLosses(decoder, b, r.promptLength, regimes[g], &counted);
      if (g == 0)
        r.tokens += counted;
      windowLoss[g].insert(windowLoss[g].end(), l.begin(), l.end());
      if (progress)
        progress(++done, total);
    }
  }
  for (int64_t k = 0; k < o.passes; ++k)
    r.passes.push_back(meanLoss(passLoss[k], {}));
  dropUncounted(windowLoss, docs);
  if (!regimes.empty() && docs.empty())
    throw RuntimeError("no held-out window has a target the data trains on after its "
                       "prompt (instruction data: lower --prompt-fraction)");
  r.regimes = regimeLosses(regimes, windowLoss, docs, o.byteLevel);
  return r;
}

namespace {
Json meanJson(const MeanLoss &m, const char *name) {
  return Json::object({{name, m.loss}, {"se", m.se}, {"se_documents", m.seDocuments}});
}
} // namespace

Json toJson(const LossReport &r) {
  Json regimes = Json::object();
  for (const RegimeLoss &l : r.regimes) {
    Json j = meanJson(l.loss, "loss");
    j["bpb"] = l.bpb >= 0 ? Json(l.bpb) : Json();
    if (&l != &r.regimes.front() && r.regimes.front().name == "standard")
      j["minus_standard"] = meanJson(l.minusStandard, "mean");
    regimes[l.name] = std::move(j);
  }
  Json passes = Json::array(), passesSe = Json::array();
  for (const MeanLoss &m : r.passes) {
    passes.push_back(m.loss);
    passesSe.push_back(m.se);
  }
  return Json::object(
      {{"passes", std::move(passes)},
       {"passes_se", std::move(passesSe)},
       {"regimes", std::move(regimes)},
       {"tokens", r.tokens},
       {"windows", r.windows},
       {"windows_in_part", r.windowsInPart},
       {"documents", r.documents},
       {"batch_windows", r.batchWindows},
       {"window_length", r.windowLength},
       {"prompt_length", r.promptLength}});
}

Json toJson(const ContractionReport &r) {
  auto array = [](const std::vector<double> &v) { return Json(Json::array_t(v.begin(), v.end())); };
  return Json::object({{"contraction", array(r.ratios)},
                       {"contraction_se", array(r.ratiosSe)},
                       {"contraction_all_positions", array(r.ratiosAllPositions)},
                       {"prompts", r.prompts},
                       {"prompt_length", r.promptLength},
                       {"soft_state_rms", array(r.stateRms)},
                       {"sequences", r.sequences},
                       {"soft_loss_by_position", array(r.softLoss)},
                       {"standard_loss_by_position", array(r.standardLoss)}});
}

namespace {
/// ||a - b|| / ||b|| over positions [from, n) of [n * d] states.
double changeRatio(const std::vector<float> &next, const std::vector<float> &cur, int64_t from,
                   int64_t d) {
  double diff = 0, base = 0;
  for (size_t i = size_t(from * d); i < cur.size(); ++i) {
    double e = double(next[i]) - double(cur[i]);
    diff += e * e;
    base += double(cur[i]) * double(cur[i]);
  }
  return std::sqrt(diff) / std::max(std::sqrt(base), 1e-30);
}

/// The mean over sequences of each position's next-token loss, teacher-forced
/// from BOS under `regime`.
std::vector<double> lossAlong(Decoder &decoder, const std::vector<std::vector<int32_t>> &seqs,
                              const Regime &regime) {
  const int64_t n = int64_t(seqs.front().size()), v = decoder.vocab();
  std::vector<double> sum(size_t(n - 1), 0.0);
  for (size_t first = 0; first < seqs.size(); first += size_t(decoder.batchSize())) {
    size_t count = std::min(seqs.size() - first, size_t(decoder.batchSize()));
    std::vector<std::vector<int32_t>> batch(seqs.begin() + first,
                                            seqs.begin() + first + count);
    auto logits = decoder.score(batch, std::vector<int64_t>(count, 1), regime);
    for (size_t b = 0; b < count; ++b)
      for (int64_t t = 0; t + 1 < n; ++t) {
        const std::vector<float> &row = logits[b][t];
        float top = *std::max_element(row.begin(), row.end());
        double z = 0;
        for (int64_t j = 0; j < v; ++j)
          z += std::exp(double(row[j]) - top);
        sum[t] += std::log(z) + top - double(row[batch[b][t + 1]]);
      }
  }
  for (double &x : sum)
    x /= double(seqs.size());
  return sum;
}
} // namespace

std::vector<std::vector<int32_t>> spreadWindows(const TokenStream &part, int64_t count,
                                                int64_t length) {
  std::vector<std::vector<int32_t>> out;
  for (int64_t i = 0; i < count; ++i) {
    int64_t start = count > 1 ? i * (part.size() - length) / (count - 1) : 0;
    std::vector<int32_t> w(length);
    part.copy(start, length, w.data());
    out.push_back(std::move(w));
  }
  return out;
}

ContractionReport evaluateContractionOn(Session &session, const TokenStream &heldOut,
                                        const ContractionOptions &o) {
  if (o.passes < 2 || o.generate < 0 || o.prompts < 2 || o.sequences < 0)
    throw RuntimeError("the contraction needs passes >= 2, prompts >= 2, generate >= 0 and "
                       "sequences >= 0");
  const ModelConfig &config = session.model();
  if (config.feedback.fusion == Fusion::None)
    throw RuntimeError("the contraction is of the feedback map: this model has none "
                       "(fusion none)");
  Decoder decoder(session);
  const int32_t bos = int32_t(config.bosTokenId);
  const int64_t t = std::min<int64_t>(config.inference.maxPromptLength, heldOut.size());
  if (t < 2)
    throw RuntimeError("the part holds " + std::to_string(heldOut.size()) +
                       " tokens: too few for a prompt");
  const int64_t passes = std::min(o.passes, t), d = decoder.width();
  ContractionReport r;
  r.prompts = o.prompts;
  r.promptLength = t;
  // Each prompt and window starts a document.
  std::vector<std::vector<int32_t>> prompts = spreadWindows(heldOut, o.prompts, t);
  for (auto &w : prompts)
    w[0] = bos;
  std::vector<std::vector<double>> open(size_t(passes - 1)), all(size_t(passes - 1));
  for (const auto &prompt : prompts) {
    std::vector<std::vector<float>> states = decoder.passStates(prompt, passes);
    for (int64_t k = 1; k < passes; ++k) {
      open[k - 1].push_back(changeRatio(states[k], states[k - 1], k, d));
      all[k - 1].push_back(changeRatio(states[k], states[k - 1], 0, d));
    }
  }
  for (int64_t k = 1; k < passes; ++k) {
    const std::vector<double> &x = open[k - 1];
    double mean = 0, var = 0, meanAll = 0;
    for (double v : x)
      mean += v / double(x.size());
    for (double v : x)
      var += (v - mean) * (v - mean) / double(x.size() - 1);
    for (double v : all[k - 1])
      meanAll += v / double(x.size());
    r.ratios.push_back(mean);
    r.ratiosSe.push_back(std::sqrt(var / double(x.size())));
    r.ratiosAllPositions.push_back(meanAll);
  }
  int64_t n = std::min(o.generate, decoder.maxSequence() - t);
  if (n > 0) {
    SamplingOptions greedy;
    decoder.generate({prompts.front()}, Regime::parse("soft"), greedy, n,
                     [&](int64_t, int32_t) {
                       r.stateRms.push_back(rms(decoder.state(0), decoder.width()));
                       return true;
                     });
  }
  const int64_t context = std::min<int64_t>(decoder.maxSequence(), heldOut.size());
  if (o.sequences > 0 && context >= 2) {
    std::vector<std::vector<int32_t>> seqs = spreadWindows(heldOut, o.sequences, context);
    for (auto &w : seqs)
      w[0] = bos;
    r.sequences = o.sequences;
    r.softLoss = lossAlong(decoder, seqs, Regime::parse("soft"));
    r.standardLoss = lossAlong(decoder, seqs, Regime::parse("standard"));
  }
  return r;
}

} // namespace fbt
