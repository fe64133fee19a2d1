//===- ServerMetrics.cpp - fbt serve's counters, for /metrics --------------===//

#include "runtime/serve/ServerMetrics.h"

#include "runtime/base/Json.h"

#include <iterator>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace fbt {

void ServerMetrics::request(const std::string &endpoint, int status) {
  std::lock_guard<std::mutex> g(m_);
  ++requests_[{endpoint, status}];
}

void ServerMetrics::limited(const std::string &limit) {
  std::lock_guard<std::mutex> g(m_);
  ++limited_[limit];
}

void ServerMetrics::finished(double seconds, int64_t promptTokens,
                             int64_t completionTokens) {
  std::lock_guard<std::mutex> g(m_);
  size_t b = 0;
  while (b < std::size(kBuckets) && seconds > kBuckets[b])
    ++b;
  ++latency_[b];
  latencySum_ += seconds;
  promptTokens_ += promptTokens;
  completionTokens_ += completionTokens;
}

std::string ServerMetrics::text(int64_t batch) {
  std::lock_guard<std::mutex> g(m_);
  std::string out = "# HELP fbt_requests_total HTTP requests by endpoint and status.\n"
                    "# TYPE fbt_requests_total counter\n";
  for (const auto &[key, n] : requests_)
    out += "fbt_requests_total{endpoint=\"" + key.first + "\",status=\"" +
           std::to_string(key.second) + "\"} " + std::to_string(n) + "\n";
  out += "# HELP fbt_limited_total Requests refused or stopped by a limit of the server.\n"
         "# TYPE fbt_limited_total counter\n";
  for (const auto &[limit, n] : limited_)
    out += "fbt_limited_total{limit=\"" + limit + "\"} " + std::to_string(n) + "\n";
  // One sample per metric: its HELP and TYPE lines, then its value.
  auto metric = [&](const char *name, const char *type, const char *help,
                    const std::string &value) {
    out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type +
           "\n" + name + " " + value + "\n";
  };
  auto n = [](int64_t v) { return std::to_string(v); };
  metric("fbt_prompt_tokens_total", "counter", "Prompt tokens of finished requests.",
         n(promptTokens_));
  metric("fbt_completion_tokens_total", "counter", "Generated tokens.", n(completionTokens_));
  metric("fbt_queue_depth", "gauge", "Requests waiting for the engine.", n(queued));
  metric("fbt_batch_occupancy", "gauge", "Decode batch rows in use, of the batch.",
         std::to_string((double)busyRows / batch));
  metric("fbt_batch_rows", "gauge", "Rows of the compiled decode step.", n(batch));
  metric("fbt_decode_steps_total", "counter", "Decode steps taken.", n(steps));
  metric("fbt_decode_row_steps_total", "counter", "Busy rows summed over decode steps.",
         n(rowSteps));
  metric("fbt_connections", "gauge", "HTTP connections open.", n(connections));
  metric("fbt_connections_total", "counter", "HTTP connections accepted.",
         n(connectionsTotal));
  metric("fbt_prefix_cache_hits_total", "counter", "Prompts whose prefill was restored.",
         n(cacheHits));
  metric("fbt_prefix_cache_misses_total", "counter", "Prompts prefilled.", n(cacheMisses));
  metric("fbt_grammars_compiled_total", "counter",
         "Response formats compiled into grammars (one seen before is reused).",
         n(grammarsCompiled));
#if defined(__GLIBC__)
  // Live allocations, not RSS: the allocator keeps freed pages, so RSS
  // follows the peak of concurrent work, while this returns to its idle
  // level after a burst unless something leaks.
  struct mallinfo2 heap = mallinfo2();
  metric("fbt_heap_bytes", "gauge", "Bytes of live heap allocations (glibc mallinfo2).",
         std::to_string(heap.uordblks + heap.hblkhd));
#endif
  out += "# HELP fbt_request_seconds Time from arrival to the last token.\n"
         "# TYPE fbt_request_seconds histogram\n";
  int64_t cumulative = 0;
  for (size_t b = 0; b <= std::size(kBuckets); ++b) {
    cumulative += latency_[b];
    std::string le = b < std::size(kBuckets) ? dumpJson(Json(kBuckets[b])) : "+Inf";
    out += "fbt_request_seconds_bucket{le=\"" + le + "\"} " + std::to_string(cumulative) +
           "\n";
  }
  out += "fbt_request_seconds_sum " + dumpJson(Json(latencySum_)) + "\n" +
         "fbt_request_seconds_count " + std::to_string(cumulative) + "\n";
  return out;
}

} // namespace fbt
