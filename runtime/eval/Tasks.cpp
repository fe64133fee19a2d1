//===- Tasks.cpp - held-out problems answered by greedy decoding ----------===//

#include "runtime/eval/Tasks.h"

#include "runtime/base/Error.h"
#include "runtime/base/Random.h"
#include "runtime/eval/Evaluation.h"
#include "runtime/text/ArithmeticFacts.h"
#include "runtime/text/ChatTemplate.h"
#include "runtime/text/JsonlData.h"

#include <algorithm>
#include <fstream>
#include <iterator>
#include <set>

namespace fbt {

namespace {
/// Draws for one problem: uniform integers under (seed, kTask).
class Draws {
public:
  Draws(uint64_t seed, uint64_t problem) : seed_(seed), base_(problem << 16) {}
  int64_t range(int64_t lo, int64_t hi) {
    return lo + int64_t(rng::uniformInt(seed_, rng::streams::kTask, base_ + n_++,
                                        uint64_t(hi - lo + 1)));
  }

private:
  uint64_t seed_, base_, n_ = 0;
};

/// One fact of the corpus's arithmetic kinds: "a+b=" and its answer.
std::pair<std::string, std::string> arithmeticFact(Draws &d) {
  return fbt::arithmeticFact([&](int64_t lo, int64_t hi) { return d.range(lo, hi); });
}

/// A whole fact line ("\n12+7=19\n") is in the text.
bool seen(std::string_view text, const std::string &q, const std::string &a) {
  std::string line = q + a;
  for (size_t at = text.find(line); at != std::string_view::npos;
       at = text.find(line, at + 1)) {
    bool startOk = at == 0 || text[at - 1] == '\n' || text[at - 1] == '\0';
    size_t end = at + line.size();
    bool endOk = end == text.size() || text[end] == '\n' || text[end] == '\0';
    if (startOk && endOk)
      return true;
  }
  return false;
}
/// A task file's contents.
std::string readTaskFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw RuntimeError("task file " + path + ": cannot open it");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// file:PATH: the first `count` problems of a JSON Lines file.
std::vector<TaskProblem> loadTaskFile(const std::string &path, int64_t count,
                                      std::string_view trainingText) {
  std::vector<TaskProblem> out;
  forEachJsonLine(path, readTaskFile(path), [&](const Json &j, const std::string &where) {
    TaskProblem p;
    try {
      p.prompt = asString(jsonAt(j, "prompt"));
      p.answer = asString(jsonAt(j, "answer"));
      if (const Json *t = jsonFind(j, "terminator"))
        p.terminator = asString(*t);
    } catch (const RuntimeError &e) {
      throw RuntimeError(where + ": " + e.what());
    }
    if (p.answer.empty() || (p.prompt + p.answer + p.terminator).find('\0') != std::string::npos)
      throw RuntimeError(where + ": the answer must be non-empty and no field may hold a "
                         "NUL byte (the byte-level BOS)");
    std::string question = p.prompt.substr(p.prompt.rfind('\n') + 1);
    if (seen(trainingText, question, p.answer))
      throw RuntimeError(where + ": the problem '" + question + p.answer +
                         "' stands as a line of the training text, so it is not held out");
    out.push_back(std::move(p));
    return int64_t(out.size()) < count;
  });
  if (out.empty())
    throw RuntimeError("task file " + path + ": no problems");
  return out;
}
/// chat:PATH: the first `count` conversations of a chat JSON Lines file,
/// each asked up to its last (the assistant's) turn.
std::vector<TaskProblem> loadChatTask(const std::string &path, int64_t count,
                                      std::string_view trainingText) {
  std::vector<TaskProblem> out;
  forEachJsonLine(path, readTaskFile(path), [&](const Json &j, const std::string &where) {
    std::vector<ChatMessage> messages;
    try {
      messages = parseChatMessages(jsonAt(j, "messages"));
    } catch (const RuntimeError &e) {
      throw RuntimeError(where + ": " + e.what());
    }
    if (messages.size() < 2 || messages.back().role != "assistant")
      throw RuntimeError(where + ": the conversation must end with the assistant's "
                         "answer, after a turn that asks it");
    TaskProblem p;
    p.answer = messages.back().content;
    messages.pop_back();
    p.prompt = chatPrompt(messages);
    // The template closes a turn with a newline, then another turn's "<|"
    // or the document's end: the answer is the first line the model writes.
    p.terminator = "\n";
    p.maxLength = std::max<int64_t>(64, 4 * int64_t(p.answer.size()));
    if (p.answer.empty() || p.answer.find('\n') != std::string::npos ||
        (p.prompt + p.answer).find('\0') != std::string::npos)
      throw RuntimeError(where + ": the answer must be one non-empty line and no field may "
                         "hold a NUL byte (the byte-level BOS)");
    // The last question and its answer, as the template writes a turn pair.
    std::string pair = "<|" + messages.back().role + "|>\n" + messages.back().content +
                       "\n<|assistant|>\n" + p.answer + "\n";
    if (trainingText.find(pair) != std::string_view::npos)
      throw RuntimeError(where + ": the question and answer '" + messages.back().content +
                         "' -> '" + p.answer + "' are in the training text, so it is "
                         "not held out");
    out.push_back(std::move(p));
    return int64_t(out.size()) < count;
  });
  if (out.empty())
    throw RuntimeError("task file " + path + ": no conversations");
  return out;
}
/// passkey:N: a five-digit key stated once inside N bytes of filler, asked
/// for at the end; problem i of `count` states it at depth (i + 0.5) / count
/// of the filler, so the distances spread over the whole prompt.
std::vector<TaskProblem> passkeyTask(const std::string &name, int64_t count, uint64_t seed) {
  std::string length = name.substr(8);
  if (length.empty() || length.size() > 6 ||
      length.find_first_not_of("0123456789") != std::string::npos)
    throw RuntimeError("task " + name + ": expected passkey:N, N the prompt's bytes");
  const std::string question = "What is the pass key? It is ";
  const std::string filler =
      "The grass is green. The sky is blue. The sun is yellow. Here we go. ";
  auto statement = [](const std::string &key) {
    return "The pass key is " + key + ". ";
  };
  int64_t n = std::stoll(length);
  int64_t room = n - int64_t(question.size() + statement("00000").size());
  if (room < 0)
    throw RuntimeError("task " + name + ": a prompt of " + length + " bytes cannot hold the "
                       "key and the question (at least " +
                       std::to_string(n - room) + ")");
  std::string text;
  while (int64_t(text.size()) < room)
    text += filler;
  text.resize(size_t(room));
  std::vector<TaskProblem> out;
  for (int64_t i = 0; i < count; ++i) {
    Draws d(seed, uint64_t(i));
    std::string key = std::to_string(d.range(10000, 99999));
    size_t at = size_t(double(room) * (double(i) + 0.5) / double(count));
    out.push_back({text.substr(0, at) + statement(key) + text.substr(at) + question, key, "."});
  }
  return out;
}
} // namespace

const std::vector<std::string> &taskNames() {
  static const std::vector<std::string> names = {"arithmetic", "counting"};
  return names;
}

std::vector<TaskProblem> makeTask(const std::string &name, int64_t count,
                                  uint64_t seed, std::string_view trainingText) {
  std::vector<TaskProblem> out;
  if (name == "arithmetic") {
    std::set<std::string> asked;
    // Held-out facts: not in the training text, each asked once.
    auto fresh = [&](uint64_t &problem) {
      for (int tries = 0; tries < 1000; ++tries) {
        Draws d(seed, problem++);
        auto [q, a] = arithmeticFact(d);
        if (!seen(trainingText, q, a) && asked.insert(q).second)
          return std::pair{q, a};
      }
      throw RuntimeError("arithmetic: no held-out facts left to ask (the "
                         "training text holds nearly all of them)");
    };
    uint64_t problem = 0;
    for (int64_t i = 0; i < count; ++i) {
      auto [q1, a1] = fresh(problem);
      auto [q2, a2] = fresh(problem);
      auto [q, a] = fresh(problem);
      out.push_back({q1 + a1 + "\n" + q2 + a2 + "\n" + q, a, "\n"});
    }
    return out;
  }
  if (name.rfind("file:", 0) == 0)
    return loadTaskFile(name.substr(5), count, trainingText);
  if (name.rfind("chat:", 0) == 0)
    return loadChatTask(name.substr(5), count, trainingText);
  if (name.rfind("passkey:", 0) == 0)
    return passkeyTask(name, count, seed);
  if (name == "counting") {
    for (int64_t i = 0; i < count; ++i) {
      Draws d(seed, uint64_t(i));
      int64_t s = d.range(100, 989);
      auto n = [&](int64_t k) { return std::to_string(s + k); };
      out.push_back({"Count from " + n(0) + ": " + n(0) + ", " + n(1) + ", " + n(2) + ",",
                     " " + n(3) + ", " + n(4) + ", " + n(5), ""});
    }
    return out;
  }
  std::string all;
  for (const std::string &t : taskNames())
    all += (all.empty() ? "" : ", ") + t;
  throw RuntimeError("unknown task '" + name + "' (expected one of " + all +
                     ", file:PATH, chat:PATH or passkey:N)");
}

std::vector<TaskResult> evaluateTask(Session &session,
                                     const std::vector<TaskProblem> &problems,
                                     const std::vector<Regime> &regimes,
                                     int64_t bosToken) {
  Decoder decoder(session);
  std::vector<TaskResult> results;
  for (const Regime &regime : regimes) {
    TaskResult r;
    r.regime = regime.name();
    for (size_t first = 0; first < problems.size(); first += decoder.batchSize()) {
      size_t count = std::min<size_t>(decoder.batchSize(), problems.size() - first);
      std::vector<std::vector<int32_t>> prompts;
      std::vector<std::string> written(count);
      size_t longest = 0;
      for (size_t i = 0; i < count; ++i) {
        const TaskProblem &p = problems[first + i];
        std::vector<int32_t> ids = {(int32_t)bosToken};
        for (unsigned char c : p.prompt)
          ids.push_back(c);
        prompts.push_back(std::move(ids));
        longest = std::max(longest, size_t(p.limit()));
      }
      decoder.generate(prompts, regime, SamplingOptions{}, int64_t(longest),
                       [&](int64_t row, int32_t id) {
                         const TaskProblem &p = problems[first + row];
                         if (id == bosToken)
                           return false;
                         std::string &w = written[row];
                         w += char(id);
                         bool ended = !p.terminator.empty() && w.size() >= p.terminator.size() &&
                                      w.compare(w.size() - p.terminator.size(),
                                                p.terminator.size(), p.terminator) == 0;
                         return !ended && int64_t(w.size()) < p.limit();
                       });
      for (size_t i = 0; i < count; ++i) {
        const TaskProblem &p = problems[first + i];
        r.correct += written[i] == p.answer + p.terminator;
        size_t end = p.terminator.empty() ? std::string::npos : written[i].find(p.terminator);
        r.answerBytes += int64_t(std::min(end, written[i].size()));
        ++r.total;
      }
    }
    results.push_back(r);
  }
  return results;
}

Json toJson(const std::string &task, const std::vector<TaskResult> &results) {
  Json regimes = Json::object();
  for (const TaskResult &r : results)
    regimes[r.regime] = Json::object({{"accuracy", r.accuracy()},
                                      {"correct", r.correct},
                                      {"total", r.total},
                                      {"mean_answer_bytes", r.meanAnswerBytes()}});
  int64_t problems = results.empty() ? 0 : results.front().total;
  return Json::object({{"task", task}, {"problems", problems},
                       {"regimes", std::move(regimes)}});
}

std::vector<TaskResult> evaluateTaskOnData(Session &session, const std::string &task,
                                           const TokenStream &data, bool ids,
                                           std::vector<Regime> regimes, int64_t count,
                                           uint64_t seed) {
  const std::string &tokenizer = session.tokenizerName();
  if (tokenizer != "bytes")
    throw RuntimeError("--task asks byte-level text questions and needs a run "
                       "trained on bytes; this run's tokenizer is " + tokenizer);
  if (ids)
    throw RuntimeError("--task asks byte-level text questions; the data is "
                       "token ids (.bin)");
  if (count < 1)
    throw RuntimeError("--problems must be >= 1");
  if (regimes.empty())
    regimes = defaultRegimes(session.bundle());
  std::string text = detokenize(data.toVector());
  auto problems = makeTask(task, count, seed, text);
  return evaluateTask(session, problems, regimes, session.model().bosTokenId);
}

} // namespace fbt
