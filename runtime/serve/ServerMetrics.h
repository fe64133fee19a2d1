//===- ServerMetrics.h - fbt serve's counters, for /metrics -------*- C++ -*-===//
//
// Requests by endpoint and status, tokens, the queue, the decode batch's
// occupancy, the prefix cache, the live heap and a latency histogram, written as
// Prometheus text (exposition format 0.0.4). The HTTP side counts
// requests, the engine the rest; every member is safe to update from any
// thread.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_SERVE_SERVERMETRICS_H
#define FBT_RUNTIME_SERVE_SERVERMETRICS_H

#include <atomic>
#include <cstdint>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <vector>

namespace fbt {

class ServerMetrics {
public:
  /// Upper bounds (seconds) of the latency histogram's buckets; +Inf last.
  static constexpr double kBuckets[] = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};

  /// An HTTP request answered.
  void request(const std::string &endpoint, int status);
  /// A request whose every choice has ended, `seconds` after it arrived.
  void finished(double seconds, int64_t promptTokens, int64_t completionTokens);
  /// A request refused or stopped by one of the server's limits ("body",
  /// "max_tokens", "n", "request_timeout", "api_key").
  void limited(const std::string &limit);
  /// The Prometheus text; `batch`: the rows of the compiled decode step.
  std::string text(int64_t batch);

  std::atomic<int64_t> queued{0}, busyRows{0}, cacheHits{0}, cacheMisses{0};
  /// Decode steps taken, and the busy rows summed over them: their ratio
  /// over the batch is the mean occupancy.
  std::atomic<int64_t> steps{0}, rowSteps{0};
  /// HTTP connections open now, and accepted in all.
  std::atomic<int64_t> connections{0}, connectionsTotal{0};
  /// response_format: grammars compiled (a format seen before reuses its).
  std::atomic<int64_t> grammarsCompiled{0};

private:
  std::mutex m_;
  std::map<std::pair<std::string, int>, int64_t> requests_; // (endpoint, status)
  std::map<std::string, int64_t> limited_;
  int64_t promptTokens_ = 0, completionTokens_ = 0;
  std::vector<int64_t> latency_ = std::vector<int64_t>(std::size(kBuckets) + 1, 0);
  double latencySum_ = 0;
};

} // namespace fbt

#endif // FBT_RUNTIME_SERVE_SERVERMETRICS_H
