//===- Grammar.cpp - a context-free grammar over bytes and its recognizer -===//

#include "runtime/decode/Grammar.h"

#include "runtime/base/Error.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

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

/// One step of the recognizer: the heads after a byte (or at the start),
/// built from the returns of the state before. A position reached twice in
/// a step is one node whose returns are the union; positions that take
/// their returns from another of this step's nodes (a rule entered last in
/// its alternative, or a rule done without reading a byte) are forwarded
/// what it gains later in the step.
class GrammarStep {
public:
  GrammarStep(const Grammar &g, GrammarBudget *budget) : g_(g), budget_(budget) {}

  using NodePtr = std::shared_ptr<const GrammarState::Node>;
  using Frame = GrammarState::Frame;

  void reach(Frame f, const std::vector<NodePtr> &parents, bool bottom) {
    spend();
    auto [it, fresh] = nodes_.try_emplace(f);
    Built &n = it->second;
    if (fresh) {
      n.node = std::make_shared<GrammarState::Node>();
      n.node->frame = f;
    }
    std::vector<NodePtr> added;
    for (const NodePtr &p : parents)
      if (n.seen.insert(p.get()).second) {
        spend();
        n.node->parents.push_back(p);
        added.push_back(p);
      }
    bool newBottom = bottom && !n.node->bottom;
    n.node->bottom |= bottom;
    if (!fresh && added.empty() && !newBottom)
      return;
    const Grammar::Sequence &alt = g_.rules()[f.rule].alternatives[f.alternative];
    if (f.position == (int32_t)alt.size()) { // the rule is done: back to each caller
      complete_ |= newBottom;
      for (const NodePtr &p : added) {
        Frame after = p->frame;
        ++after.position;
        auto own = nodes_.find(p->frame);
        if (own != nodes_.end() && own->second.node.get() == p.get())
          own->second.forwards.push_back(after); // p may gain returns later in this step
        reach(after, std::vector<NodePtr>(p->parents), p->bottom); // a copy: p may grow
      }
    } else if (alt[f.position].isRule) {
      int32_t callee = alt[f.position].index;
      const auto &alternatives = g_.rules()[callee].alternatives;
      if (f.position + 1 == (int32_t)alt.size()) {
        // Last in its alternative: the callee returns where this would.
        if (fresh)
          for (size_t a = 0; a < alternatives.size(); ++a)
            nodes_[f].forwards.push_back({callee, (int32_t)a, 0});
      } else if (fresh) {
        NodePtr self = nodes_[f].node;
        for (size_t a = 0; a < alternatives.size(); ++a)
          reach({callee, (int32_t)a, 0}, {self}, false);
      }
    }
    // What this node gained, to the nodes that return where it does (by
    // index: reaching them may add more).
    for (size_t i = 0; i < nodes_[f].forwards.size(); ++i)
      reach(nodes_[f].forwards[i], added, newBottom);
  }

  GrammarState finish() {
    GrammarState s;
    s.complete_ = complete_;
    for (auto &[f, n] : nodes_) {
      const Grammar::Sequence &alt = g_.rules()[f.rule].alternatives[f.alternative];
      if (f.position < (int32_t)alt.size() && !alt[f.position].isRule)
        s.heads_.push_back(std::move(n.node));
    }
    return s;
  }

private:
  void spend() {
    if (budget_ && --budget_->left < 0)
      throw RuntimeError("grammar: the parse needs more work than this request's budget "
                         "allows (the grammar is too ambiguous)");
  }

  struct Built {
    std::shared_ptr<GrammarState::Node> node;
    std::set<const GrammarState::Node *> seen; ///< its parents, by identity
    std::vector<Frame> forwards;
  };
  const Grammar &g_;
  GrammarBudget *budget_;
  std::map<Frame, Built> nodes_;
  bool complete_ = false;
};

GrammarState GrammarState::start(const Grammar &g, GrammarBudget *budget) {
  GrammarStep step(g, budget);
  const auto &alternatives = g.rules().at(g.root()).alternatives;
  for (size_t a = 0; a < alternatives.size(); ++a)
    step.reach({g.root(), (int32_t)a, 0}, {}, true);
  return step.finish();
}

GrammarState GrammarState::advance(const Grammar &g, uint8_t c, GrammarBudget *budget) const {
  GrammarStep step(g, budget);
  for (const auto &head : heads_) {
    Frame f = head->frame;
    const Grammar::Element e = g.rules()[f.rule].alternatives[f.alternative][f.position];
    if (!g.byteSets()[e.index].test(c))
      continue;
    ++f.position;
    step.reach(f, head->parents, head->bottom);
  }
  return step.finish();
}

GrammarState GrammarState::advance(const Grammar &g, const std::string &text,
                                   GrammarBudget *budget) const {
  GrammarState s = *this;
  for (char c : text) {
    s = s.advance(g, (uint8_t)c, budget);
    if (s.dead())
      break;
  }
  return s;
}

ByteSet GrammarState::next(const Grammar &g) const {
  ByteSet out;
  for (const auto &head : heads_) {
    const Frame &f = head->frame;
    out |= g.byteSets()[g.rules()[f.rule].alternatives[f.alternative][f.position].index];
  }
  return out;
}

namespace {
std::string ruleName(const Grammar &g, int32_t r) {
  return "'" + g.rules()[r].name + "'";
}
} // namespace

void checkGrammar(const Grammar &g) {
  const auto &rules = g.rules();
  if (g.root() < 0 || g.root() >= (int32_t)rules.size())
    throw RuntimeError("grammar: the root names no rule");
  // Productive: some alternative whose every element is (a non-empty byte
  // set, or a productive rule); nullable: some alternative of nullable rules
  // alone. Both as fixpoints.
  std::vector<bool> productive(rules.size(), false), nullable(rules.size(), false);
  for (bool changed = true; changed;) {
    changed = false;
    for (size_t r = 0; r < rules.size(); ++r)
      for (const auto &alt : rules[r].alternatives) {
        bool prod = true, null = true;
        for (const Grammar::Element &e : alt) {
          prod &= e.isRule ? (bool)productive[e.index] : g.byteSets()[e.index].any();
          null &= e.isRule && nullable[e.index];
        }
        if (prod && !productive[r])
          productive[r] = changed = true;
        if (null && !nullable[r])
          nullable[r] = changed = true;
      }
  }
  // Every rule the root can reach must be productive, and none may enter
  // itself through rules that read nothing first.
  std::vector<int> mark(rules.size(), 0); // 0 new, 1 on the path, 2 done
  std::vector<bool> reached(rules.size(), false);
  std::vector<int32_t> todo = {g.root()};
  reached[g.root()] = true;
  while (!todo.empty()) {
    int32_t r = todo.back();
    todo.pop_back();
    if (!productive[r])
      throw RuntimeError("grammar: " + ruleName(g, r) + " derives no finite text (every "
                         "alternative needs itself, or nothing can be read)");
    for (const auto &alt : rules[r].alternatives)
      for (const Grammar::Element &e : alt)
        if (e.isRule && !reached[e.index])
          reached[e.index] = true, todo.push_back(e.index);
  }
  // Left recursion: a cycle in "r may enter s before reading a byte".
  std::function<void(int32_t, std::vector<int32_t> &)> visit = [&](int32_t r,
                                                                   std::vector<int32_t> &path) {
    mark[r] = 1;
    path.push_back(r);
    for (const auto &alt : rules[r].alternatives)
      for (const Grammar::Element &e : alt) {
        if (!e.isRule)
          break;
        if (mark[e.index] == 1) {
          std::string cycle;
          auto from = std::find(path.begin(), path.end(), e.index);
          for (auto it = from; it != path.end(); ++it)
            cycle += ruleName(g, *it) + " -> ";
          throw RuntimeError("grammar: left recursion: " + cycle + ruleName(g, e.index) +
                             " before reading a byte");
        }
        if (mark[e.index] == 0)
          visit(e.index, path);
        if (!nullable[e.index])
          break;
      }
    path.pop_back();
    mark[r] = 2;
  };
  std::vector<int32_t> path;
  for (size_t r = 0; r < rules.size(); ++r)
    if (reached[r] && mark[r] == 0)
      visit((int32_t)r, path);
}

} // namespace fbt
