//===- Constraint.cpp - decoding that follows a grammar --------------------===//

#include "runtime/decode/Constraint.h"

#include <algorithm>
#include <cmath>

namespace fbt {

TokenTrie::TokenTrie(const std::vector<std::string> &tokens) : tokens_(tokens), nodes_(1) {
  for (size_t id = 0; id < tokens.size(); ++id) {
    if (tokens[id].empty())
      continue;
    int32_t at = 0;
    for (char ch : tokens[id]) {
      uint8_t c = (uint8_t)ch;
      auto &kids = nodes_[at].children;
      auto it = std::find_if(kids.begin(), kids.end(), [&](const auto &k) { return k.first == c; });
      if (it != kids.end()) {
        at = it->second;
        continue;
      }
      nodes_.push_back({});
      nodes_[at].children.push_back({c, (int32_t)nodes_.size() - 1});
      at = (int32_t)nodes_.size() - 1;
    }
    nodes_[at].tokens.push_back((int32_t)id);
  }
}

void TokenTrie::walk(const Grammar &g, int32_t node, const GrammarState &state,
                     std::vector<int32_t> &out, GrammarBudget *budget) const {
  ByteSet next = state.next(g);
  for (const auto &[c, child] : nodes_[node].children) {
    if (!next.test(c))
      continue;
    GrammarState after = state.advance(g, c, budget);
    if (after.dead())
      continue;
    out.insert(out.end(), nodes_[child].tokens.begin(), nodes_[child].tokens.end());
    walk(g, child, after, out, budget);
  }
}

std::vector<int32_t> TokenTrie::allowed(const Grammar &g, const GrammarState &state,
                                        GrammarBudget *budget) const {
  std::vector<int32_t> out;
  walk(g, 0, state, out, budget);
  std::sort(out.begin(), out.end());
  return out;
}

Constraint::Constraint(std::shared_ptr<const Grammar> grammar,
                       std::shared_ptr<const TokenTrie> vocabulary, int64_t workPerToken)
    : grammar_(std::move(grammar)), vocabulary_(std::move(vocabulary)),
      workPerToken_(workPerToken), state_([&] {
        GrammarBudget budget{workPerToken};
        return GrammarState::start(*grammar_, &budget);
      }()) {}

bool Constraint::mask(float *logits, int64_t vocab) const {
  GrammarBudget budget{workPerToken_};
  std::vector<int32_t> ok = vocabulary_->allowed(*grammar_, state_, &budget);
  std::vector<bool> keep(vocab, false);
  for (int32_t id : ok)
    if (id < vocab)
      keep[id] = true;
  for (int64_t i = 0; i < vocab; ++i)
    if (!keep[i])
      logits[i] = -INFINITY;
  return !ok.empty();
}

bool Constraint::take(int32_t id) {
  if (id < 0 || id >= vocabulary_->size() || vocabulary_->bytes(id).empty())
    return false;
  GrammarBudget budget{workPerToken_};
  GrammarState next = state_.advance(*grammar_, vocabulary_->bytes(id), &budget);
  if (next.dead())
    return false;
  state_ = std::move(next);
  return true;
}

std::shared_ptr<const Grammar> GrammarCache::get(const std::string &key,
                                                 const std::function<Grammar()> &compile) {
  {
    std::lock_guard<std::mutex> g(m_);
    auto it = kept_.find(key);
    if (it != kept_.end()) {
      order_.erase(std::find(order_.begin(), order_.end(), key));
      order_.push_back(key);
      return it->second;
    }
  }
  auto grammar = std::make_shared<const Grammar>(compile()); // outside the lock
  std::lock_guard<std::mutex> g(m_);
  ++compiled_;
  if (kept_.emplace(key, grammar).second) {
    order_.push_back(key);
    if (order_.size() > capacity_) {
      kept_.erase(order_.front());
      order_.pop_front();
    }
  }
  return grammar;
}

} // namespace fbt
