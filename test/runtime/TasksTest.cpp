//===- TasksTest.cpp - held-out problems for fbt eval --task --------------===//

#include "runtime/base/Error.h"
#include "runtime/eval/Tasks.h"
#include "runtime/text/DefaultCorpus.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

using namespace fbt;

namespace {

/// The value of "a+b", "a-b" or "a*b".
int64_t evaluate(const std::string &q) {
  size_t op = q.find_first_of("+-*", 1);
  int64_t a = std::stoll(q.substr(0, op)), b = std::stoll(q.substr(op + 1));
  return q[op] == '+' ? a + b : q[op] == '-' ? a - b : a * b;
}

std::string lastLine(const std::string &s) {
  size_t nl = s.rfind('\n');
  return nl == std::string::npos ? s : s.substr(nl + 1);
}

TEST(TasksTest, ArithmeticAnswersAreRightAndHeldOut) {
  // A "training text" holding some facts the draw would produce.
  std::vector<TaskProblem> first = makeTask("arithmetic", 50, 3, "");
  std::string seen;
  for (size_t i = 0; i < 10; ++i) {
    std::string q = lastLine(first[i].prompt);
    seen += q + first[i].answer + "\n";
  }
  std::vector<TaskProblem> ps = makeTask("arithmetic", 50, 3, seen);
  std::set<std::string> asked;
  for (const TaskProblem &p : ps) {
    std::string q = lastLine(p.prompt);
    ASSERT_EQ(q.back(), '=');
    q.pop_back();
    EXPECT_EQ(p.answer, std::to_string(evaluate(q))) << p.prompt;
    EXPECT_EQ(p.terminator, "\n");
    EXPECT_EQ(seen.find(q + "=" + p.answer + "\n"), std::string::npos) << q;
    EXPECT_TRUE(asked.insert(q).second) << "asked twice: " << q;
    // The two solved context facts are right too.
    size_t nl = p.prompt.find('\n');
    std::string fact = p.prompt.substr(0, nl);
    size_t eq = fact.find('=');
    EXPECT_EQ(fact.substr(eq + 1), std::to_string(evaluate(fact.substr(0, eq))));
  }
  // A pure function of the seed.
  std::vector<TaskProblem> again = makeTask("arithmetic", 50, 3, seen);
  for (size_t i = 0; i < ps.size(); ++i)
    EXPECT_EQ(ps[i].prompt, again[i].prompt);
}

TEST(TasksTest, NoHeldOutProblemIsInTheEmbeddedCorpus) {
  // The corpus's lines, read independently of the task's own check.
  std::string text = detokenize(loadDefaultCorpus().toVector());
  std::set<std::string> lines;
  for (size_t at = 0, nl; at <= text.size(); at = nl + 1) {
    nl = std::min(text.find('\n', at), text.size());
    lines.insert(text.substr(at, nl - at));
  }
  // The corpus does teach arithmetic of the task's kinds.
  int64_t facts = 0;
  for (const std::string &l : lines)
    facts += l.find('=') != std::string::npos && l.find(' ') == std::string::npos;
  EXPECT_GT(facts, 1000);
  std::vector<TaskProblem> ps = makeTask("arithmetic", 200, 20261201, text);
  ASSERT_EQ(ps.size(), 200u);
  for (const TaskProblem &p : ps) {
    std::string all = p.prompt + p.answer; // two solved facts, then the asked one
    for (size_t at = 0, nl; at <= all.size(); at = nl + 1) {
      nl = std::min(all.find('\n', at), all.size());
      EXPECT_EQ(lines.count(all.substr(at, nl - at)), 0u) << all.substr(at, nl - at);
    }
  }
}

TEST(TasksTest, CountingContinuesPastTheCorpusRange) {
  for (const TaskProblem &p : makeTask("counting", 30, 1, "")) {
    int64_t s = std::stoll(p.prompt.substr(11)); // "Count from S: ..."
    EXPECT_GE(s, 100);
    EXPECT_EQ(p.prompt, "Count from " + std::to_string(s) + ": " + std::to_string(s) +
                            ", " + std::to_string(s + 1) + ", " + std::to_string(s + 2) + ",");
    EXPECT_EQ(p.answer, " " + std::to_string(s + 3) + ", " + std::to_string(s + 4) +
                            ", " + std::to_string(s + 5));
  }
}

TEST(TasksTest, UnknownTaskIsNamed) {
  try {
    makeTask("poetry", 1, 1, "");
    FAIL();
  } catch (const RuntimeError &e) {
    EXPECT_STREQ(e.what(), "unknown task 'poetry' (expected one of arithmetic, counting)");
  }
}

} // namespace
