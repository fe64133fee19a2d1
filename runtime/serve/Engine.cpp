//===- Engine.cpp - continuous batching over the compiled decode step ------===//

#include "runtime/serve/Engine.h"

#include "runtime/base/Error.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>

namespace fbt {

namespace {
std::string shortNumber(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", x);
  return buf;
}

/// best_of: the n candidates with the highest mean log-probability per
/// token, in that order (ties: the earlier candidate).
void keepBest(Job &job) {
  std::vector<size_t> order(job.choices.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    double x = job.meanLogprobs[a], y = job.meanLogprobs[b];
    return x != y ? x > y : a < b;
  });
  std::vector<Choice> best;
  for (int64_t i = 0; i < job.req.n; ++i)
    best.push_back(std::move(job.choices[order[i]]));
  job.choices = std::move(best);
}

std::string requestId(bool chat) {
  static std::atomic<uint64_t> counter{0};
  char buf[48];
  std::snprintf(buf, sizeof buf, "%s-%016llx", chat ? "chatcmpl" : "cmpl",
                (unsigned long long)(std::chrono::system_clock::now()
                                         .time_since_epoch()
                                         .count() ^
                                     (++counter * 0x9e3779b97f4a7c15ull)));
  return buf;
}
} // namespace

Engine::Engine(Session &session, EngineOptions options, ServerMetrics &metrics)
    : session_(session), decoder_(session), tok_(session.tokenizer()),
      options_(std::move(options)),
      metrics_(metrics), rows_(decoder_.batchSize()) {
  decoder_.setPrefillCache(options_.prefixCache);
  worker_ = std::thread([this] { loop(); });
}

Engine::~Engine() {
  {
    std::lock_guard<std::mutex> g(m_);
    stopping_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

std::shared_ptr<Job> Engine::prepare(const std::string &body, bool chat) const {
  auto job = std::make_shared<Job>();
  job->req = parseGenerationRequest(body, chat, options_.defaultRegime);
  checkLimits(job->req);
  const std::string &model = options_.model;
  if (job->req.model.empty())
    job->req.model = model;
  else if (job->req.model != model)
    throw ApiError{404, "model '" + job->req.model + "' is not served here (this server "
                   "serves '" + model + "')", "model", "invalid_request_error"};
  const char *field = chat ? "messages" : "prompt";
  try {
    job->prompt = encodeDocument(tok_, job->req.prompt);
  } catch (const RuntimeError &e) {
    throw ApiError{400, std::string("the prompt cannot be tokenized: ") + e.what(), field};
  }
  for (const auto &[token, bias] : job->req.controls.bias)
    if (token >= decoder_.vocab())
      throw ApiError{400, "'logit_bias': token " + std::to_string(token) +
                              " is outside the vocabulary (" +
                              std::to_string(decoder_.vocab()) + " tokens)",
                     "logit_bias"};
  if (job->req.format.constrained())
    prepareFormat(*job);
  int64_t longest = decoder_.longestPrompt(job->req.regime);
  if ((int64_t)job->prompt.size() > longest)
    throw ApiError{400, "the prompt has " + std::to_string(job->prompt.size()) +
                            " tokens; this model takes at most " +
                            std::to_string(longest) + " in the " +
                            job->req.regime.name() + " regime",
                   field};
  job->id = requestId(chat);
  job->created = std::chrono::duration_cast<std::chrono::seconds>(
                     std::chrono::system_clock::now().time_since_epoch())
                     .count();
  return job;
}

/// response_format: the grammar its replies follow, compiled once per
/// format (the cache) and checked here, so that a schema outside the
/// supported subset is a 400 before anything runs.
void Engine::prepareFormat(Job &job) const {
  if (tok_.name().rfind("sp:", 0) == 0)
    throw ApiError{400, "'response_format': JSON output needs a byte-level or BPE "
                        "vocabulary; this model's tokenizer is SentencePiece",
                   "response_format"};
  try {
    const ResponseFormat &f = job.req.format;
    job.grammar = grammars_.get(f.key(), [&] {
      Grammar g = f.grammar();
      ++metrics_.grammarsCompiled;
      return g;
    });
  } catch (const RuntimeError &e) {
    throw ApiError{400, std::string("'response_format': ") + e.what(), "response_format"};
  }
  vocabulary(); // built before the engine thread needs it
}

/// The tokens' bytes as constrained decoding reads them: none for the
/// document separator, nor for a token that is not its own text (a
/// special token, which decodes as its name).
std::shared_ptr<const TokenTrie> Engine::vocabulary() const {
  std::lock_guard<std::mutex> g(vocabularyM_);
  if (!vocabulary_) {
    std::vector<std::string> bytes(decoder_.vocab());
    for (int64_t id = 0; id < decoder_.vocab() && id < tok_.vocabSize(); ++id) {
      if (id == tok_.documentSeparator())
        continue;
      std::string text = tok_.decode({(int32_t)id});
      std::vector<int32_t> again;
      try {
        again = tok_.encode(text);
      } catch (const RuntimeError &) {
      }
      if (again == std::vector<int32_t>{(int32_t)id} || text.size() == 1)
        bytes[id] = std::move(text);
    }
    vocabulary_ = std::make_shared<const TokenTrie>(bytes);
  }
  return vocabulary_;
}

/// The server's own limits on a request (each answered 400 naming its
/// field and counted in /metrics).
void Engine::checkLimits(const GenerationRequest &req) const {
  if (options_.maxTokens > 0 && req.maxTokens > options_.maxTokens) {
    metrics_.limited("max_tokens");
    throw ApiError{400, "'max_tokens' " + std::to_string(req.maxTokens) +
                            " is over this server's limit (--max-tokens " +
                            std::to_string(options_.maxTokens) + ")",
                   "max_tokens"};
  }
  if (req.candidates() > options_.maxChoices) {
    metrics_.limited("n");
    const char *field = req.bestOf > req.n ? "best_of" : "n";
    throw ApiError{400, std::string("'") + field + "' " + std::to_string(req.candidates()) +
                            " is over this server's limit (--max-n " +
                            std::to_string(options_.maxChoices) + ")",
                   field};
  }
}

/// --request-timeout: every sequence of a request older than the limit ends
/// with a 504 (a streamed one with an error event).
void Engine::expireOld() {
  if (options_.requestTimeout <= 0)
    return;
  auto now = std::chrono::steady_clock::now();
  auto expired = [&](const Sequence &s) {
    return std::chrono::duration<double>(now - s.job->arrived).count() >
           options_.requestTimeout;
  };
  std::string why = "the request ran over this server's time limit (--request-timeout " +
                    shortNumber(options_.requestTimeout) + " s)";
  for (auto &row : rows_)
    if (row && expired(*row)) {
      timeOut(*row, why);
      row.reset();
    }
  for (auto it = pending_.begin(); it != pending_.end();)
    if (expired(*it)) {
      timeOut(*it, why);
      it = pending_.erase(it);
    } else {
      ++it;
    }
}

void Engine::timeOut(Sequence &s, const std::string &why) {
  {
    std::lock_guard<std::mutex> g(s.job->m);
    if (s.job->error.empty()) {
      s.job->error = why;
      s.job->errorStatus = 504;
      metrics_.limited("request_timeout");
    }
  }
  finish(s);
}

bool Engine::submit(std::shared_ptr<Job> job) {
  std::lock_guard<std::mutex> g(m_);
  if (queue_.size() >= options_.maxQueue)
    return false;
  job->choices.resize(job->req.candidates());
  job->meanLogprobs.resize(job->req.candidates());
  queue_.push_back(std::move(job));
  metrics_.queued = queue_.size();
  cv_.notify_one();
  return true;
}

bool Engine::idle() {
  std::lock_guard<std::mutex> g(m_);
  return queue_.empty() && !busy_;
}

void Engine::loop() {
  std::vector<std::shared_ptr<Job>> echoing; // admitted, prompt not yet scored
  while (true) {
    {
      std::unique_lock<std::mutex> l(m_);
      cv_.wait(l, [&] {
        return stopping_ || !queue_.empty() || !pending_.empty() || active() > 0;
      });
      if (stopping_ && queue_.empty() && active() == 0)
        return;
      // Requests become sequences as rows come free.
      while (!queue_.empty() && pending_.size() < rows_.size()) {
        std::shared_ptr<Job> job = queue_.front();
        queue_.pop_front();
        if (job->req.echo)
          echoing.push_back(job);
        for (int64_t c = 0; c < job->req.candidates(); ++c)
          pending_.push_back(makeSequence(job, c));
      }
      metrics_.queued = queue_.size();
      busy_ = true;
    }
    try {
      for (const std::shared_ptr<Job> &job : echoing) // before their first token
        scorePrompt(*job);
      echoing.clear();
      expireOld();
      admitPending();
      bool joining = false;
      for (const auto &row : rows_)
        joining |= row && row->joining;
      if (joining)
        mixedStep();
      else if (active() > 0)
        stepAll();
    } catch (const std::exception &e) { // fails every sequence in flight
      for (auto &row : rows_)
        if (row)
          fail(*row, e.what()), row.reset();
      for (Sequence &s : pending_)
        fail(s, e.what());
      pending_.clear();
      echoing.clear();
    }
    metrics_.busyRows = active();
    metrics_.cacheHits = decoder_.prefillCacheHits();
    metrics_.cacheMisses = decoder_.prefillCacheMisses();
    std::lock_guard<std::mutex> g(m_);
    busy_ = active() > 0 || !pending_.empty();
  }
}

int64_t Engine::active() const {
  int64_t n = 0;
  for (const auto &row : rows_)
    n += row.has_value();
  return n;
}

Engine::Sequence Engine::makeSequence(const std::shared_ptr<Job> &job, int64_t choice) {
  Sequence s;
  s.job = job;
  s.choice = choice;
  s.sampling = job->req.sampling;
  s.sampling.seed += (uint64_t)choice;
  if (job->grammar) // a grammar whose start is over its budget fails at its first token
    contained(s, [&] { s.constraint.emplace(job->grammar, vocabulary(), options_.grammarWork); });
  int64_t room = decoder_.maxSequence() - (int64_t)job->prompt.size();
  s.maxNew = std::min<int64_t>(job->req.maxTokens, std::max<int64_t>(room, 0));
  s.position = (int32_t)job->prompt.size();
  return s;
}

/// Prefills waiting sequences into free rows and chooses their first token.
void Engine::admitPending() {
  // A choice whose sibling's prompt is still joining waits for it, then
  // restores that prefill from the cache instead of prefilling it again.
  auto siblingJoining = [&](const Job *job) {
    if (options_.prefixCache == 0 || decoder_.mixedCapacity() == 0)
      return false;
    for (const auto &row : rows_)
      if (row && row->joining && row->job.get() == job)
        return true;
    return false;
  };
  for (size_t r = 0; r < rows_.size(); ++r)
    while (!rows_[r] && !pending_.empty()) {
      if (siblingJoining(pending_.front().job.get()))
        return; // in order: the others wait behind it
      Sequence s = std::move(pending_.front());
      pending_.pop_front();
      if (s.job->req.echo)
        startEcho(s);
      if (s.job->cancelled || s.maxNew == 0) {
        finish(s);
        continue;
      }
      const Regime &regime = s.job->req.regime;
      bool pieces = decoder_.mixedCapacity() > 0;
      if (pieces && !decoder_.restoreCached((int64_t)r, s.job->prompt, regime)) {
        s.joining = true; // its prompt goes through the next mixed steps
        s.prefill.emplace(regime, (int64_t)s.job->prompt.size(), decoder_.width());
        s.order = admitted_++;
        rows_[r] = std::move(s);
        continue;
      }
      if (!pieces)
        decoder_.admit((int64_t)r, s.job->prompt, regime);
      bool running = false;
      contained(s, [&] { running = take(s, choose(s, decoder_.logits(r), 0)); });
      if (running)
        rows_[r] = std::move(s);
    }
}

/// One mixed step: every running row's next token, then the joining rows'
/// prompt tokens, oldest first, as many as fit. A fused:N row's prompt goes
/// N times, each pass's tokens fed (where prefill_fused feeds them) the
/// state its pass before carried from the position before.
void Engine::mixedStep() {
  std::vector<Decoder::MixedToken> tokens;
  std::vector<int64_t> running, joining;
  for (int64_t r = 0; r < (int64_t)rows_.size(); ++r) {
    if (!rows_[r])
      continue;
    Sequence &s = *rows_[r];
    if (s.joining && s.job->cancelled) { // nothing more to prefill for it
      finish(s);
      rows_[r].reset();
    } else if (s.joining) {
      joining.push_back(r);
    } else {
      running.push_back(r);
      tokens.push_back({r, s.next, s.position,
                        s.job->req.regime.kind != Regime::Kind::Standard});
    }
  }
  std::sort(joining.begin(), joining.end(),
            [&](int64_t a, int64_t b) { return rows_[a]->order < rows_[b]->order; });
  struct Piece {
    int64_t row, first, n; // tokens[first, first + n)
  };
  std::vector<Piece> pieces;
  bool keepStates = false; // a fused pass that another follows
  int64_t room = decoder_.mixedCapacity() - (int64_t)tokens.size();
  for (int64_t r : joining) {
    Sequence &s = *rows_[r];
    const std::vector<int32_t> &prompt = s.job->prompt;
    const FusedPrefill &plan = *s.prefill;
    int64_t n = std::min<int64_t>(room, (int64_t)prompt.size() - plan.prefilled());
    if (n <= 0)
      break;
    pieces.push_back({r, (int64_t)tokens.size(), n});
    for (int64_t i = plan.prefilled(); i < plan.prefilled() + n; ++i) {
      const float *fed = plan.fed(prompt, i, decoder_.bos());
      tokens.push_back({r, prompt[i], (int32_t)i, fed != nullptr, fed});
    }
    keepStates |= plan.keepsStates();
    room -= n;
  }
  if (tokens.empty())
    return;
  std::vector<float> states;
  decoder_.mixed(tokens, keepStates ? &states : nullptr);
  ++metrics_.steps;
  metrics_.rowSteps += (int64_t)running.size();
  for (int64_t r : running)
    containedRow(r, [&] { advance(*rows_[r], r); });
  for (const Piece &piece : pieces)
    containedRow(piece.row, [&] { joined(piece.row, piece.first, piece.n, states); });
}

/// A joining row after a mixed step carried `n` of its prompt's tokens
/// (from `first` among the step's): the next pass's states kept, and once
/// the prompt is in, its first new token.
void Engine::joined(int64_t r, int64_t first, int64_t n, const std::vector<float> &states) {
  Sequence &s = *rows_[r];
  FusedPrefill &plan = *s.prefill;
  plan.advance(n, states.empty() ? nullptr : states.data() + first * decoder_.width());
  if (!plan.finished())
    return;
  // The prompt is in: its last token's logits choose the first new one.
  s.joining = false;
  s.prefill.reset();
  decoder_.storeCached(r, s.job->prompt, s.job->req.regime);
  if (!take(s, choose(s, decoder_.logits(r), 0)))
    rows_[r].reset();
}

/// A running row after a step: its next position and token.
void Engine::advance(Sequence &s, int64_t row) {
  ++s.position;
  if (!take(s, choose(s, decoder_.logits(row), (uint64_t)s.produced)))
    rows_[row].reset();
}

/// echo: the prompt's tokens scored by plain prefill (the standard and soft
/// regimes' own), each from the tokens before it, by a decoder of its own.
void Engine::scorePrompt(Job &job) {
  const std::vector<int32_t> &p = job.prompt;
  std::vector<TokenLogprob> out;
  std::vector<std::vector<float>> logits;
  if (job.req.logprobs && p.size() > 1) {
    if (!scorer_)
      scorer_ = std::make_unique<Decoder>(session_);
    logits = scorer_->score({p}, {1}, Regime::parse("standard"))[0];
  }
  int64_t offset = 0;
  for (size_t i = 1; i < p.size(); ++i) {
    TokenLogprob t;
    t.bytes = tok_.decode({p[i]});
    t.offset = offset;
    offset += (int64_t)t.bytes.size();
    if (!logits.empty()) { // logits[i - 1]: after reading tokens 0 .. i - 1
      ChosenLogprob c =
          chosenLogprob(logits[i - 1].data(), decoder_.vocab(), p[i], job.req.topLogprobs);
      t.logprob = c.logprob;
      for (const auto &[alt, logprob] : c.top)
        t.top.push_back({tok_.decode({alt}), logprob});
    }
    out.push_back(std::move(t));
  }
  std::lock_guard<std::mutex> g(job.m);
  job.promptLogprobs = std::move(out);
}

/// echo, as a sequence starts: its tokens' offsets follow the prompt's, and
/// a stream sends the prompt first, as the reply has it.
void Engine::startEcho(Sequence &s) {
  const std::vector<TokenLogprob> &prompt = s.job->promptLogprobs;
  s.offset = prompt.empty() ? 0 : prompt.back().offset + (int64_t)prompt.back().bytes.size();
  push(*s.job, s.choice, s.job->req.prompt, "",
       s.job->req.logprobs ? prompt : std::vector<TokenLogprob>{});
}

/// echo: the choice with the prompt before its text, and the prompt's
/// tokens before its own.
Choice Engine::echoed(const Job &job, Choice c) const {
  if (!job.req.echo)
    return c;
  c.text = job.req.prompt + c.text;
  if (job.req.logprobs)
    c.logprobs.insert(c.logprobs.begin(), job.promptLogprobs.begin(),
                      job.promptLogprobs.end());
  return c;
}

/// The token `s` samples from its row's `logits` (the request's bias and
/// penalties applied, and only what its response_format's grammar reads
/// next: -1 if that is no token), scored where the request asks for
/// log-probabilities or ranks candidates.
int32_t Engine::choose(Sequence &s, const float *logits, uint64_t counter) {
  const GenerationRequest &req = s.job->req;
  int64_t vocab = decoder_.vocab();
  int32_t id;
  if (s.constraint) { // only the tokens the format's grammar reads next
    std::vector<float> allowed = req.controls.any()
                                     ? controlledLogits(logits, vocab, req.controls, s.counts)
                                     : std::vector<float>(logits, logits + vocab);
    if (!s.constraint->mask(allowed.data(), vocab))
      return -1; // take() fails the choice, and only it
    id = decoder_.sample(allowed.data(), s.sampling, counter);
  } else {
    id = req.controls.any() ? decoder_.sample(
                                  controlledLogits(logits, vocab, req.controls, s.counts).data(),
                                  s.sampling, counter)
                            : decoder_.sample(logits, s.sampling, counter);
  }
  s.chosen.reset();
  if (req.logprobs || req.bestOf > req.n)
    s.chosen = chosenLogprob(logits, vocab, id, req.topLogprobs);
  return id;
}

/// Counts generated token `id` and keeps its log-probability (from choose).
void Engine::logToken(Sequence &s, int32_t id) {
  ++s.counts[id];
  if (!s.chosen || id == tok_.documentSeparator())
    return; // the end of text is not a token of the text
  s.sumLogprob += s.chosen->logprob;
  ++s.scored;
  TokenLogprob t;
  t.bytes = tok_.decode({id});
  t.logprob = s.chosen->logprob;
  t.offset = s.offset;
  for (const auto &[alt, logprob] : s.chosen->top)
    t.top.push_back({tok_.decode({alt}), logprob});
  s.offset += (int64_t)t.bytes.size();
  s.logged.push_back(std::move(t));
}

/// The logged tokens not yet streamed (none unless the stream asked).
std::vector<TokenLogprob> Engine::unsent(Sequence &s) {
  const GenerationRequest &req = s.job->req;
  if (!req.stream || !req.logprobs || s.streamed >= s.logged.size())
    return {};
  std::vector<TokenLogprob> out(s.logged.begin() + (ptrdiff_t)s.streamed, s.logged.end());
  s.streamed = s.logged.size();
  return out;
}

void Engine::stepAll() {
  int64_t b = decoder_.batchSize();
  std::vector<int32_t> tokens(b, 0), positions(b, 0);
  std::vector<bool> feedback(b, false);
  for (int64_t r = 0; r < b; ++r)
    if (rows_[r]) {
      tokens[r] = rows_[r]->next;
      positions[r] = rows_[r]->position;
      feedback[r] = rows_[r]->job->req.regime.kind != Regime::Kind::Standard;
    }
  decoder_.step(tokens, positions, feedback);
  ++metrics_.steps;
  metrics_.rowSteps += active();
  for (int64_t r = 0; r < b; ++r)
    if (rows_[r])
      containedRow(r, [&] { advance(*rows_[r], r); });
}

/// Takes sequence `s`'s next token `id`; false once `s` has ended (then
/// its choice is recorded).
bool Engine::take(Sequence &s, int32_t id) {
  Job &job = *s.job;
  if (job.cancelled)
    return finish(s), false;
  ++s.produced;
  {
    std::lock_guard<std::mutex> g(job.m);
    ++job.completionTokens;
  }
  if (s.constraint && (id < 0 || !s.constraint->take(id)))
    return fail(s, "response_format: no token of the vocabulary continues the JSON"), false;
  logToken(s, id);
  if (id == tok_.documentSeparator()) {
    s.finish = "stop";
    extend(s, utf8Text(tok_.decode(s.ids), true)); // what was held back is text
    return finish(s), false;
  }
  s.ids.push_back(id);
  std::string now = utf8Text(tok_.decode(s.ids), false);
  // A reply under response_format ends where its grammar does: a stop
  // string (or a chat turn's start) inside it, as whitespace or within a
  // string value, would cut the JSON short, so it ends nothing there.
  size_t cut = s.constraint ? std::string::npos : stopAt(now, job.req);
  if (cut != std::string::npos) { // the whole stop string goes, and what follows
    now.resize(cut);
    s.finish = "stop";
    extend(s, now);
    return finish(s), false;
  }
  extend(s, now.substr(0, now.size() - (s.constraint ? 0 : stopHoldback(now, job.req))));
  if (s.constraint && s.constraint->finished()) { // the JSON is whole
    s.finish = "stop";
    extend(s, utf8Text(tok_.decode(s.ids), true));
    return finish(s), false;
  }
  if (s.produced >= s.maxNew || s.position + 1 >= decoder_.maxSequence()) {
    // What was held back: a character left incomplete, the start of a stop.
    extend(s, utf8Text(tok_.decode(s.ids), true));
    return finish(s), false;
  }
  s.next = id;
  return true;
}

/// Sends what `now` adds to the text sent so far.
void Engine::extend(Sequence &s, const std::string &now) {
  if (now.size() > s.text.size() && now.compare(0, s.text.size(), s.text) == 0) {
    push(*s.job, s.choice, now.substr(s.text.size()), "", unsent(s));
    s.text = now;
  }
}

void Engine::finish(Sequence &s) {
  if (s.done)
    return;
  s.done = true;
  push(*s.job, s.choice, "", s.finish, unsent(s));
  Job &job = *s.job;
  std::lock_guard<std::mutex> g(job.m);
  job.choices[s.choice] = echoed(job, {s.text, s.finish,
                                      job.req.logprobs ? s.logged : std::vector<TokenLogprob>{}});
  job.meanLogprobs[s.choice] = s.scored ? s.sumLogprob / (double)s.scored : -INFINITY;
  if (++job.finishedChoices < job.req.candidates())
    return;
  if (job.req.bestOf > job.req.n)
    keepBest(job);
  // Counted before anyone waiting hears of it, so that /metrics read after
  // a reply includes it.
  double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - job.arrived).count();
  metrics_.finished(secs, job.promptTokens(), job.completionTokens);
  job.done = true;
  job.cv.notify_all();
}

void Engine::fail(Sequence &s, const std::string &why) {
  {
    std::lock_guard<std::mutex> g(s.job->m);
    if (s.job->error.empty())
      s.job->error = why;
  }
  finish(s);
}

/// Runs a sequence's own work: what it throws ends `s` and its request
/// (500, naming the choice and the error; its sibling choices stop at their
/// next token) and nothing else. True if it threw.
bool Engine::contained(Sequence &s, const std::function<void()> &work) {
  try {
    work();
    return false;
  } catch (const std::exception &e) {
    s.job->cancelled = true;
    fail(s, "choice " + std::to_string(s.choice) + " failed: " + e.what());
    return true;
  }
}

/// contained() for the sequence in `row`, which is freed if it threw.
void Engine::containedRow(int64_t row, const std::function<void()> &work) {
  if (contained(*rows_[row], work))
    rows_[row].reset();
}

void Engine::push(Job &job, int64_t index, std::string delta, std::string finish,
                  std::vector<TokenLogprob> logprobs) {
  if (!job.req.stream)
    return;
  {
    std::lock_guard<std::mutex> g(job.m);
    job.deltas.push_back({index, std::move(delta), std::move(finish), std::move(logprobs)});
  }
  job.cv.notify_all();
}

} // namespace fbt
