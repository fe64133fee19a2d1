//===- Job.cpp - a generation request in flight ----------------------------===//

#include "runtime/serve/Job.h"

namespace fbt {

ApiError Job::failure() const {
  return ApiError{errorStatus, error, "", errorStatus == 504 ? "timeout" : "server_error"};
}

std::string Job::waitForReply() {
  std::unique_lock<std::mutex> l(m);
  cv.wait(l, [&] { return done; });
  if (!error.empty())
    throw failure();
  return replyJson(req, id, created, choices, promptTokens(), completionTokens);
}

std::string Job::takeEvents(std::chrono::milliseconds timeout, bool &ended) {
  std::unique_lock<std::mutex> l(m);
  cv.wait_for(l, timeout, [&] { return done || !deltas.empty(); });
  started_.resize(req.n, false);
  std::string events;
  while (!deltas.empty()) {
    Delta d = std::move(deltas.front());
    deltas.pop_front();
    events += "data: " +
              chunkJson(req, id, created, d.index, d.text, d.finish, !started_[d.index],
                        d.logprobs) +
              "\n\n";
    started_[d.index] = true;
  }
  ended = done;
  if (ended && error.empty() && req.streamUsage)
    events += "data: " +
              usageChunkJson(req, id, created, promptTokens(), completionTokens) +
              "\n\n";
  if (ended)
    events += error.empty() ? "data: [DONE]\n\n"
                            : "data: " + failure().body() + "\n\n";
  return events;
}

} // namespace fbt
