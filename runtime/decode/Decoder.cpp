//===- Decoder.cpp - prefill, decode and the three regimes ----------------===//

#include "runtime/decode/Decoder.h"
#include "runtime/decode/FusedPrefill.h"

#include "runtime/base/Error.h"
#include "runtime/base/Random.h"
#include "runtime/format/StepNames.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>

namespace fbt {


Decoder::Decoder(Session &s) : session_(s) {
  const ModelConfig &c = s.model();
  batch_ = c.inference.batchSize;
  maxPrompt_ = c.inference.maxPromptLength;
  maxSequence_ = c.inference.maxSequenceLength;
  vocab_ = c.vocabSize;
  width_ = c.hiddenSize;
  layers_ = c.numHiddenLayers;
  bos_ = (int32_t)c.bosTokenId;
  cacheElement_ = dtypeSize(cacheType(c.inference.kvCache));
  checkCacheInputs(s.bundle(), c.inference.kvCache);
  for (int64_t i = 0; i < 2 * layers_; ++i)
    caches_.emplace_back(s.device(), batch_ * maxSequence_ * cachePositionBytes(), "the KV cache");
  lastLogits_ = AlignedBuffer(batch_ * vocab_ * sizeof(float));
  // prefill_row_t<T> (one row's prefill over T positions) and mixed_n<N>.
  for (const auto &[name, plan] : s.bundle().steps()) {
    if (int64_t t = step::rowPrefillLength(name))
      rowPrefills_.push_back(t);
    if (int64_t n = step::mixedTokens(name))
      mixedSizes_.push_back(n);
  }
  std::sort(mixedSizes_.begin(), mixedSizes_.end());
  state_ = AlignedBuffer(batch_ * width_ * sizeof(float));
}

void Decoder::checkCacheInputs(const Bundle &bundle, CacheForm form) const {
  // Every step's caches are the rows this decoder keeps, each [S, D] values
  // of the manifest's type, so that cacheRow() is where a step's row starts.
  DType type = cacheType(form);
  for (const auto &[name, plan] : bundle.steps())
    for (const TensorSpec &in : plan.inputs) {
      bool values;
      if (step::cacheLayer(in.name, values) < 0)
        continue;
      bool rows = in.shape.size() == 3 && in.shape[0] >= 1 && in.shape[0] <= batch_ &&
                  in.shape[1] == maxSequence_ && in.shape[2] == width_;
      if (in.dtype != type || !rows ||
          in.bytes != in.shape[0] * maxSequence_ * (int64_t)cachePositionBytes())
        throw RuntimeError("step '" + name + "' takes " + in.name + " as " +
                           planTypeName(in.dtype) + " of " + std::to_string(in.bytes) +
                           " bytes; the decoder keeps rows of [" + std::to_string(maxSequence_) +
                           ", " + std::to_string(width_) + "] " + kindName(form) +
                           " values (the bundle's inference.kv_cache)");
    }
}

StepBinding &Decoder::binding(const std::string &step,
                              const std::set<std::string> &inputs, int64_t row) {
  auto &b = bindings_[row == 0 ? step : step + "@" + std::to_string(row)];
  if (b)
    return *b;
  // A step over fewer rows than the batch (prefill_row) sees the caches from
  // row `row` on.
  auto owned = [&](const std::string &name) -> void * {
    if (void *p = session_.stateBuffer(name))
      return p;
    bool values;
    int64_t layer = fbt::step::cacheLayer(name, values); // `step` is the step's name here
    if (layer < 0)
      return nullptr;
    if (layer >= layers_)
      throw RuntimeError("step '" + step + "' takes a cache for layer " +
                         std::to_string(layer) + ", but the model has " +
                         std::to_string(layers_));
    return cacheRow(values * layers_ + layer, row);
  };
  b = std::make_unique<StepBinding>(session_.device(), session_.bundle().step(step),
                                    owned, inputs, "the decoder", vocab_);
  return *b;
}

void Decoder::prefill(const std::vector<std::vector<int32_t>> &prompts,
                      const Regime &regime,
                      const std::function<void(StepBinding &)> &afterPass) {
  if ((int64_t)prompts.size() > batch_)
    throw RuntimeError(std::to_string(prompts.size()) + " prompts, but the bundle "
                       "decodes " + std::to_string(batch_) + " at a time");
  runPrefill(prompts, regime, 0, batch_, afterPass);
}

Regime Decoder::defaultRegime() const {
  return Regime::parse(hasFeedback() ? "soft" : "standard");
}

bool Decoder::hasFeedback() const {
  return session_.model().feedback.fusion != Fusion::None;
}

void Decoder::checkRegime(const Regime &regime) const {
  if (regime.kind != Regime::Kind::Standard && !hasFeedback())
    throw RuntimeError("model '" + session_.model().name +
                       "' has no feedback path (fusion none): it decodes only in the "
                       "standard regime, not " + regime.name());
}

void Decoder::runPrefill(const std::vector<std::vector<int32_t>> &prompts,
                         const Regime &regime, int64_t row, int64_t rows,
                         const std::function<void(StepBinding &)> &afterPass) {
  checkRegime(regime);
  session_.refreshInferenceWeights();
  // The whole batch's steps, or one row's (a batch of one is its own row),
  // over the fewest positions that hold the longest prompt.
  size_t longest = 0;
  for (const auto &p : prompts)
    longest = std::max(longest, p.size());
  bool oneRow = rows != batch_;
  int64_t length = maxPrompt_, shorter = 0; // shorter: a prefill_row_t<T>
  if (rows == 1 && !withStates_) // the states steps run the longest prompt
    for (int64_t t : rowPrefills_)
      if ((size_t)t >= longest && t < length)
        length = shorter = t;
  std::vector<int32_t> ids(rows * length, 0), last(rows, 0);
  for (size_t b = 0; b < prompts.size(); ++b) {
    const auto &p = prompts[b];
    int64_t which = row + (int64_t)b;
    if (p.empty())
      throw RuntimeError("prompt " + std::to_string(which) + " is empty");
    if ((int64_t)p.size() > maxPrompt_)
      throw RuntimeError("prompt " + std::to_string(which) + " has " +
                         std::to_string(p.size()) + " tokens; the bundle's "
                         "prefill takes at most " + std::to_string(maxPrompt_) +
                         " (inference.max_prompt_length)");
    for (int32_t id : p)
      if (id < 0 || id >= vocab_)
        throw RuntimeError("prompt " + std::to_string(which) + " holds token " +
                           std::to_string(id) + ", outside the vocabulary");
    std::copy(p.begin(), p.end(), ids.begin() + b * length);
    last[b] = (int32_t)p.size() - 1;
  }
  float *logits = lastLogits_.as<float>() + row * vocab_;
  float *state = state_.as<float>() + row * width_;
  size_t logitBytes = rows * vocab_ * sizeof(float), stateBytes = rows * width_ * sizeof(float);

  std::string plainName =
      withStates_ ? step::prefillStates(false) : step::prefill(false, oneRow, shorter);
  if (!session_.bundle().hasStep(plainName))
    throw RuntimeError("the bundle has no step '" + plainName + "' (compiled by an "
                       "older fbtc): compile it again");
  StepRunner &plain = session_.runner(plainName);
  StepBinding &b = binding(plainName, {"input_ids", "last_positions"}, row);
  b.set("input_ids", ids.data(), ids.size() * sizeof(int32_t));
  b.set("last_positions", last.data(), last.size() * sizeof(int32_t));
  b.run(plain);
  b.read("logits", logits, logitBytes);
  b.read("state", state, stateBytes);
  if (afterPass)
    afterPass(b);

  if (regime.kind != Regime::Kind::Fused)
    return;
  std::string fusedName =
      withStates_ ? step::prefillStates(true) : step::prefill(true, oneRow, shorter);
  if (!session_.bundle().hasStep(fusedName))
    throw RuntimeError("this model has no feedback path (fusion none): fused "
                       "decoding needs one");
  StepRunner &fused = session_.runner(fusedName);
  StepBinding &f =
      binding(fusedName, {"input_ids", "last_positions", "prev_states"}, row);
  f.set("input_ids", ids.data(), ids.size() * sizeof(int32_t));
  f.set("last_positions", last.data(), last.size() * sizeof(int32_t));
  const StepPlan &plan = fused.plan();
  int64_t bytes = plan.inputs[plan.inputIndex("prev_states")].bytes;
  const void *states = b.output("states");
  // The passes' schedule is FusedPrefill's, run here a whole pass at a time
  // with the states left on the device; pass 1 was the plain prefill above.
  FusedPrefill passes(regime, length, width_);
  for (passes.advance(length); !passes.finished(); passes.advance(length)) {
    // Each pass reads the states of the one before it.
    session_.device().copy(f.input("prev_states"), states, bytes);
    f.run(fused);
    states = f.output("states");
    f.read("logits", logits, logitBytes);
    f.read("state", state, stateBytes);
    if (afterPass)
      afterPass(f);
  }
}

std::vector<std::vector<float>>
Decoder::passStates(const std::vector<int32_t> &prompt, int64_t passes) {
  std::vector<std::vector<float>> out;
  // Row 0 of each pass's states: [maxPrompt, D] of which the prompt's part.
  auto keep = [&](StepBinding &b) {
    std::vector<float> all = b.readFloats("states");
    out.emplace_back(all.begin(), all.begin() + prompt.size() * width_);
  };
  Regime r;
  if (passes > 1) {
    r.kind = Regime::Kind::Fused;
    r.passes = passes;
  }
  prefill({prompt}, r, keep);
  return out;
}

std::vector<std::vector<std::vector<std::vector<float>>>>
Decoder::layerStates(const std::vector<std::vector<int32_t>> &prompts, int64_t passes,
                     std::vector<std::vector<std::vector<float>>> *carried) {
  if (!session_.bundle().hasStep(step::prefillStates(false)))
    throw RuntimeError("the bundle has no step '" + step::prefillStates(false) +
                       "': compile it with fbtc --with-states");
  int64_t layers = layers_;
  std::vector<std::vector<std::vector<std::vector<float>>>> out;
  // Each prompt's positions of a [batch, maxPrompt, D] output.
  auto rows = [&](StepBinding &b, const std::string &name,
                  std::vector<std::vector<float>> &to) {
    std::vector<float> all = b.readFloats(name);
    for (size_t p = 0; p < prompts.size(); ++p) {
      auto first = all.begin() + (ptrdiff_t)(p * maxPrompt_ * width_);
      to.emplace_back(first, first + (ptrdiff_t)(prompts[p].size() * width_));
    }
  };
  if (carried)
    carried->clear();
  auto keep = [&](StepBinding &b) {
    auto &pass = out.emplace_back(layers + 1);
    for (int64_t l = 0; l <= layers; ++l)
      rows(b, step::residual(l), pass[l]);
    if (carried)
      rows(b, "states", carried->emplace_back());
  };
  Regime r;
  if (passes > 1) {
    r.kind = Regime::Kind::Fused;
    r.passes = passes;
  }
  withStates_ = true;
  try {
    prefill(prompts, r, keep);
  } catch (...) {
    withStates_ = false;
    throw;
  }
  withStates_ = false;
  return out;
}

void Decoder::decode(const std::vector<int32_t> &tokens,
                     const std::vector<int32_t> &positions, bool feedback) {
  step(tokens, positions, std::vector<bool>(batch_, feedback));
}

void Decoder::step(const std::vector<int32_t> &tokens,
                   const std::vector<int32_t> &positions,
                   const std::vector<bool> &feedback) {
  if ((int64_t)tokens.size() != batch_ || (int64_t)positions.size() != batch_ ||
      (int64_t)feedback.size() != batch_)
    throw RuntimeError("a decode step takes one token, position and feedback "
                       "flag per row (" + std::to_string(batch_) + ")");
  for (int64_t b = 0; b < batch_; ++b)
    if (positions[b] >= maxSequence_)
      throw RuntimeError("sequence " + std::to_string(b) + " reached the "
                         "context length " + std::to_string(maxSequence_));
  std::vector<float> on(batch_);
  bool any = false;
  for (int64_t b = 0; b < batch_; ++b)
    on[b] = feedback[b] ? 1.0f : 0.0f, any |= feedback[b];
  // Standard decoding takes the step without the feedback path when the
  // bundle has one (it has whenever the model has a feedback path at all).
  bool plain = !any && session_.bundle().hasStep(step::kDecodePlain);
  std::string name = plain ? step::kDecodePlain : step::kDecode;
  StepRunner &runner = session_.runner(name);
  StepBinding &b = binding(name, {"input_ids", "positions", "state", "feedback_on"});
  session_.refreshInferenceWeights();
  b.set("input_ids", tokens.data(), tokens.size() * sizeof(int32_t));
  b.set("positions", positions.data(), positions.size() * sizeof(int32_t));
  b.set("state", state_.data(), state_.size());
  b.set("feedback_on", on.data(), on.size() * sizeof(float));
  b.run(runner);
  b.read("logits", lastLogits_.data(), lastLogits_.size());
  b.read("state", state_.data(), state_.size());
}

std::vector<std::vector<std::vector<float>>>
Decoder::score(const std::vector<std::vector<int32_t>> &seqs,
               const std::vector<int64_t> &promptLengths, const Regime &regime) {
  std::vector<std::vector<int32_t>> prompts;
  size_t longest = 0;
  for (size_t b = 0; b < seqs.size(); ++b) {
    if (promptLengths[b] < 1 || promptLengths[b] > (int64_t)seqs[b].size())
      throw RuntimeError("sequence " + std::to_string(b) +
                         ": the prompt length must be in [1, its length]");
    prompts.emplace_back(seqs[b].begin(), seqs[b].begin() + promptLengths[b]);
    longest = std::max(longest, seqs[b].size());
  }
  prefill(prompts, regime);
  std::vector<std::vector<std::vector<float>>> logits(seqs.size());
  for (size_t b = 0; b < seqs.size(); ++b) {
    logits[b].assign(seqs[b].size(), std::vector<float>(vocab_, 0.0f));
    const float *row = lastLogits_.as<float>() + b * vocab_;
    logits[b][promptLengths[b] - 1].assign(row, row + vocab_);
  }
  // Rows advance together; a row past its end feeds its last token again
  // and is ignored.
  bool feedback = regime.kind != Regime::Kind::Standard;
  std::vector<int64_t> next(promptLengths.begin(), promptLengths.end());
  next.resize(batch_, 1);
  for (size_t round = 0; round < longest; ++round) {
    bool any = false;
    std::vector<int32_t> tokens(batch_, 0), positions(batch_, 0);
    for (int64_t b = 0; b < batch_; ++b) {
      bool live = b < (int64_t)seqs.size() && next[b] < (int64_t)seqs[b].size();
      any |= live;
      int64_t t = live ? next[b] : 0;
      tokens[b] = live ? seqs[b][t] : 0;
      positions[b] = (int32_t)t;
    }
    if (!any)
      break;
    decode(tokens, positions, feedback);
    for (size_t b = 0; b < seqs.size(); ++b)
      if (next[b] < (int64_t)seqs[b].size()) {
        const float *row = lastLogits_.as<float>() + b * vocab_;
        logits[b][next[b]].assign(row, row + vocab_);
        ++next[b];
      }
  }
  return logits;
}

std::vector<std::vector<int32_t>>
Decoder::generate(const std::vector<std::vector<int32_t>> &prompts,
                  const Regime &regime, const SamplingOptions &sampling,
                  int64_t maxNew,
                  const std::function<bool(int64_t, int32_t)> &onToken) {
  if (prompts.size() == 1 && cache_.capacity() > 0)
    prefillCached(prompts[0], regime);
  else
    prefill(prompts, regime);
  int64_t n = prompts.size();
  std::vector<std::vector<int32_t>> out(n);
  std::vector<int32_t> positions(batch_, 0), tokens(batch_, 0);
  std::vector<bool> live(batch_, false);
  for (int64_t b = 0; b < n; ++b) {
    positions[b] = (int32_t)prompts[b].size();
    live[b] = true;
  }
  bool feedback = regime.kind != Regime::Kind::Standard;
  for (int64_t step = 0; step < maxNew; ++step) {
    bool any = false;
    for (int64_t b = 0; b < n; ++b) {
      if (!live[b])
        continue;
      const float *row = lastLogits_.as<float>() + b * vocab_;
      int32_t id = sample(row, sampling, (uint64_t)(step * batch_ + b));
      out[b].push_back(id);
      tokens[b] = id;
      if (!onToken(b, id) || positions[b] + 1 >= maxSequence_)
        live[b] = false;
      any |= live[b];
    }
    if (!any || step + 1 == maxNew)
      break;
    decode(tokens, positions, feedback);
    for (int64_t b = 0; b < n; ++b)
      positions[b] += live[b];
  }
  return out;
}

int64_t Decoder::longestPrompt(const Regime &regime) const {
  // A fused prompt's passes run alone wherever there are no mixed steps
  // (generate, score): the same bound everywhere.
  if (regime.kind == Regime::Kind::Fused || mixedSizes_.empty())
    return maxPrompt_;
  return maxSequence_ - 1; // room for one token after it
}

void Decoder::mixed(const std::vector<MixedToken> &tokens, std::vector<float> *states) {
  if (tokens.empty())
    return;
  auto size = std::lower_bound(mixedSizes_.begin(), mixedSizes_.end(),
                               (int64_t)tokens.size());
  if (size == mixedSizes_.end())
    throw RuntimeError(std::to_string(tokens.size()) + " tokens for one mixed step; "
                       "the bundle's largest takes " + std::to_string(mixedCapacity()));
  int64_t n = *size;
  // Padding: position -1 and row -1, written nowhere.
  std::vector<int32_t> ids(n, 0), positions(n, -1), rows(n, -1), picks(batch_, 0);
  std::vector<float> on(n, 0.0f), fed(n * width_, 0.0f);
  std::vector<bool> seen(batch_, false);
  for (size_t i = 0; i < tokens.size(); ++i) {
    const MixedToken &t = tokens[i];
    if (t.row < 0 || t.row >= batch_ || t.position < 0 || t.position >= maxSequence_ ||
        t.id < 0 || t.id >= vocab_)
      throw RuntimeError("mixed-step token " + std::to_string(i) + " (row " +
                         std::to_string(t.row) + ", position " +
                         std::to_string(t.position) + ", id " + std::to_string(t.id) +
                         ") is outside the batch, the context or the vocabulary");
    ids[i] = t.id;
    positions[i] = t.position;
    rows[i] = (int32_t)t.row;
    picks[t.row] = (int32_t)i; // a row's last token gives its logits
    seen[t.row] = true;
    if (t.feedback) {
      on[i] = 1.0f;
      const float *from = t.state ? t.state : state(t.row);
      std::copy(from, from + width_, fed.begin() + i * width_);
    }
  }
  std::string name = step::mixed(n);
  StepRunner &runner = session_.runner(name);
  bool feedback = runner.plan().inputIndex("feedback_on") >= 0;
  std::set<std::string> inputs = {"input_ids", "positions", "rows", "picks"};
  if (feedback)
    inputs.insert({"token_states", "feedback_on"});
  StepBinding &b = binding(name, inputs);
  session_.refreshInferenceWeights();
  b.set("input_ids", ids.data(), ids.size() * sizeof(int32_t));
  b.set("positions", positions.data(), positions.size() * sizeof(int32_t));
  b.set("rows", rows.data(), rows.size() * sizeof(int32_t));
  b.set("picks", picks.data(), picks.size() * sizeof(int32_t));
  if (feedback) {
    b.set("token_states", fed.data(), fed.size() * sizeof(float));
    b.set("feedback_on", on.data(), on.size() * sizeof(float));
  } else {
    for (const MixedToken &t : tokens)
      if (t.feedback)
        throw RuntimeError("this model has no feedback path (fusion none): a mixed "
                           "step cannot feed a state back");
    if (states)
      throw RuntimeError("this model has no feedback path (fusion none): its mixed "
                         "steps keep no states");
  }
  b.run(runner);
  Device &device = session_.device();
  if (states) {
    states->resize(tokens.size() * width_);
    // The real tokens' part: padding comes last.
    device.download(states->data(), b.output("states"), states->size() * sizeof(float));
  }
  // Only the rows with a token take their logits and state.
  const float *logits = static_cast<const float *>(b.output("logits"));
  const float *out = static_cast<const float *>(b.output("state"));
  for (int64_t r = 0; r < batch_; ++r)
    if (seen[r]) {
      device.download(lastLogits_.as<float>() + r * vocab_, logits + r * vocab_,
                      vocab_ * sizeof(float));
      device.download(state_.as<float>() + r * width_, out + r * width_,
                      width_ * sizeof(float));
    }
}

char *Decoder::cacheRow(size_t cache, int64_t row) const {
  // Rows are contiguous: [B, maxSequence, D].
  return static_cast<char *>(caches_[cache].data()) + row * maxSequence_ * cachePositionBytes();
}

void Decoder::setPrefillCache(size_t entries) { cache_.setCapacity(entries); }

bool Decoder::restoreCached(int64_t row, const std::vector<int32_t> &prompt,
                            const Regime &regime) {
  const PrefillCache::Entry *p = cache_.find(prompt, regime.prefillPasses());
  if (!p)
    return false;
  for (size_t i = 0; i < caches_.size(); ++i)
    session_.device().upload(cacheRow(i, row), p->kv[i].data(), p->kv[i].size());
  std::copy(p->state.begin(), p->state.end(), state_.as<float>() + row * width_);
  std::copy(p->logits.begin(), p->logits.end(), lastLogits_.as<float>() + row * vocab_);
  return true;
}

void Decoder::prefillCached(const std::vector<int32_t> &prompt,
                            const Regime &regime, int64_t row) {
  if (restoreCached(row, prompt, regime))
    return;
  runPrefill({prompt}, regime, row, 1, {});
  storeCached(row, prompt, regime);
}

void Decoder::storeCached(int64_t row, const std::vector<int32_t> &prompt,
                          const Regime &regime) {
  if (cache_.capacity() == 0)
    return;
  PrefillCache::Entry p;
  p.prompt = prompt;
  p.kind = regime.prefillPasses();
  for (size_t i = 0; i < caches_.size(); ++i) {
    p.kv.emplace_back(prompt.size() * cachePositionBytes());
    session_.device().download(p.kv.back().data(), cacheRow(i, row), p.kv.back().size());
  }
  const float *state = state_.as<float>() + row * width_;
  const float *logits = lastLogits_.as<float>() + row * vocab_;
  p.state.assign(state, state + width_);
  p.logits.assign(logits, logits + vocab_);
  cache_.store(std::move(p));
}

void Decoder::admit(int64_t row, const std::vector<int32_t> &prompt,
                    const Regime &regime) {
  if (row < 0 || row >= batch_)
    throw RuntimeError("row " + std::to_string(row) + " is not in the batch of " +
                       std::to_string(batch_));
  // The row's prefill writes its slice of the caches, its state and logits
  // alone: the other rows decode on as they were.
  prefillCached(prompt, regime, row);
}

} // namespace fbt
