//===- CmdServe.cpp - fbt serve: an OpenAI-compatible HTTP server ----------===//
//
//   fbt serve BUNDLE --ckpt C [--host 127.0.0.1] [--port 8000] [--mode soft]
//
// POST /v1/completions and /v1/chat/completions (runtime/serve/Protocol.h: fields,
// chat template, errors; "stream": true as server-sent events), GET
// /v1/models, /health, and /metrics (Prometheus text).
//
// One engine thread owns the compiled decoder and batches requests
// continuously (Engine): each choice takes a row of the decode batch when
// one is free and leaves it when it ends; HTTP threads parse, queue and
// stream. A full queue (--max-queue) answers 429; a client
// that goes away stops its generation at the next token; SIGTERM or SIGINT
// stops taking requests (503), finishes those in flight, and exits 0. The
// decoder keeps the last --prefix-cache prefills (Decoder::setPrefillCache).
//
//===----------------------------------------------------------------------===//

#include "CommandLine.h"
#include "Commands.h"

#include "runtime/decode/Decoder.h"
#include "runtime/base/Error.h"
#include "runtime/serve/Protocol.h"
#include "runtime/text/Tokenizer.h"

#include <httplib.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <deque>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

namespace fbt {

namespace {

std::atomic<bool> gStopRequested{false};
extern "C" void onStopSignal(int) { gStopRequested = true; }

/// A request in flight: what the engine produces, and what the HTTP side
/// waits for.
struct Job {
  GenerationRequest req;
  std::vector<int32_t> prompt;
  std::string id;
  int64_t created = 0;
  std::chrono::steady_clock::time_point arrived = std::chrono::steady_clock::now();

  std::mutex m;
  std::condition_variable cv;
  struct Delta {
    int64_t index;
    std::string text, finish;
  };
  std::deque<Delta> deltas; ///< streamed pieces not yet sent
  std::vector<Choice> choices; ///< by index, as each ends
  int64_t finishedChoices = 0;
  int64_t completionTokens = 0;
  bool done = false;
  std::string error;
  std::atomic<bool> cancelled{false};
};

/// Prometheus counters and histograms.
struct Metrics {
  std::mutex m;
  std::map<std::pair<std::string, int>, int64_t> requests; // (endpoint, status)
  int64_t promptTokens = 0, completionTokens = 0;
  static constexpr double kBuckets[] = {0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60};
  std::vector<int64_t> latency = std::vector<int64_t>(std::size(kBuckets) + 1, 0);
  double latencySum = 0;
  std::atomic<int64_t> queued{0}, busyRows{0}, cacheHits{0}, cacheMisses{0};
  /// Decode steps taken, and the busy rows summed over them: their ratio
  /// over the batch is the mean occupancy.
  std::atomic<int64_t> steps{0}, rowSteps{0};

  void request(const std::string &endpoint, int status) {
    std::lock_guard<std::mutex> g(m);
    ++requests[{endpoint, status}];
  }
  void finished(double seconds, int64_t prompt, int64_t completion) {
    std::lock_guard<std::mutex> g(m);
    size_t b = 0;
    while (b < std::size(kBuckets) && seconds > kBuckets[b])
      ++b;
    ++latency[b];
    latencySum += seconds;
    promptTokens += prompt;
    completionTokens += completion;
  }
  std::string text(int64_t batch) {
    std::lock_guard<std::mutex> g(m);
    std::string out =
        "# HELP fbt_requests_total HTTP requests by endpoint and status.\n"
        "# TYPE fbt_requests_total counter\n";
    for (const auto &[key, n] : requests)
      out += "fbt_requests_total{endpoint=\"" + key.first + "\",status=\"" +
             std::to_string(key.second) + "\"} " + std::to_string(n) + "\n";
    // One sample per metric: its HELP and TYPE lines, then its value.
    auto metric = [&](const char *name, const char *type, const char *help,
                      const std::string &value) {
      out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type +
             "\n" + name + " " + value + "\n";
    };
    auto n = [](int64_t v) { return std::to_string(v); };
    metric("fbt_prompt_tokens_total", "counter", "Prompt tokens of finished requests.",
           n(promptTokens));
    metric("fbt_completion_tokens_total", "counter", "Generated tokens.", n(completionTokens));
    metric("fbt_queue_depth", "gauge", "Requests waiting for the engine.", n(queued));
    metric("fbt_batch_occupancy", "gauge", "Decode batch rows in use, of the batch.",
           std::to_string((double)busyRows / batch));
    metric("fbt_batch_rows", "gauge", "Rows of the compiled decode step.", n(batch));
    metric("fbt_decode_steps_total", "counter", "Decode steps taken.", n(steps));
    metric("fbt_decode_row_steps_total", "counter", "Busy rows summed over decode steps.",
           n(rowSteps));
    metric("fbt_prefix_cache_hits_total", "counter", "Prompts whose prefill was restored.",
           n(cacheHits));
    metric("fbt_prefix_cache_misses_total", "counter", "Prompts prefilled.", n(cacheMisses));
    out += "# HELP fbt_request_seconds Time from arrival to the last token.\n"
           "# TYPE fbt_request_seconds histogram\n";
    int64_t cumulative = 0;
    for (size_t b = 0; b <= std::size(kBuckets); ++b) {
      cumulative += latency[b];
      std::string le = b < std::size(kBuckets) ? dumpJson(Json(kBuckets[b])) : "+Inf";
      out += "fbt_request_seconds_bucket{le=\"" + le + "\"} " +
             std::to_string(cumulative) + "\n";
    }
    out += "fbt_request_seconds_sum " + dumpJson(Json(latencySum)) + "\n" +
           "fbt_request_seconds_count " + std::to_string(cumulative) + "\n";
    return out;
  }
};

/// Continuous batching over the compiled decode step: each of a request's
/// n choices is a sequence that takes a row of the decode batch when one is
/// free (its prompt prefilled into that row alone, Decoder::admit), decodes
/// one token per step beside the others, each row in its own regime and
/// with its own sampling, and frees the row when it ends.
class Engine {
public:
  Engine(Session &session, size_t maxQueue, size_t prefixCache, Metrics &metrics)
      : decoder_(session), tok_(session.tokenizer()), maxQueue_(maxQueue),
        metrics_(metrics), rows_(decoder_.batchSize()) {
    decoder_.setPrefillCache(prefixCache);
    worker_ = std::thread([this] { loop(); });
  }
  ~Engine() {
    {
      std::lock_guard<std::mutex> g(m_);
      stopping_ = true;
    }
    cv_.notify_all();
    worker_.join();
  }

  const Tokenizer &tokenizer() const { return tok_; }
  int64_t batch() const { return decoder_.batchSize(); }
  int64_t maxPrompt() const { return decoder_.maxPrompt(); }

  /// Queues `job`; false if the queue is full.
  bool submit(std::shared_ptr<Job> job) {
    std::lock_guard<std::mutex> g(m_);
    if (queue_.size() >= maxQueue_)
      return false;
    job->choices.resize(job->req.n);
    queue_.push_back(std::move(job));
    metrics_.queued = queue_.size();
    cv_.notify_one();
    return true;
  }
  /// No request queued or running.
  bool idle() {
    std::lock_guard<std::mutex> g(m_);
    return queue_.empty() && !busy_;
  }

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
  };

  void loop() {
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
          for (int64_t c = 0; c < job->req.n; ++c)
            pending_.push_back(makeSequence(job, c));
        }
        metrics_.queued = queue_.size();
        busy_ = true;
      }
      try {
        admitPending();
        if (active() > 0)
          stepAll();
      } catch (const std::exception &e) { // fails every sequence in flight
        for (auto &row : rows_)
          if (row)
            fail(*row, e.what()), row.reset();
        for (Sequence &s : pending_)
          fail(s, e.what());
        pending_.clear();
      }
      metrics_.busyRows = active();
      metrics_.cacheHits = decoder_.prefillCacheHits();
      metrics_.cacheMisses = decoder_.prefillCacheMisses();
      std::lock_guard<std::mutex> g(m_);
      busy_ = active() > 0 || !pending_.empty();
    }
  }

  int64_t active() const {
    int64_t n = 0;
    for (const auto &row : rows_)
      n += row.has_value();
    return n;
  }

  Sequence makeSequence(const std::shared_ptr<Job> &job, int64_t choice) {
    Sequence s;
    s.job = job;
    s.choice = choice;
    s.sampling = job->req.sampling;
    s.sampling.seed += (uint64_t)choice;
    int64_t room = decoder_.maxSequence() - (int64_t)job->prompt.size();
    s.maxNew = std::min<int64_t>(job->req.maxTokens, std::max<int64_t>(room, 0));
    s.position = (int32_t)job->prompt.size();
    return s;
  }

  /// Prefills waiting sequences into free rows and chooses their first token.
  void admitPending() {
    for (size_t r = 0; r < rows_.size(); ++r)
      while (!rows_[r] && !pending_.empty()) {
        Sequence s = std::move(pending_.front());
        pending_.pop_front();
        if (s.job->cancelled || s.maxNew == 0) {
          finish(s);
          continue;
        }
        decoder_.admit((int64_t)r, s.job->prompt, s.job->req.regime);
        if (take(s, decoder_.sample(decoder_.logits(r), s.sampling, 0)))
          rows_[r] = std::move(s);
      }
  }

  void stepAll() {
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
      if (rows_[r]) {
        Sequence &s = *rows_[r];
        ++s.position;
        if (!take(s, decoder_.sample(decoder_.logits(r), s.sampling, (uint64_t)s.produced)))
          rows_[r].reset();
      }
  }

  /// Takes sequence `s`'s next token `id`; false once `s` has ended (then
  /// its choice is recorded).
  bool take(Sequence &s, int32_t id) {
    Job &job = *s.job;
    if (job.cancelled)
      return finish(s), false;
    ++s.produced;
    {
      std::lock_guard<std::mutex> g(job.m);
      ++job.completionTokens;
    }
    if (id == tok_.documentSeparator()) {
      s.finish = "stop";
      return finish(s), false;
    }
    s.ids.push_back(id);
    std::string now = utf8Text(tok_.decode(s.ids), false);
    size_t cut = stopAt(now, job.req);
    bool stopped = cut != std::string::npos;
    if (stopped)
      now.resize(cut), s.finish = "stop";
    extend(s, now);
    if (stopped)
      return finish(s), false;
    if (s.produced >= s.maxNew || s.position + 1 >= decoder_.maxSequence()) {
      extend(s, utf8Text(tok_.decode(s.ids), true)); // a character left incomplete
      return finish(s), false;
    }
    s.next = id;
    return true;
  }

  /// Sends what `now` adds to the text sent so far.
  void extend(Sequence &s, const std::string &now) {
    if (now.size() > s.text.size() && now.compare(0, s.text.size(), s.text) == 0) {
      push(*s.job, s.choice, now.substr(s.text.size()), "");
      s.text = now;
    }
  }

  void finish(Sequence &s) {
    if (s.done)
      return;
    s.done = true;
    push(*s.job, s.choice, "", s.finish);
    Job &job = *s.job;
    bool all;
    {
      std::lock_guard<std::mutex> g(job.m);
      job.choices[s.choice] = {s.text, s.finish};
      all = ++job.finishedChoices == job.req.n;
      if (all)
        job.done = true;
    }
    if (all) {
      job.cv.notify_all();
      double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                                  job.arrived)
                        .count();
      metrics_.finished(secs, (int64_t)job.prompt.size() - 1, job.completionTokens);
    }
  }

  void fail(Sequence &s, const std::string &why) {
    {
      std::lock_guard<std::mutex> g(s.job->m);
      if (s.job->error.empty())
        s.job->error = why;
    }
    finish(s);
  }

  void push(Job &job, int64_t index, std::string delta, std::string finish) {
    if (!job.req.stream)
      return;
    {
      std::lock_guard<std::mutex> g(job.m);
      job.deltas.push_back({index, std::move(delta), std::move(finish)});
    }
    job.cv.notify_all();
  }

  Decoder decoder_;
  const Tokenizer &tok_;
  size_t maxQueue_;
  Metrics &metrics_;
  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  std::deque<Sequence> pending_;              ///< engine thread only
  std::vector<std::optional<Sequence>> rows_; ///< engine thread only
  bool busy_ = false, stopping_ = false;
  std::thread worker_;
};

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

void sendError(httplib::Response &res, const ApiError &e) {
  res.status = e.status;
  res.set_content(e.body(), "application/json");
}
} // namespace

int runServe(int argc, char **argv) {
  CommandLine args("fbt serve", "Serves the model over HTTP, OpenAI-compatible.");
  args.positional("BUNDLE", "the compiled bundle")
      .tunable()
      .text("ckpt", "CKPT", "a checkpoint from fbt train (required)")
      .text("host", "HOST", "the address to listen on (default 127.0.0.1)")
      .integer("port", "PORT", "the port to listen on; 0: any free port (default 8000)")
      .text("mode", "MODE",
            "the default regime: standard, soft or fused:N (default soft)")
      .integer("max-queue", "N",
               "requests queued at most; a full queue answers 429 (default 64)")
      .text("model-name", "NAME", "the model's name in the API (default: the bundle's)")
      .text("tokenizer", "T", "the tokenizer to use instead of the run's")
      .integer("prefix-cache", "N",
               "prompts whose prefills are kept: a prompt seen again skips its "
               "prefill, exactly (default 64)")
      .footer("Endpoints:\n"
              "  POST /v1/completions, /v1/chat/completions  (\"stream\": true for\n"
              "       server-sent events; \"regime\": standard|soft|fused:N, default\n"
              "       --mode, itself soft by default)\n"
              "  GET  /v1/models, /health, /metrics (Prometheus)\n"
              "Requests run in arrival order; a full queue answers 429. SIGTERM\n"
              "finishes the requests in flight and exits 0. The prefills of the last\n"
              "--prefix-cache prompts (KV rows, carried state, logits; per regime's\n"
              "prefill) are kept: a prompt seen again skips its prefill, exactly.");
  if (!args.parse(argc, argv))
    return 0;
  if (!args.has("ckpt"))
    throw RuntimeError("--ckpt is required (a checkpoint from fbt train)");
  Session session(args.require("BUNDLE"));
  useTuning(session, args.tuning());
  session.loadCheckpoint(args.get("ckpt"));
  if (args.has("tokenizer"))
    session.setTokenizer(args.get("tokenizer"));
  Regime defaultRegime = Regime::parse(args.get("mode", "soft"));
  std::string model = args.get("model-name", session.model().name);
  int64_t maxQueue = args.getInt("max-queue", 64);
  int64_t prefixCache = args.getInt("prefix-cache", 64);
  int64_t port = args.getInt("port", 8000);
  if (maxQueue < 1 || prefixCache < 0 || port < 0 || port > 65535)
    throw RuntimeError("--max-queue must be >= 1, --prefix-cache >= 0 and --port "
                       "from 0 to 65535");
  std::string host = args.get("host", "127.0.0.1");

  Metrics metrics;
  Engine engine(session, (size_t)maxQueue, (size_t)prefixCache, metrics);
  std::atomic<bool> draining{false};
  httplib::Server server;

  auto generate = [&](const httplib::Request &req, httplib::Response &res, bool chat) {
    const char *endpoint = chat ? "/v1/chat/completions" : "/v1/completions";
    auto finish = [&](int status) { metrics.request(endpoint, status); };
    if (draining) {
      sendError(res, {503, "the server is shutting down", "", "server_error"});
      return finish(503);
    }
    auto job = std::make_shared<Job>();
    try {
      job->req = parseGenerationRequest(req.body, chat, defaultRegime);
    } catch (const ApiError &e) {
      sendError(res, e);
      return finish(e.status);
    }
    if (job->req.model.empty())
      job->req.model = model;
    else if (job->req.model != model) {
      sendError(res, {404, "model '" + job->req.model + "' is not served here (this "
                      "server serves '" + model + "')", "model", "invalid_request_error"});
      return finish(404);
    }
    try {
      job->prompt = {engine.tokenizer().documentSeparator()};
      std::vector<int32_t> body = engine.tokenizer().encode(job->req.prompt);
      job->prompt.insert(job->prompt.end(), body.begin(), body.end());
    } catch (const RuntimeError &e) {
      sendError(res, {400, std::string("the prompt cannot be tokenized: ") + e.what(),
                      chat ? "messages" : "prompt"});
      return finish(400);
    }
    if ((int64_t)job->prompt.size() > engine.maxPrompt()) {
      sendError(res, {400, "the prompt has " + std::to_string(job->prompt.size()) +
                               " tokens; this model takes at most " +
                               std::to_string(engine.maxPrompt()),
                      chat ? "messages" : "prompt"});
      return finish(400);
    }
    job->id = requestId(chat);
    job->created = std::chrono::duration_cast<std::chrono::seconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
    if (!engine.submit(job)) {
      sendError(res, {429, "the server is busy (the queue is full); retry later", "",
                      "rate_limit_error"});
      return finish(429);
    }
    finish(200);
    if (!job->req.stream) {
      std::unique_lock<std::mutex> l(job->m);
      job->cv.wait(l, [&] { return job->done; });
      if (!job->error.empty()) {
        l.unlock();
        sendError(res, {500, job->error, "", "server_error"});
        return;
      }
      res.set_content(replyJson(job->req, job->id, job->created, job->choices,
                                (int64_t)job->prompt.size() - 1, job->completionTokens),
                      "application/json");
      return;
    }
    std::vector<bool> started(job->req.n, false);
    res.set_chunked_content_provider(
        "text/event-stream", [job, started](size_t, httplib::DataSink &sink) mutable {
          std::unique_lock<std::mutex> l(job->m);
          job->cv.wait_for(l, std::chrono::milliseconds(200),
                           [&] { return job->done || !job->deltas.empty(); });
          while (!job->deltas.empty()) {
            Job::Delta d = std::move(job->deltas.front());
            job->deltas.pop_front();
            std::string event = "data: " +
                                chunkJson(job->req, job->id, job->created, d.index,
                                          d.text, d.finish, !started[d.index]) +
                                "\n\n";
            started[d.index] = true;
            if (!sink.write(event.data(), event.size())) {
              job->cancelled = true; // the client went away
              return false;
            }
          }
          if (!sink.is_writable()) {
            job->cancelled = true;
            return false;
          }
          if (job->done && job->deltas.empty()) {
            std::string end = job->error.empty()
                                  ? "data: [DONE]\n\n"
                                  : "data: " + ApiError{500, job->error, "", "server_error"}.body() +
                                        "\n\n";
            sink.write(end.data(), end.size());
            sink.done();
          }
          return true;
        });
  };

  server.Post("/v1/completions", [&](const httplib::Request &req, httplib::Response &res) {
    generate(req, res, false);
  });
  server.Post("/v1/chat/completions",
              [&](const httplib::Request &req, httplib::Response &res) {
                generate(req, res, true);
              });
  server.Get("/v1/models", [&](const httplib::Request &, httplib::Response &res) {
    metrics.request("/v1/models", 200);
    Json card = Json::object({{"id", model},
                              {"object", "model"},
                              {"created", (int64_t)0},
                              {"owned_by", "fbt"}});
    res.set_content(
        dumpJson(Json::object({{"object", "list"}, {"data", Json::array({card})}})),
        "application/json");
  });
  server.Get("/health", [&](const httplib::Request &, httplib::Response &res) {
    res.status = draining ? 503 : 200;
    res.set_content(draining ? "{\"status\": \"draining\"}" : "{\"status\": \"ok\"}",
                    "application/json");
  });
  server.Get("/metrics", [&](const httplib::Request &, httplib::Response &res) {
    res.set_content(metrics.text(engine.batch()), "text/plain; version=0.0.4");
  });
  server.set_error_handler([&](const httplib::Request &, httplib::Response &res) {
    if (res.body.empty())
      res.set_content(ApiError{res.status, "no such endpoint or method", "",
                               "invalid_request_error"}
                          .body(),
                      "application/json");
  });

  // Stop on SIGTERM/SIGINT: refuse new requests, finish the running ones.
  struct sigaction sa = {};
  sa.sa_handler = onStopSignal;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  std::thread watcher([&] {
    while (!gStopRequested)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    draining = true;
    while (!engine.idle())
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    server.stop();
  });

  // --port 0: any free port (named on stderr).
  if (port == 0)
    port = server.bind_to_any_port(host.c_str());
  if (port <= 0 || (args.getInt("port", 8000) != 0 &&
                    !server.bind_to_port(host.c_str(), (int)port))) {
    gStopRequested = true;
    watcher.join();
    throw RuntimeError("cannot listen on " + host + ":" + std::to_string(port) +
                       " (in use, or not an address of this machine)");
  }
  std::fprintf(stderr, "fbt: serving '%s' (%s regime by default, tokenizer %s, "
                       "%lld decode rows) on http://%s:%lld/v1\n",
               model.c_str(), defaultRegime.name().c_str(),
               session.tokenizerName().c_str(),
               (long long)session.model().inference.batchSize,
               host.c_str(), (long long)port);
  server.listen_after_bind();
  gStopRequested = true;
  watcher.join();
  std::fputs("fbt: stopped\n", stderr);
  return 0;
}

} // namespace fbt
