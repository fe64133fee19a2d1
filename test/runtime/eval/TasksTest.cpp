//===- TasksTest.cpp - held-out problems for fbt eval --task --------------===//

#include "runtime/base/Error.h"
#include "runtime/eval/Tasks.h"
#include "runtime/text/DefaultCorpus.h"

#include <gtest/gtest.h>

#include <fstream>
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
    EXPECT_STREQ(e.what(),
                 "unknown task 'poetry' (expected one of arithmetic, counting, file:PATH, chat:PATH or passkey:N)");
  }
}

/// A task file in the test's temporary folder.
std::string writeTaskFile(const std::string &name, const std::string &text) {
  std::string path = ::testing::TempDir() + name;
  std::ofstream(path, std::ios::binary) << text;
  return path;
}

TEST(TasksTest, FileTaskAsksItsProblemsInOrder) {
  std::string path = writeTaskFile(
      "tasks-ok.jsonl",
      "{\"prompt\": \"$1+2=3\\n$4*3=2\\n$7+3*9=\", \"answer\": \"0\", \"terminator\": \"\\n\"}\n"
      "\n"
      "{\"prompt\": \"$5-6=\", \"answer\": \"9\"}\n"
      "{\"prompt\": \"$2*3=\", \"answer\": \"6\", \"k\": 1}\n");
  std::vector<TaskProblem> ps = makeTask("file:" + path, 10, 1, "text\n$9+9=8\n");
  ASSERT_EQ(ps.size(), 3u);
  EXPECT_EQ(ps[0].prompt, "$1+2=3\n$4*3=2\n$7+3*9=");
  EXPECT_EQ(ps[0].answer, "0");
  EXPECT_EQ(ps[0].terminator, "\n");
  EXPECT_EQ(ps[1].terminator, "");
  EXPECT_EQ(ps[2].answer, "6");
  EXPECT_EQ(makeTask("file:" + path, 2, 1, "").size(), 2u); // the first --problems
}

TEST(TasksTest, FileTaskRefusesTrainedProblemsAndBadLines) {
  auto message = [](const std::string &name, const std::string &text,
                    const std::string &training) {
    std::string path = writeTaskFile(name, text);
    try {
      makeTask("file:" + path, 10, 1, training);
    } catch (const RuntimeError &e) {
      std::string what = e.what();
      return what.substr(what.find(name));
    }
    return std::string("no error");
  };
  // The question (the prompt's last line) and its answer as a training line.
  std::string ok = "{\"prompt\": \"$0+1=1\\n$7+3=\", \"answer\": \"0\"}\n";
  EXPECT_EQ(message("t1.jsonl", ok, "a\n$7+3=0\nb"),
            "t1.jsonl:1: the problem '$7+3=0' stands as a line of the training text, so "
            "it is not held out");
  EXPECT_EQ(message("t2.jsonl", ok, "$7+3=0"), // the whole text is the line
            "t2.jsonl:1: the problem '$7+3=0' stands as a line of the training text, so "
            "it is not held out");
  // Part of a longer line is not the problem.
  EXPECT_EQ(message("t3.jsonl", ok, "$7+3=01\n$$7+3=0\n"), "no error");
  EXPECT_EQ(message("t4.jsonl", "{\"prompt\": 1, \"answer\": \"0\"}\n", ""),
            "t4.jsonl:1: expected a string, got a number");
  EXPECT_EQ(message("t5.jsonl", "{\"prompt\": \"x\"}\n", ""),
            "t5.jsonl:1: missing key 'answer'");
  EXPECT_EQ(message("t6.jsonl", "\n\n", ""), "t6.jsonl: no problems");
  EXPECT_EQ(message("t7.jsonl", "{\"prompt\": \"x\", \"answer\": \"\"}\n", ""),
            "t7.jsonl:1: the answer must be non-empty and no field may hold a NUL byte "
            "(the byte-level BOS)");
  try {
    makeTask("file:" + ::testing::TempDir() + "missing.jsonl", 1, 1, "");
    FAIL();
  } catch (const RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find("missing.jsonl: cannot open it"), std::string::npos);
  }
}

TEST(TasksTest, ChatTaskAsksTheConversationBeforeTheAnswer) {
  std::string path = writeTaskFile(
      "c.jsonl",
      R"({"messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "2+2"},)"
      R"( {"role": "assistant", "content": "4"}]})"
      "\n");
  std::vector<TaskProblem> ps = makeTask("chat:" + path, 10, 1, "");
  ASSERT_EQ(ps.size(), 1u);
  // The chat template up to the assistant's turn; the answer is its line.
  EXPECT_EQ(ps[0].prompt, "<|system|>\ns\n<|user|>\n2+2\n<|assistant|>\n");
  EXPECT_EQ(ps[0].answer, "4");
  EXPECT_EQ(ps[0].terminator, "\n");
  EXPECT_EQ(ps[0].limit(), 64); // room to answer at length
  auto message = [](const std::string &name, const std::string &text,
                    const std::string &training) {
    std::string path = writeTaskFile(name, text);
    try {
      makeTask("chat:" + path, 10, 1, training);
    } catch (const RuntimeError &e) {
      std::string what = e.what();
      return what.substr(what.find(name));
    }
    return std::string("no error");
  };
  std::string ok = R"({"messages": [{"role": "user", "content": "2+2"}, {"role": "assistant", "content": "4"}]})";
  EXPECT_EQ(message("c1.jsonl", ok, "x<|user|>\n2+2\n<|assistant|>\n4\n<|"),
            "c1.jsonl:1: the question and answer '2+2' -> '4' are in the training text, so it "
            "is not held out");
  EXPECT_EQ(message("c2.jsonl", ok, "<|user|>\n2+2\n<|assistant|>\n5\n"), "no error");
  EXPECT_EQ(message("c3.jsonl", R"({"messages": [{"role": "user", "content": "2+2"}]})", ""),
            "c3.jsonl:1: the conversation must end with the assistant's answer, after a turn "
            "that asks it");
  EXPECT_EQ(message("c4.jsonl", R"({"messages": [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b\nc"}]})", ""),
            "c4.jsonl:1: the answer must be one non-empty line and no field may hold a NUL "
            "byte (the byte-level BOS)");
}

TEST(TasksTest, PasskeySpreadsTheKeyOverThePrompt) {
  std::vector<TaskProblem> ps = makeTask("passkey:200", 4, 7, "");
  ASSERT_EQ(ps.size(), 4u);
  size_t last = 0;
  for (const TaskProblem &p : ps) {
    EXPECT_EQ(p.prompt.size(), 200u);
    EXPECT_EQ(p.answer.size(), 5u);
    EXPECT_EQ(p.terminator, ".");
    size_t at = p.prompt.find("The pass key is " + p.answer + ".");
    ASSERT_NE(at, std::string::npos);
    EXPECT_GE(at, last); // deeper problem by problem
    last = at;
    EXPECT_EQ(p.prompt.substr(p.prompt.size() - 28), "What is the pass key? It is ");
  }
  EXPECT_NE(ps[0].answer, ps[1].answer);
  EXPECT_THROW(makeTask("passkey:40", 1, 7, ""), RuntimeError);
  EXPECT_THROW(makeTask("passkey:x", 1, 7, ""), RuntimeError);
}

} // namespace
