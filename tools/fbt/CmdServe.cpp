//===- CmdServe.cpp - fbt serve: an OpenAI-compatible HTTP server ----------===//
//
//   fbt serve BUNDLE --ckpt C [--host 127.0.0.1] [--port 8000] [--mode soft]
//                    [--api-key KEY | --api-key-file FILE] [--max-body-bytes N]
//                    [--max-tokens N] [--max-n N] [--grammar-work N] [--request-timeout S]
//                    [--max-connections N] [--idle-timeout S]
//
// The options and the HTTP routes; the engine, its jobs and its metrics are
// runtime/serve's. POST /v1/completions and /v1/chat/completions
// (runtime/serve/Protocol.h; "stream": true as server-sent events), GET
// /v1/models, /health, and /metrics (Prometheus text). A full queue
// (--max-queue) answers 429; a client that goes away stops its generation
// at the next token; SIGTERM or SIGINT stops taking requests (503),
// finishes those in flight, and exits 0. With API keys (runtime/serve/
// ApiKeys.h) a request without one answers 401 before any route. Each
// limit answers with its own error (413, 400 naming the field, 504) and
// counts in fbt_limited_total{limit}.
//
//===----------------------------------------------------------------------===//

#include "CommandLine.h"
#include "Commands.h"

#include "runtime/base/Error.h"
#include "runtime/serve/ApiKeys.h"
#include "runtime/serve/Engine.h"

#include <httplib.h>

#include <atomic>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <thread>

namespace fbt {

namespace {
std::atomic<bool> gStopRequested{false};
extern "C" void onStopSignal(int) { gStopRequested = true; }

void sendError(httplib::Response &res, const ApiError &e) {
  res.status = e.status;
  res.set_content(e.body(), "application/json");
}

/// The keys --api-key, --api-key-file and FBT_API_KEY give (none: open).
ApiKeys apiKeys(const CommandLine &args) {
  std::vector<std::string> keys;
  if (args.has("api-key"))
    keys.push_back(args.get("api-key"));
  if (const char *env = std::getenv("FBT_API_KEY"); env && *env)
    keys.push_back(env);
  return ApiKeys::of(keys, args.get("api-key-file"));
}

/// httplib's pool of connection threads, counting the connections it serves
/// for /metrics: --max-connections threads, each serving one connection
/// until it closes (--idle-timeout closes kept-alive ones left idle).
class ConnectionPool : public httplib::TaskQueue {
public:
  ConnectionPool(size_t threads, ServerMetrics &metrics) : pool_(threads), metrics_(metrics) {}
  void enqueue(std::function<void()> fn) override {
    ++metrics_.connectionsTotal;
    pool_.enqueue([this, fn = std::move(fn)] {
      ++metrics_.connections;
      fn();
      --metrics_.connections;
    });
  }
  void shutdown() override { pool_.shutdown(); }

private:
  httplib::ThreadPool pool_;
  ServerMetrics &metrics_;
};

/// Before any route: a request without one of the keys answers 401, but
/// for /health (and /metrics with --metrics-open), which monitors poll.
void guard(httplib::Server &server, const ApiKeys &keys, bool metricsOpen,
           ServerMetrics &metrics) {
  server.set_pre_routing_handler([&keys, metricsOpen, &metrics](const httplib::Request &req,
                                                                httplib::Response &res) {
    bool open = req.path == "/health" || (metricsOpen && req.path == "/metrics");
    if (open || keys.accepts(req.get_header_value("Authorization")))
      return httplib::Server::HandlerResponse::Unhandled;
    ApiError e{401, "a valid API key is required: send it as \"Authorization: Bearer KEY\"",
               "", "invalid_request_error"};
    sendError(res, e);
    res.set_header("WWW-Authenticate", "Bearer");
    metrics.request(req.path, 401);
    metrics.limited("api_key");
    return httplib::Server::HandlerResponse::Handled;
  });
}

/// POST /v1/completions or /v1/chat/completions: the job's reply, or its
/// server-sent events as the engine produces them.
void generate(Engine &engine, ServerMetrics &metrics, bool draining, const std::string &body,
              httplib::Response &res, bool chat) {
  int status = 200;
  try {
    if (draining)
      throw ApiError{503, "the server is shutting down", "", "server_error"};
    std::shared_ptr<Job> job = engine.prepare(body, chat);
    if (!engine.submit(job))
      throw ApiError{429, "the server is busy (the queue is full); retry later", "",
                     "rate_limit_error"};
    if (!job->req.stream) {
      try {
        res.set_content(job->waitForReply(), "application/json");
      } catch (const ApiError &e) {
        sendError(res, e); // counted as accepted: the failure was the engine's
      }
    } else {
      res.set_chunked_content_provider(
          "text/event-stream", [job](size_t, httplib::DataSink &sink) {
            bool ended = false;
            std::string events = job->takeEvents(std::chrono::milliseconds(200), ended);
            if ((!events.empty() && !sink.write(events.data(), events.size())) ||
                !sink.is_writable()) {
              job->cancelled = true; // the client went away
              return false;
            }
            if (ended)
              sink.done();
            return true;
          });
    }
  } catch (const ApiError &e) {
    sendError(res, e);
    status = e.status;
  }
  metrics.request(chat ? "/v1/chat/completions" : "/v1/completions", status);
}

ApiError bodyTooLarge(int64_t maxBody) {
  return {413, "the request body is over --max-body-bytes (" + std::to_string(maxBody) +
                   " bytes)",
          "", "invalid_request_error"};
}

enum class Body { Read, TooLarge, Incomplete };

/// Reads a request body of at most `limit` bytes into `body`, however it
/// is sent (Content-Length or chunked): reading stops at the first byte
/// over, so a large body costs no more than the limit.
Body readBody(const httplib::Request &req, const httplib::ContentReader &read, size_t limit,
              std::string &body) {
  bool over = false;
  bool whole = read([&](const char *data, size_t n) {
    if (body.size() + n > limit) {
      over = true;
      return false;
    }
    body.append(data, n);
    return true;
  });
  // A Content-Length over the limit is refused before any byte is read.
  const std::string length = req.get_header_value("Content-Length");
  if (over || (!whole && !length.empty() && std::strtoull(length.c_str(), nullptr, 10) > limit))
    return Body::TooLarge;
  return whole ? Body::Read : Body::Incomplete;
}

/// fbt serve's options, for --help and parse.
void declareOptions(CommandLine &args) {
  args.positional("BUNDLE", "the compiled bundle")
      .tunable()
      .text("ckpt", "CKPT", "a checkpoint from fbt train (required)")
      .text("host", "HOST", "the address to listen on (default 127.0.0.1)")
      .integer("port", "PORT", "the port to listen on; 0: any free port (default 8000)")
      .text("mode", "MODE",
            "the default regime: standard, soft or fused:N (default soft; standard "
            "for a model without feedback)")
      .integer("max-queue", "N",
               "requests queued at most; a full queue answers 429 (default 64)")
      .text("model-name", "NAME", "the model's name in the API (default: the bundle's)")
      .text("tokenizer", "T", "the tokenizer to use instead of the run's")
      .text("api-key", "KEY",
            "require \"Authorization: Bearer KEY\" on every request but /health "
            "(also FBT_API_KEY, which keeps the key out of the process list)")
      .text("api-key-file", "FILE", "keys to accept, one per line ('#' comments)")
      .flag("metrics-open", "serve /metrics without a key (for a scraper on the host)")
      .integer("max-body-bytes", "N",
               "a request body over N bytes answers 413 (default 1048576)")
      .integer("prefix-cache", "N",
               "prompts whose prefills are kept: a prompt seen again skips its "
               "prefill, exactly (default 64)")
      .integer("max-tokens", "N",
               "max_tokens above N answers 400 (default: none; the context bounds it)")
      .integer("max-n", "N", "n or best_of above N answers 400 (default 8)")
      .integer("grammar-work", "N",
               "response_format: a grammar's work per token at most (parse positions "
               "reached); a request past it ends with a 500, no other does (default " +
                   std::to_string(Constraint::kWorkPerToken) + ")")
      .number("request-timeout", "S",
              "a request still running after S seconds ends with a 504 (default: none)")
      .integer("max-connections", "N",
               "connections served at once; more wait to be accepted (default 64)")
      .integer("idle-timeout", "S",
               "a kept-alive connection idle for S seconds is closed (default 5)")
      .footer("Endpoints:\n"
              "  POST /v1/completions, /v1/chat/completions  (\"stream\": true for\n"
              "       server-sent events; \"regime\": standard|soft|fused:N, default\n"
              "       --mode, itself soft by default)\n"
              "  GET  /v1/models, /health, /metrics (Prometheus)\n"
              "Requests run in arrival order; a full queue answers 429. SIGTERM\n"
              "finishes the requests in flight and exits 0. The prefills of the last\n"
              "--prefix-cache prompts (KV rows, carried state, logits; per regime's\n"
              "prefill) are kept: a prompt seen again skips its prefill, exactly.");
}

/// What the options say: the engine's options and the server's.
struct ServeOptions {
  EngineOptions engine;
  std::string host;
  int64_t port = 8000;
  int64_t maxBody = 1 << 20;
  int64_t maxConnections = 64;
  int64_t idleTimeout = 5;
};

ServeOptions serveOptions(const CommandLine &args, Session &session) {
  ServeOptions o;
  // Soft unless the model has no feedback path, which decodes only standard.
  bool plain = session.model().feedback.fusion == Fusion::None;
  o.engine.defaultRegime = Regime::parse(args.get("mode", plain ? "standard" : "soft"));
  o.engine.model = args.get("model-name", session.model().name);
  int64_t maxQueue = args.getInt("max-queue", 64);
  int64_t prefixCache = args.getInt("prefix-cache", 64);
  o.port = args.getInt("port", 8000);
  if (maxQueue < 1 || prefixCache < 0 || o.port < 0 || o.port > 65535)
    throw RuntimeError("--max-queue must be >= 1, --prefix-cache >= 0 and --port "
                       "from 0 to 65535");
  o.engine.maxQueue = (size_t)maxQueue;
  o.engine.prefixCache = (size_t)prefixCache;
  o.host = args.get("host", "127.0.0.1");
  o.maxBody = args.getInt("max-body-bytes", 1 << 20);
  o.engine.maxTokens = args.getInt("max-tokens", 0);
  o.engine.maxChoices = args.getInt("max-n", 8);
  o.engine.requestTimeout = args.getDouble("request-timeout", 0);
  o.engine.grammarWork = args.getInt("grammar-work", Constraint::kWorkPerToken);
  if (o.engine.grammarWork < 1)
    throw RuntimeError("--grammar-work must be >= 1, got " +
                       std::to_string(o.engine.grammarWork));
  o.maxConnections = args.getInt("max-connections", 64);
  o.idleTimeout = args.getInt("idle-timeout", 5);
  if (o.maxBody < 1 || o.engine.maxTokens < 0 || o.engine.maxChoices < 1 ||
      o.engine.requestTimeout < 0 || o.maxConnections < 1 || o.idleTimeout < 1)
    throw RuntimeError("--max-body-bytes, --max-n, --max-connections and --idle-timeout "
                       "must be >= 1, --max-tokens and --request-timeout >= 0");
  return o;
}

/// The routes: generation, the model card, health, metrics, and errors in
/// OpenAI's shape.
void addRoutes(httplib::Server &server, Engine &engine, ServerMetrics &metrics,
               const std::atomic<bool> &draining, const ServeOptions &o) {
  for (bool chat : {false, true}) {
    const char *path = chat ? "/v1/chat/completions" : "/v1/completions";
    server.Post(path, [&, chat, path](const httplib::Request &req, httplib::Response &res,
                                      const httplib::ContentReader &read) {
      std::string body;
      Body got = readBody(req, read, (size_t)o.maxBody, body);
      if (got != Body::Read) {
        ApiError e = got == Body::TooLarge
                         ? bodyTooLarge(o.maxBody)
                         : ApiError{400, "the request body ended before its end", "",
                                    "invalid_request_error"};
        if (got == Body::TooLarge)
          metrics.limited("body");
        sendError(res, e);
        res.set_header("Connection", "close"); // the rest of the body is not read
        metrics.request(path, e.status);
        return;
      }
      generate(engine, metrics, draining, body, res, chat);
    });
  }
  server.Get("/v1/models", [&](const httplib::Request &, httplib::Response &res) {
    metrics.request("/v1/models", 200);
    Json card = Json::object({{"id", o.engine.model},
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
    if (!res.body.empty())
      return;
    if (res.status == 413) {
      metrics.limited("body");
      sendError(res, bodyTooLarge(o.maxBody));
    } else
      sendError(res, {res.status, "no such endpoint or method", "", "invalid_request_error"});
  });
}

/// Listens until SIGTERM or SIGINT, then refuses new requests (503),
/// finishes the running ones and returns. `announce` is told the port
/// once bound.
void listenUntilStopped(httplib::Server &server, Engine &engine,
                        std::atomic<bool> &draining, const std::string &host,
                        int64_t port,
                        const std::function<void(int64_t)> &announce) {
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
  bool anyPort = port == 0;
  if (anyPort)
    port = server.bind_to_any_port(host.c_str());
  if (port <= 0 || (!anyPort && !server.bind_to_port(host.c_str(), (int)port))) {
    gStopRequested = true;
    watcher.join();
    throw RuntimeError("cannot listen on " + host + ":" + std::to_string(port) +
                       " (in use, or not an address of this machine)");
  }
  announce(port);
  server.listen_after_bind();
  gStopRequested = true;
  watcher.join();
}
} // namespace

int runServe(int argc, char **argv) {
  CommandLine args("fbt serve", "Serves the model over HTTP, OpenAI-compatible.");
  declareOptions(args);
  if (!args.parse(argc, argv))
    return 0;
  std::unique_ptr<Session> opened = openTrained(args);
  Session &session = *opened;
  ServeOptions o = serveOptions(args, session);
  ApiKeys keys = apiKeys(args);

  ServerMetrics metrics;
  Engine engine(session, o.engine, metrics);
  std::atomic<bool> draining{false};
  httplib::Server server;
  server.set_payload_max_length((size_t)o.maxBody);
  server.new_task_queue = [&] {
    return new ConnectionPool((size_t)o.maxConnections, metrics);
  };
  server.set_keep_alive_timeout(o.idleTimeout);
  server.set_read_timeout(o.idleTimeout, 0);
  guard(server, keys, args.has("metrics-open"), metrics);
  addRoutes(server, engine, metrics, draining, o);
  listenUntilStopped(server, engine, draining, o.host, o.port, [&](int64_t port) {
    std::string auth = keys.required()
                           ? ", " + std::to_string(keys.size()) + " API key(s) required"
                           : "";
    std::fprintf(stderr, "fbt: serving '%s' (%s regime by default, tokenizer %s, "
                         "%lld decode rows) on http://%s:%lld/v1%s\n",
                 o.engine.model.c_str(), o.engine.defaultRegime.name().c_str(),
                 session.tokenizerName().c_str(), (long long)engine.batch(),
                 o.host.c_str(), (long long)port, auth.c_str());
  });
  std::fputs("fbt: stopped\n", stderr);
  return 0;
}

} // namespace fbt
