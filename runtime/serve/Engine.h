//===- Engine.h - continuous batching over the compiled decode step -*- C++ -*-===//
//
// fbt serve without the HTTP. One engine thread owns the decoder and
// batches requests continuously: each of a request's n choices is a
// sequence that takes a row of the decode batch when one is free, decodes
// one token per step beside the others, each row in its own regime and with
// its own sampling, and frees the row when it ends. Jobs (Job.h) carry the
// results back to whichever thread waits for them. The decoder keeps the
// last `prefixCache` prefills (Decoder::setPrefillCache).
//
// Prompts are prefilled in pieces beside the running rows (chunked
// prefill, where the bundle has mixed steps): while any row is joining,
// each step carries every running row's next token and, oldest joining row
// first, as many prompt tokens as the largest mixed step has room for. So
// a running row waits at most one such step for its next token, and
// joining prompts share their steps, whatever their lengths. A fused:N
// prompt goes through them N times, pass after pass, each pass's tokens
// fed the states of the pass before (as prefill_fused feeds them). Without
// mixed steps (a decode batch of one) a prompt is prefilled into its row
// alone (Decoder::admit).
//
// What a sequence's own work throws (its grammar, its sampling, its text)
// ends that sequence and its request alone, with a 500 naming the error;
// the rows beside it go on. Only a failed step of the decoder itself fails
// every sequence in flight.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_SERVE_ENGINE_H
#define FBT_RUNTIME_SERVE_ENGINE_H

#include "runtime/decode/Constraint.h"
#include "runtime/decode/Decoder.h"
#include "runtime/decode/FusedPrefill.h"
#include "runtime/serve/Job.h"
#include "runtime/serve/ServerMetrics.h"

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>

namespace fbt {

struct EngineOptions {
  std::string model;     ///< the model's name in the API
  Regime defaultRegime;  ///< for requests that name none
  size_t maxQueue = 64;  ///< requests waiting at most
  size_t prefixCache = 64;
  int64_t maxTokens = 0;      ///< max_tokens at most (0: the context's room)
  int64_t maxChoices = 8;     ///< n and best_of at most
  double requestTimeout = 0;  ///< seconds a request may run (0: no limit)
  /// response_format: the grammar's work per token at most (GrammarBudget);
  /// past it the request ends with an error, and no other does.
  int64_t grammarWork = Constraint::kWorkPerToken;
};

class Engine {
public:
  /// Starts the engine thread; `session` and `metrics` must outlive it.
  Engine(Session &session, EngineOptions options, ServerMetrics &metrics);
  /// Finishes what is queued and running, then stops the thread.
  ~Engine();
  Engine(const Engine &) = delete;
  Engine &operator=(const Engine &) = delete;

  /// A request body (POST /v1/completions, or /v1/chat/completions when
  /// `chat`) as a job ready to submit: parsed, its model checked, its
  /// prompt tokenized. Throws ApiError (400, 404) naming what is wrong.
  std::shared_ptr<Job> prepare(const std::string &body, bool chat) const;
  /// Queues `job`; false if the queue is full.
  bool submit(std::shared_ptr<Job> job);
  /// No request queued or running.
  bool idle();

  const EngineOptions &options() const { return options_; }
  int64_t batch() const { return decoder_.batchSize(); }

private:
  struct Sequence {
    std::shared_ptr<Job> job;
    int64_t choice = 0;
    SamplingOptions sampling;
    std::vector<int32_t> ids; ///< generated, for the text
    std::string text, finish = "length";
    int32_t next = 0;     ///< the token the next step feeds
    int32_t position = 0; ///< where it goes
    int64_t produced = 0, maxNew = 0;
    bool done = false;
    /// Joining through mixed steps: the admission order (the oldest joining
    /// row's prompt goes first) and its prompt's passes so far (fused:N's
    /// N, else one).
    bool joining = false;
    uint64_t order = 0;
    std::optional<FusedPrefill> prefill;
    /// Penalties and log-probabilities: how often each token was generated,
    /// the token choose() picked with its log-probability, every generated
    /// token's (where the request scores them), how many of those were
    /// streamed, and their sum.
    TokenCounts counts;
    std::optional<ChosenLogprob> chosen;
    std::vector<TokenLogprob> logged;
    size_t streamed = 0;
    int64_t offset = 0;
    double sumLogprob = 0;
    int64_t scored = 0;
    /// response_format: where the text stands in its grammar.
    std::optional<Constraint> constraint;
  };

  void loop();
  int64_t active() const;
  void checkLimits(const GenerationRequest &req) const;
  void prepareFormat(Job &job) const;
  std::shared_ptr<const TokenTrie> vocabulary() const;
  void scorePrompt(Job &job);
  void startEcho(Sequence &s);
  Choice echoed(const Job &job, Choice c) const;
  void expireOld();
  void timeOut(Sequence &s, const std::string &why);
  Sequence makeSequence(const std::shared_ptr<Job> &job, int64_t choice);
  void admitPending();
  void stepAll();
  void mixedStep();
  void joined(int64_t row, int64_t first, int64_t n, const std::vector<float> &states);
  void advance(Sequence &s, int64_t row);
  int32_t choose(Sequence &s, const float *logits, uint64_t counter);
  bool take(Sequence &s, int32_t id);
  void logToken(Sequence &s, int32_t id);
  std::vector<TokenLogprob> unsent(Sequence &s);
  void extend(Sequence &s, const std::string &now);
  void finish(Sequence &s);
  void fail(Sequence &s, const std::string &why);
  bool contained(Sequence &s, const std::function<void()> &work);
  void containedRow(int64_t row, const std::function<void()> &work);
  void push(Job &job, int64_t index, std::string delta, std::string finish,
            std::vector<TokenLogprob> logprobs);

  Session &session_;
  Decoder decoder_;
  /// echo's prompt scores: a decoder of its own, so that scoring a prompt
  /// one token at a time never touches the batch's rows (engine thread).
  std::unique_ptr<Decoder> scorer_;
  const Tokenizer &tok_;
  EngineOptions options_;
  ServerMetrics &metrics_;
  /// response_format's grammars, and the vocabulary's trie they are walked
  /// with (built at the first constrained request).
  mutable GrammarCache grammars_;
  mutable std::mutex vocabularyM_;
  mutable std::shared_ptr<const TokenTrie> vocabulary_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  std::deque<Sequence> pending_;              ///< engine thread only
  std::vector<std::optional<Sequence>> rows_; ///< engine thread only
  bool busy_ = false, stopping_ = false;
  uint64_t admitted_ = 0; ///< engine thread only
  std::thread worker_;
};

} // namespace fbt

#endif // FBT_RUNTIME_SERVE_ENGINE_H
