//===- ServeEngineTest.cpp - fbt serve's engine, driven without HTTP -------===//
//
// Needs a compiled CPU bundle (decode batch 4): CTest's fixture.tiny_batch4
// compiles one and runs this with FBT_TEST_BUNDLE set; without it, it
// skips. Random
// weights: the texts mean nothing, but each is a function of its request
// alone, whatever else shares the decode batch.
//
//===----------------------------------------------------------------------===//

#include "runtime/serve/Engine.h"

#include "runtime/base/Error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <thread>

using namespace fbt;

namespace {
class ServeEngineTest : public ::testing::Test {
protected:
  void SetUp() override {
    const char *bundle = std::getenv("FBT_TEST_BUNDLE");
    if (!bundle)
      GTEST_SKIP() << "needs FBT_TEST_BUNDLE (CTest's fixture.tiny_batch4 compiles one)";
    session_ = std::make_unique<Session>(bundle);
    session_->initialize(7);
    options_.model = "tiny";
    options_.defaultRegime = Regime::parse("soft");
  }
  std::unique_ptr<Session> session_;
  EngineOptions options_;
  ServerMetrics metrics_;
};

std::string request(const std::string &prompt, const std::string &regime,
                    const std::string &extra = "") {
  return "{\"prompt\": \"" + prompt + "\", \"max_tokens\": 12, \"temperature\": 0, "
         "\"regime\": \"" + regime + "\"" + extra + "}";
}

/// The texts of a non-streamed reply's choices.
std::vector<std::string> texts(const std::string &reply) {
  std::vector<std::string> out;
  Json json = parseJson(reply, "reply");
  for (const Json &c : json.at("choices"))
    out.push_back(c.at("text").get<std::string>());
  return out;
}

/// The engine goes idle just after the last reply is out: wait a little.
bool becomesIdle(Engine &engine) {
  for (int i = 0; i < 2000 && !engine.idle(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  return engine.idle();
}

std::string runAloneReply(Engine &engine, const std::string &body) {
  std::shared_ptr<Job> job = engine.prepare(body, false);
  EXPECT_TRUE(engine.submit(job));
  return job->waitForReply();
}

std::vector<std::string> runAlone(Engine &engine, const std::string &body) {
  return texts(runAloneReply(engine, body));
}

/// Each body twice, all at once (more sequences than rows, admitted as
/// rows come free): each reply's texts are the ones it got alone.
void expectSameTogether(Engine &engine, const std::vector<std::string> &bodies,
                        const std::vector<std::vector<std::string>> &alone) {
  std::vector<std::shared_ptr<Job>> jobs;
  for (int round = 0; round < 2; ++round)
    for (const std::string &b : bodies) {
      jobs.push_back(engine.prepare(b, false));
      ASSERT_TRUE(engine.submit(jobs.back()));
    }
  for (size_t i = 0; i < jobs.size(); ++i)
    EXPECT_EQ(texts(jobs[i]->waitForReply()), alone[i % bodies.size()])
        << bodies[i % bodies.size()];
}

/// A streamed job's server-sent events, up to its end.
std::string allEvents(Job &job) {
  std::string events;
  for (bool ended = false; !ended;)
    events += job.takeEvents(std::chrono::milliseconds(200), ended);
  return events;
}
} // namespace

TEST_F(ServeEngineTest, TextDoesNotDependOnTheRowsItSharesAStepWith) {
  Engine engine(*session_, options_, metrics_);
  std::vector<std::string> bodies = {
      request("The cat", "standard"), request("Once", "soft"),
      request("A dog ran", "fused:2"), request("The cat", "soft", ", \"n\": 3")};
  std::vector<std::vector<std::string>> alone;
  for (const std::string &b : bodies)
    alone.push_back(runAlone(engine, b));
  EXPECT_EQ(alone[3].size(), 3u);
  EXPECT_EQ(alone[3][0], alone[3][1]); // greedy: every choice the same
  expectSameTogether(engine, bodies, alone);
  EXPECT_TRUE(becomesIdle(engine));
  // Prompts seen before skipped their prefill.
  EXPECT_GT(metrics_.cacheHits.load(), 0);
}

TEST_F(ServeEngineTest, StreamedPiecesAddUpToTheReply) {
  Engine engine(*session_, options_, metrics_);
  std::string whole = runAlone(engine, request("Once upon", "soft"))[0];
  std::shared_ptr<Job> job =
      engine.prepare(request("Once upon", "soft", ", \"stream\": true"), false);
  ASSERT_TRUE(engine.submit(job));
  std::string events = allEvents(*job), streamed;
  size_t at = 0, count = 0;
  while ((at = events.find("data: {", at)) != std::string::npos) {
    size_t end = events.find("\n\n", at);
    Json chunk = parseJson(events.substr(at + 6, end - at - 6), "chunk");
    streamed += chunk.at("choices")[0].at("text").get<std::string>();
    at = end, ++count;
  }
  EXPECT_EQ(streamed, whole);
  EXPECT_GE(count, 2u); // a piece at a time, then the finish
  EXPECT_EQ(events.substr(events.size() - 14), "data: [DONE]\n\n");
}

TEST_F(ServeEngineTest, BadRequestsNameWhatIsWrong) {
  Engine engine(*session_, options_, metrics_);
  auto status = [&](const std::string &body, std::string *param) {
    try {
      engine.prepare(body, false);
    } catch (const ApiError &e) {
      *param = e.param;
      return e.status;
    }
    return 200;
  };
  std::string param;
  EXPECT_EQ(status(request("x", "soft", ", \"model\": \"other\""), &param), 404);
  EXPECT_EQ(param, "model");
  EXPECT_EQ(status("{\"prompt\": \"" + std::string(5000, 'a') + "\"}", &param), 400);
  EXPECT_EQ(param, "prompt");
  EXPECT_EQ(status("{\"prompt\": 3}", &param), 400);
  EXPECT_EQ(param, "prompt");
  EXPECT_EQ(status(request("x", "fused:0"), &param), 400);
  EXPECT_EQ(param, "regime");
}

TEST_F(ServeEngineTest, AFullQueueRefusesAndACancelledJobEnds) {
  options_.maxQueue = 1;
  Engine engine(*session_, options_, metrics_);
  // More jobs than rows and queue: some are refused until the engine has
  // taken the ones before.
  std::vector<std::shared_ptr<Job>> accepted;
  int refused = 0;
  for (int i = 0; i < 64; ++i) {
    std::shared_ptr<Job> job = engine.prepare(request("Hi", "standard", ", \"n\": 8"), false);
    if (engine.submit(job))
      accepted.push_back(job);
    else
      ++refused;
  }
  EXPECT_GT(refused, 0);
  for (auto &job : accepted)
    job->cancelled = true;
  for (auto &job : accepted)
    job->waitForReply(); // ends, cancelled, without decoding the rest
  EXPECT_TRUE(becomesIdle(engine));
  std::string text = metrics_.text(engine.batch());
  EXPECT_NE(text.find("fbt_request_seconds_count " + std::to_string(accepted.size())),
            std::string::npos)
      << text;
}

TEST_F(ServeEngineTest, AStopStringOfSeveralTokensIsWithheldWhole) {
  Engine engine(*session_, options_, metrics_);
  std::string whole = runAlone(engine, request("The cat", "standard"))[0];
  // Three ASCII characters (three byte tokens) of the reply, as the stop.
  size_t at = 1;
  while (at + 3 <= whole.size() &&
         !std::all_of(whole.begin() + at, whole.begin() + at + 3,
                      [](char c) { return c > 32 && c < 127 && c != '"' && c != '\\'; }))
    ++at;
  if (at + 3 > whole.size())
    GTEST_SKIP() << "no three ASCII characters in the reply '" << whole << "'";
  std::string stop = whole.substr(at, 3);
  std::string want = whole.substr(0, whole.find(stop));
  std::string extra = ", \"stop\": \"" + stop + "\"";
  std::vector<std::string> plain = runAlone(engine, request("The cat", "standard", extra));
  EXPECT_EQ(plain[0], want) << "stop '" << stop << "'";
  std::shared_ptr<Job> job =
      engine.prepare(request("The cat", "standard", extra + ", \"stream\": true"), false);
  ASSERT_TRUE(engine.submit(job));
  std::string events = allEvents(*job), streamed;
  for (size_t p = 0; (p = events.find("data: {", p)) != std::string::npos;) {
    size_t end = events.find("\n\n", p);
    streamed += parseJson(events.substr(p + 6, end - p - 6), "chunk")
                    .at("choices")[0]
                    .at("text")
                    .get<std::string>();
    p = end;
  }
  EXPECT_EQ(streamed, want);
  EXPECT_NE(events.find("\"finish_reason\":\"stop\""), std::string::npos);
}

TEST_F(ServeEngineTest, APromptPrefilledInPiecesMatchesOnePrefill) {
  // The same prompt into row 1 by the one-row prefill, and into row 2 by
  // mixed steps of 7 prompt tokens each, beside row 0 decoding: the same
  // logits and state, to rounding.
  Decoder d(*session_);
  ASSERT_GT(d.mixedCapacity(), 8) << "the bundle has no mixed steps";
  std::vector<int32_t> prompt;
  for (int i = 0; i < 40; ++i)
    prompt.push_back(1 + (i * 37) % 250);
  Regime standard = Regime::parse("standard");
  d.admit(0, {1, 2, 3}, standard);
  d.admit(1, prompt, standard);
  std::vector<float> whole(d.logits(1), d.logits(1) + d.vocab());
  std::vector<float> wholeState(d.state(1), d.state(1) + d.width());
  int32_t position = 3;
  for (size_t at = 0; at < prompt.size(); at += 7) {
    std::vector<Decoder::MixedToken> tokens = {{0, 5, position++, true}};
    for (size_t i = at; i < std::min(prompt.size(), at + 7); ++i)
      tokens.push_back({2, prompt[i], (int32_t)i, false});
    d.mixed(tokens);
  }
  float most = 0, worst = 0;
  for (int64_t v = 0; v < d.vocab(); ++v) {
    most = std::max(most, std::fabs(whole[v]));
    worst = std::max(worst, std::fabs(whole[v] - d.logits(2)[v]));
  }
  EXPECT_LE(worst, 1e-4f * most);
  for (int64_t c = 0; c < d.width(); ++c)
    EXPECT_NEAR(wholeState[c], d.state(2)[c], 1e-4f * (1 + std::fabs(wholeState[c])));
  // A token outside the context is refused.
  EXPECT_THROW(d.mixed({{0, 5, (int32_t)d.maxSequence(), false}}), RuntimeError);

  // fused:2: the prompt twice through mixed steps in pieces of 9, as
  // FusedPrefill schedules them (the second pass fed the first's states),
  // against prefill_fused_row.
  const Regime fused2 = Regime::parse("fused:2");
  d.admit(1, prompt, fused2);
  whole.assign(d.logits(1), d.logits(1) + d.vocab());
  std::vector<float> states;
  for (FusedPrefill plan(fused2, (int64_t)prompt.size(), d.width()); !plan.finished();) {
    std::vector<Decoder::MixedToken> tokens = {{0, 5, position++, true}};
    int64_t at = plan.prefilled(), n = std::min<int64_t>(9, (int64_t)prompt.size() - at);
    for (int64_t i = at; i < at + n; ++i) {
      const float *fed = plan.fed(prompt, i, d.bos());
      tokens.push_back({3, prompt[i], (int32_t)i, fed != nullptr, fed});
    }
    d.mixed(tokens, &states);
    plan.advance(n, states.data() + d.width()); // the other row's token first
  }
  worst = 0;
  for (int64_t v = 0; v < d.vocab(); ++v)
    worst = std::max(worst, std::fabs(whole[v] - d.logits(3)[v]));
  EXPECT_LE(worst, 1e-4f * most);
  EXPECT_GT(worst, 0.0f) << "not a test: the mixed steps' rounding differs from one prefill's";
}

TEST_F(ServeEngineTest, ALongPromptJoinsInPiecesWhileOthersDecode) {
  // Longer than the compiled prefill (max_prompt_length): only the mixed
  // steps can take it, a piece per step.
  std::string longPrompt;
  for (int i = 0; longPrompt.size() < 150; ++i)
    longPrompt += "word" + std::to_string(i) + " ";
  std::vector<std::string> bodies = {request(longPrompt, "standard"),
                                     request(longPrompt, "soft"),
                                     request("The cat", "soft"), request("A dog", "standard")};
  std::vector<std::vector<std::string>> alone;
  {
    Engine engine(*session_, options_, metrics_);
    for (const std::string &b : bodies)
      alone.push_back(runAlone(engine, b));
  }
  options_.prefixCache = 0; // together, every prompt is prefilled again
  Engine fresh(*session_, options_, metrics_);
  expectSameTogether(fresh, bodies, alone);
  // fused:N runs N passes over the whole prompt: at most max_prompt_length.
  try {
    fresh.prepare(request(longPrompt, "fused:2"), false);
    ADD_FAILURE() << "a fused prompt longer than the prefill was accepted";
  } catch (const ApiError &e) {
    EXPECT_EQ(e.param, "prompt");
    EXPECT_NE(std::string(e.message).find("fused:2"), std::string::npos) << e.message;
  }
}

TEST_F(ServeEngineTest, ChoicesOfOneRequestShareTheirPromptsPrefill) {
  Engine engine(*session_, options_, metrics_);
  std::vector<std::string> choices =
      runAlone(engine, request("A prompt no test sent before", "soft", ", \"n\": 3"));
  ASSERT_EQ(choices.size(), 3u);
  EXPECT_EQ(choices[0], choices[2]); // greedy
  // The first choice prefilled it; the other two restored it.
  ASSERT_TRUE(becomesIdle(engine));
  EXPECT_EQ(metrics_.cacheMisses.load(), 1);
  EXPECT_EQ(metrics_.cacheHits.load(), 2);
}

TEST_F(ServeEngineTest, AStreamAsksForItsUsageLast) {
  Engine engine(*session_, options_, metrics_);
  std::shared_ptr<Job> job = engine.prepare(
      request("Once upon", "soft",
              ", \"stream\": true, \"stream_options\": {\"include_usage\": true}"),
      false);
  ASSERT_TRUE(engine.submit(job));
  std::string events = allEvents(*job);
  size_t last = events.rfind("data: {");
  size_t end = events.find("\n\n", last);
  Json chunk = parseJson(events.substr(last + 6, end - last - 6), "chunk");
  EXPECT_TRUE(chunk.at("choices").empty());
  EXPECT_EQ(chunk.at("usage").at("prompt_tokens").get<int64_t>(), 9); // "Once upon"
  int64_t completion = chunk.at("usage").at("completion_tokens").get<int64_t>();
  EXPECT_TRUE(completion >= 1 && completion <= 12) << completion;
  EXPECT_EQ(events.substr(events.size() - 14), "data: [DONE]\n\n");
  EXPECT_THROW(engine.prepare(request("x", "soft", ", \"stream_options\": "
                                                   "{\"include_usage\": true}"),
                              false),
               ApiError);
}

namespace {
/// A chat request (the byte tokenizer: a token is a byte) whose reply
/// carries log-probabilities, greedy.
std::string chatWithLogprobs(const std::string &regime, const std::string &extra = "") {
  return "{\"messages\": [{\"role\": \"user\", \"content\": \"The cat sat\"}], "
         "\"max_tokens\": 10, \"temperature\": 0, \"logprobs\": true, \"top_logprobs\": 2, "
         "\"regime\": \"" + regime + "\"" + extra + "}";
}
} // namespace

TEST_F(ServeEngineTest, LogprobsAreTheTeacherForcedOnesOfTheRegime) {
  // Each generated token's log-probability is log softmax of the logits the
  // decoder's teacher forcing (fbt score) gives at its position, in the
  // regime the request decodes in.
  Engine engine(*session_, options_, metrics_);
  for (const char *regime : {"standard", "soft", "fused:2"}) {
    std::shared_ptr<Job> job = engine.prepare(chatWithLogprobs(regime), true);
    ASSERT_TRUE(engine.submit(job));
    Json reply = parseJson(job->waitForReply(), "reply");
    ASSERT_TRUE(becomesIdle(engine));
    const Json &content = reply.at("choices")[0].at("logprobs").at("content");
    ASSERT_GT(content.size(), 0u) << regime;
    std::vector<int32_t> ids = job->prompt;
    size_t prompt = ids.size();
    for (const Json &t : content) {
      ASSERT_EQ(t.at("bytes").size(), 1u); // the byte tokenizer
      ids.push_back((int32_t)t.at("bytes")[0].get<int64_t>());
    }
    Decoder d(*session_);
    auto logits = d.score({ids}, {(int64_t)prompt}, Regime::parse(regime))[0];
    for (size_t i = 0; i < content.size(); ++i) {
      const std::vector<float> &row = logits[prompt - 1 + i];
      double m = *std::max_element(row.begin(), row.end()), sum = 0;
      for (float x : row)
        sum += std::exp((double)x - m);
      double want = row[ids[prompt + i]] - m - std::log(sum);
      EXPECT_NEAR(content[i].at("logprob").get<double>(), want, 1e-4) << regime << " " << i;
      // Greedy: the chosen token is the likeliest.
      const Json &top = content[i].at("top_logprobs");
      ASSERT_EQ(top.size(), 2u);
      EXPECT_EQ(top[0].at("bytes"), content[i].at("bytes"));
      EXPECT_GE(top[0].at("logprob").get<double>(), top[1].at("logprob").get<double>());
    }
  }
}

TEST_F(ServeEngineTest, StreamedLogprobsAddUpToTheReplys) {
  Engine engine(*session_, options_, metrics_);
  std::shared_ptr<Job> whole = engine.prepare(chatWithLogprobs("soft"), true);
  ASSERT_TRUE(engine.submit(whole));
  Json reply = parseJson(whole->waitForReply(), "reply");
  std::shared_ptr<Job> job = engine.prepare(chatWithLogprobs("soft", ", \"stream\": true"), true);
  ASSERT_TRUE(engine.submit(job));
  std::string events = allEvents(*job);
  Json streamed = Json::array();
  for (size_t at = 0; (at = events.find("data: {", at)) != std::string::npos;) {
    size_t end = events.find("\n\n", at);
    Json chunk = parseJson(events.substr(at + 6, end - at - 6), "chunk");
    const Json &c = chunk.at("choices")[0];
    if (c.contains("logprobs") && !c.at("logprobs").is_null())
      for (const Json &t : c.at("logprobs").at("content"))
        streamed.push_back(t);
    at = end;
  }
  EXPECT_EQ(dumpJson(streamed), dumpJson(reply.at("choices")[0].at("logprobs").at("content")));
}

TEST_F(ServeEngineTest, BiasAndPenaltiesSteerTheirRowAlone) {
  Engine engine(*session_, options_, metrics_);
  // A bias of 100 on one byte: greedy writes nothing else.
  std::vector<std::string> forced =
      runAlone(engine, request("The cat", "soft", ", \"logit_bias\": {\"65\": 100}"));
  EXPECT_EQ(forced[0], std::string(12, 'A'));
  // A penalty, as the decoder would apply it by hand: each step's logits
  // less 1.5 per time a token came before (greedy).
  std::string penalized = request("Once", "standard", ", \"frequency_penalty\": 1.5");
  std::string got = runAlone(engine, penalized)[0];
  ASSERT_TRUE(becomesIdle(engine));
  Decoder d(*session_);
  const Tokenizer &tok = session_->tokenizer();
  std::vector<int32_t> prompt = {tok.documentSeparator()};
  for (int32_t id : tok.encode("Once"))
    prompt.push_back(id);
  Regime standard = Regime::parse("standard");
  d.admit(0, prompt, standard);
  LogitControls c;
  c.frequencyPenalty = 1.5;
  TokenCounts counts;
  std::vector<int32_t> ids;
  for (int32_t pos = (int32_t)prompt.size(); ids.size() < 12; ++pos) {
    std::vector<float> l = controlledLogits(d.logits(0), d.vocab(), c, counts);
    int32_t id = (int32_t)(std::max_element(l.begin(), l.end()) - l.begin());
    if (id == tok.documentSeparator())
      break;
    ids.push_back(id);
    ++counts[id];
    std::vector<int32_t> tokens(d.batchSize(), 0), positions(d.batchSize(), 0);
    tokens[0] = id, positions[0] = pos;
    std::vector<bool> feedback(d.batchSize(), false);
    d.step(tokens, positions, feedback);
  }
  EXPECT_EQ(got, utf8Text(tok.decode(ids), true));
  // Beside other rows, each reply is still the one it got alone.
  std::vector<std::string> bodies = {
      penalized, request("The cat", "soft", ", \"presence_penalty\": -2"),
      request("A dog", "fused:2", ", \"logit_bias\": {\"32\": -100}")};
  std::vector<std::vector<std::string>> alone;
  for (const std::string &b : bodies)
    alone.push_back(runAlone(engine, b));
  EXPECT_EQ(alone[0][0], got);
  EXPECT_EQ(alone[2][0].find(' '), std::string::npos); // no space, ever
  expectSameTogether(engine, bodies, alone);
  // A token outside the vocabulary is named.
  try {
    engine.prepare(request("a", "soft", ", \"logit_bias\": {\"256\": 1}"), false);
    ADD_FAILURE() << "a bias on token 256 was accepted";
  } catch (const ApiError &e) {
    EXPECT_EQ(e.message, "'logit_bias': token 256 is outside the vocabulary (256 tokens)");
  }
}

TEST_F(ServeEngineTest, BestOfReturnsTheLikeliestCandidates) {
  // best_of 4, n 2: the two of the four (sampled with seeds seed..seed+3,
  // as n 4 samples them) with the highest mean log-probability per token.
  Engine engine(*session_, options_, metrics_);
  auto sampled = [](const std::string &extra) {
    return "{\"prompt\": \"The cat\", \"max_tokens\": 12, \"temperature\": 1, \"seed\": 11, "
           "\"logprobs\": 0, \"regime\": \"soft\"" + extra + "}";
  };
  std::shared_ptr<Job> four = engine.prepare(sampled(", \"n\": 4"), false);
  ASSERT_TRUE(engine.submit(four));
  Json all = parseJson(four->waitForReply(), "reply");
  std::vector<std::pair<double, std::string>> ranked;
  for (const Json &c : all.at("choices")) {
    double sum = 0;
    const Json &lps = c.at("logprobs").at("token_logprobs");
    for (const Json &x : lps)
      sum += x.get<double>();
    ranked.push_back({lps.empty() ? -INFINITY : sum / (double)lps.size(),
                      c.at("text").get<std::string>()});
  }
  std::vector<size_t> order = {0, 1, 2, 3}; // ties: the earlier candidate
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return ranked[a].first != ranked[b].first ? ranked[a].first > ranked[b].first : a < b;
  });
  std::vector<std::string> best = runAlone(engine, sampled(", \"n\": 2, \"best_of\": 4"));
  ASSERT_EQ(best.size(), 2u);
  EXPECT_EQ(best[0], ranked[order[0]].second);
  EXPECT_EQ(best[1], ranked[order[1]].second);
}

TEST_F(ServeEngineTest, EchoScoresThePromptByPlainPrefill) {
  // echo with max_tokens 0: the prompt alone, each token scored by the plain
  // prefill of the tokens before it (teacher forcing in the standard regime).
  Engine engine(*session_, options_, metrics_);
  std::string prompt = "The cat sat on";
  std::shared_ptr<Job> job = engine.prepare(
      "{\"prompt\": \"" + prompt + "\", \"echo\": true, \"max_tokens\": 0, \"logprobs\": 2, "
      "\"regime\": \"soft\"}", false);
  ASSERT_TRUE(engine.submit(job));
  Json reply = parseJson(job->waitForReply(), "reply");
  ASSERT_TRUE(becomesIdle(engine));
  const Json &c = reply.at("choices")[0];
  EXPECT_EQ(c.at("text"), prompt);
  const Json &lp = c.at("logprobs");
  std::vector<int32_t> ids = job->prompt;
  ASSERT_EQ(lp.at("tokens").size(), ids.size() - 1);
  Decoder d(*session_);
  auto logits = d.score({ids}, {1}, Regime::parse("standard"))[0];
  for (size_t i = 1; i < ids.size(); ++i) {
    const std::vector<float> &row = logits[i - 1];
    double m = *std::max_element(row.begin(), row.end()), sum = 0;
    for (float x : row)
      sum += std::exp((double)x - m);
    EXPECT_NEAR(lp.at("token_logprobs")[i - 1].get<double>(), row[ids[i]] - m - std::log(sum),
                1e-4) << i;
    EXPECT_EQ(lp.at("text_offset")[i - 1].get<int64_t>(), (int64_t)i - 1);
  }
  // With generated text after it: the prompt's tokens, then the text's, their
  // offsets running on; streamed, the same text.
  std::string body = "{\"prompt\": \"" + prompt + "\", \"echo\": true, \"max_tokens\": 6, "
                     "\"temperature\": 0, \"logprobs\": 0, \"regime\": \"soft\"";
  std::shared_ptr<Job> more = engine.prepare(body + "}", false);
  ASSERT_TRUE(engine.submit(more));
  Json whole = parseJson(more->waitForReply(), "reply");
  std::string text = whole.at("choices")[0].at("text");
  EXPECT_EQ(text.compare(0, prompt.size(), prompt), 0);
  const Json &offsets = whole.at("choices")[0].at("logprobs").at("text_offset");
  EXPECT_GT(offsets.size(), ids.size() - 1);
  for (size_t i = 0; i < offsets.size(); ++i)
    EXPECT_EQ(offsets[i].get<int64_t>(), (int64_t)i); // one byte a token
  std::shared_ptr<Job> streamed = engine.prepare(body + ", \"stream\": true}", false);
  ASSERT_TRUE(engine.submit(streamed));
  std::string events = allEvents(*streamed), joined;
  for (size_t at = 0; (at = events.find("data: {", at)) != std::string::npos;) {
    size_t end = events.find("\n\n", at);
    joined += parseJson(events.substr(at + 6, end - at - 6), "chunk")
                  .at("choices")[0].at("text").get<std::string>();
    at = end;
  }
  EXPECT_EQ(joined, text);
}

namespace {
std::string finishReason(const std::string &reply) {
  return parseJson(reply, "reply").at("choices").at(0).at("finish_reason").get<std::string>();
}
const char *kJsonObject = ", \"response_format\": {\"type\": \"json_object\"}";
} // namespace

TEST_F(ServeEngineTest, AFailingSequenceEndsAloneAndTheRowsBesideItGoOn) {
  // A grammar budget no JSON reply fits: the constrained request fails at
  // its first token, inside the step it shares with three others.
  options_.grammarWork = 50;
  Engine engine(*session_, options_, metrics_);
  std::vector<std::string> bodies = {request("Hi", "soft"), request("ab", "standard"),
                                     request("xyz", "fused:2")};
  std::vector<std::vector<std::string>> alone;
  for (const std::string &b : bodies)
    alone.push_back(runAlone(engine, b));
  std::vector<std::shared_ptr<Job>> jobs;
  for (int round = 0; round < 3; ++round) {
    jobs.push_back(engine.prepare(request("{", "soft", kJsonObject), false));
    ASSERT_TRUE(engine.submit(jobs.back()));
    for (const std::string &b : bodies) {
      jobs.push_back(engine.prepare(b, false));
      ASSERT_TRUE(engine.submit(jobs.back()));
    }
  }
  for (size_t i = 0; i < jobs.size(); ++i) {
    if (i % 4 == 0) {
      try {
        jobs[i]->waitForReply();
        ADD_FAILURE() << "the constrained request did not fail";
      } catch (const ApiError &e) {
        EXPECT_EQ(e.status, 500);
        EXPECT_NE(e.message.find("choice 0 failed: grammar: the parse needs more work than this "
                                 "request's budget allows"),
                  std::string::npos)
            << e.message;
      }
    } else {
      EXPECT_EQ(texts(jobs[i]->waitForReply()), alone[i % 4 - 1]) << bodies[i % 4 - 1];
    }
  }
  EXPECT_TRUE(becomesIdle(engine));
}

TEST_F(ServeEngineTest, NAndBestOfAreBoundedByTheServersLimitAlone) {
  options_.maxChoices = 16;
  Engine engine(*session_, options_, metrics_);
  std::shared_ptr<Job> job = engine.prepare(request("Hi", "standard", ", \"n\": 12"), false);
  ASSERT_TRUE(engine.submit(job));
  EXPECT_EQ(texts(job->waitForReply()).size(), 12u);
  try {
    engine.prepare(request("Hi", "standard", ", \"n\": 17"), false);
    ADD_FAILURE() << "n 17 was accepted";
  } catch (const ApiError &e) {
    EXPECT_EQ(e.message, "'n' 17 is over this server's limit (--max-n 16)");
  }
}

TEST_F(ServeEngineTest, AStopStringNeverCutsAConstrainedReply) {
  Engine engine(*session_, options_, metrics_);
  auto body = [&](const std::string &extra) {
    return "{\"prompt\": \"{\", \"max_tokens\": 48, \"temperature\": 0, \"regime\": \"soft\"" +
           std::string(kJsonObject) + extra + "}";
  };
  std::string free = texts(runAloneReply(engine, body("")))[0];
  // Every byte the JSON grammar allows between or within its tokens that
  // this reply holds, as a stop: the reply is the same as without it.
  int held = 0;
  for (const char *stop : {" ", "\\n", "\\t", ",", ":", "\\\"", "{", "}", "["})
    if (free.find(parseJson(std::string("\"") + stop + "\"").get<std::string>()) !=
        std::string::npos) {
      ++held;
      std::string reply = runAloneReply(engine, body(std::string(", \"stop\": \"") + stop + "\""));
      EXPECT_EQ(texts(reply)[0], free) << "stop " << stop;
    }
  EXPECT_GE(held, 2) << "the reply holds too few of the stops to test: " << free;
}
