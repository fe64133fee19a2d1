//===- Grammar.cpp - a context-free grammar over bytes and its recognizer -===//

#include "runtime/decode/Grammar.h"

#include "runtime/base/Error.h"

#include <algorithm>

namespace fbt {

int32_t Grammar::addRule(std::string name) {
  rules_.push_back({std::move(name), {}});
  return (int32_t)rules_.size() - 1;
}

void Grammar::addAlternative(int32_t rule, Sequence alternative) {
  rules_.at(rule).alternatives.push_back(std::move(alternative));
}

Grammar::Element Grammar::bytes(const ByteSet &set) {
  for (size_t i = 0; i < sets_.size(); ++i)
    if (sets_[i] == set)
      return {false, (int32_t)i};
  sets_.push_back(set);
  return {false, (int32_t)sets_.size() - 1};
}

Grammar::Element Grammar::byte(uint8_t c) {
  ByteSet s;
  s.set(c);
  return bytes(s);
}

Grammar::Sequence Grammar::literal(const std::string &text) {
  Sequence out;
  for (char c : text)
    out.push_back(byte((uint8_t)c));
  return out;
}

namespace {
/// How many rules may be entered without reading a byte: deeper is a left
/// recursion, which the recognizer cannot run.
constexpr int kMaxExpansion = 1024;
} // namespace

void GrammarState::expand(const Grammar &g, Stack s, std::vector<Stack> &out, int depth) {
  if (depth > kMaxExpansion)
    throw RuntimeError("grammar: rules enter each other without reading a byte (left "
                       "recursion)");
  if (s.empty()) {
    out.push_back(std::move(s));
    return;
  }
  const Frame f = s.back();
  const Grammar::Sequence &alt = g.rules()[f.rule].alternatives[f.alternative];
  if (f.position == (int32_t)alt.size()) { // this rule is done: back to its caller
    s.pop_back();
    if (!s.empty())
      ++s.back().position;
    expand(g, std::move(s), out, depth + 1);
    return;
  }
  const Grammar::Element e = alt[f.position];
  if (!e.isRule) {
    out.push_back(std::move(s));
    return;
  }
  // A rule last in its alternative takes its caller's place (the caller
  // would only return): right recursion runs in constant stack.
  if (f.position + 1 == (int32_t)alt.size())
    s.pop_back();
  const auto &alternatives = g.rules()[e.index].alternatives;
  for (size_t a = 0; a < alternatives.size(); ++a) {
    Stack c = s;
    c.push_back({e.index, (int32_t)a, 0});
    expand(g, std::move(c), out, depth + 1);
  }
}

void GrammarState::normalize() {
  std::sort(stacks_.begin(), stacks_.end());
  stacks_.erase(std::unique(stacks_.begin(), stacks_.end()), stacks_.end());
}

GrammarState GrammarState::start(const Grammar &g) {
  GrammarState s;
  const auto &alternatives = g.rules().at(g.root()).alternatives;
  for (size_t a = 0; a < alternatives.size(); ++a)
    expand(g, Stack{{g.root(), (int32_t)a, 0}}, s.stacks_, 0);
  s.normalize();
  return s;
}

GrammarState GrammarState::advance(const Grammar &g, uint8_t c) const {
  GrammarState next;
  for (const Stack &s : stacks_) {
    if (s.empty())
      continue;
    const Frame &top = s.back();
    const Grammar::Element e = g.rules()[top.rule].alternatives[top.alternative][top.position];
    if (!g.byteSets()[e.index].test(c))
      continue;
    Stack moved = s;
    ++moved.back().position;
    expand(g, std::move(moved), next.stacks_, 0);
  }
  next.normalize();
  return next;
}

GrammarState GrammarState::advance(const Grammar &g, const std::string &text) const {
  GrammarState s = *this;
  for (char c : text) {
    s = s.advance(g, (uint8_t)c);
    if (s.dead())
      break;
  }
  return s;
}

bool GrammarState::complete() const {
  return std::any_of(stacks_.begin(), stacks_.end(), [](const Stack &s) { return s.empty(); });
}

bool GrammarState::canContinue() const {
  return std::any_of(stacks_.begin(), stacks_.end(), [](const Stack &s) { return !s.empty(); });
}

ByteSet GrammarState::next(const Grammar &g) const {
  ByteSet out;
  for (const Stack &s : stacks_)
    if (!s.empty()) {
      const Frame &top = s.back();
      out |= g.byteSets()[g.rules()[top.rule].alternatives[top.alternative][top.position].index];
    }
  return out;
}

} // namespace fbt
