//===- Job.h - a generation request in flight ----------------------*- C++ -*-===//
//
// What the serving engine (Engine.h) and the HTTP side share for one
// request: the engine appends each choice's text as it is sampled and
// records the choice when it ends; the HTTP side waits for the whole reply
// or takes the streamed pieces as server-sent events. A client that goes
// away cancels the job, and the engine stops its choices at their next
// token.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_SERVE_JOB_H
#define FBT_RUNTIME_SERVE_JOB_H

#include "runtime/serve/Protocol.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace fbt {

struct Job {
  GenerationRequest req;
  std::vector<int32_t> prompt; ///< the document separator, then the prompt's ids
  /// response_format's grammar (JSON output), shared by the cache; null:
  /// free text.
  std::shared_ptr<const Grammar> grammar;
  /// echo: the prompt's tokens scored (where log-probabilities are asked),
  /// each predicted by plain prefill of the tokens before it; engine thread.
  std::vector<TokenLogprob> promptLogprobs;
  std::string id;              ///< "cmpl-..." or "chatcmpl-..."
  int64_t created = 0;         ///< Unix seconds
  std::chrono::steady_clock::time_point arrived = std::chrono::steady_clock::now();

  std::mutex m;
  std::condition_variable cv;
  struct Delta {
    int64_t index;
    std::string text, finish;
    std::vector<TokenLogprob> logprobs; ///< the tokens since the last delta
  };
  std::deque<Delta> deltas;    ///< streamed pieces not yet sent
  std::vector<Choice> choices; ///< by index, as each ends
  /// Per candidate, the mean log-probability of its tokens (best_of ranks
  /// the candidates by it).
  std::vector<double> meanLogprobs;
  int64_t finishedChoices = 0;
  int64_t completionTokens = 0;
  bool done = false;
  std::string error;     ///< the engine's failure, if any
  int errorStatus = 500; ///< its HTTP status (504: over --request-timeout)
  std::atomic<bool> cancelled{false};

  /// The prompt's tokens as the API counts them (without the separator).
  int64_t promptTokens() const { return (int64_t)prompt.size() - 1; }

  /// The engine's failure as the reply's error (500, or 504 past
  /// --request-timeout).
  ApiError failure() const;

  /// Waits until every choice has ended; the reply's JSON body, or an
  /// ApiError (500) with the engine's failure.
  std::string waitForReply();

  /// Streaming: waits up to `timeout` for pieces, and returns them as
  /// server-sent events ("data: {chunk}\n\n" each); once the job is done and
  /// every piece taken, the last event ("data: [DONE]", or the error) is
  /// added and `ended` set.
  std::string takeEvents(std::chrono::milliseconds timeout, bool &ended);

private:
  std::vector<bool> started_; ///< choices whose first chunk was sent
};

} // namespace fbt

#endif // FBT_RUNTIME_SERVE_JOB_H
