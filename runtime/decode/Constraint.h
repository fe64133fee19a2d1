//===- Constraint.h - decoding that follows a grammar -------------*- C++ -*-===//
//
// Constrained decoding: before each token is sampled, every token whose
// bytes the grammar (Grammar.h) cannot read next gets -inf, so that the text
// generated is always a prefix of a sentence of the grammar, and it ends
// where the sentence does.
//
// The vocabulary is a trie of the tokens' bytes (TokenTrie, built once per
// tokenizer), walked beside the grammar: a branch ends at the first byte the
// grammar refuses, so a step costs what the allowed tokens share of the
// trie, not the vocabulary times its tokens' lengths. Grammars are compiled
// once per response format and kept (GrammarCache).
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_DECODE_CONSTRAINT_H
#define FBT_RUNTIME_DECODE_CONSTRAINT_H

#include "runtime/decode/Grammar.h"

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace fbt {

class TokenTrie {
public:
  /// Token i's bytes are tokens[i]; an empty one (a control token) is never
  /// allowed.
  explicit TokenTrie(const std::vector<std::string> &tokens);

  /// The tokens whose bytes the grammar can read from `state`, spending
  /// `budget` (GrammarBudget) where given.
  std::vector<int32_t> allowed(const Grammar &g, const GrammarState &state,
                               GrammarBudget *budget = nullptr) const;
  const std::string &bytes(int32_t token) const { return tokens_.at(token); }
  int64_t size() const { return (int64_t)tokens_.size(); }

private:
  struct Node {
    std::vector<std::pair<uint8_t, int32_t>> children; ///< byte, node
    std::vector<int32_t> tokens;                       ///< ending here
  };
  void walk(const Grammar &g, int32_t node, const GrammarState &state,
            std::vector<int32_t> &out, GrammarBudget *budget) const;

  std::vector<std::string> tokens_;
  std::vector<Node> nodes_;
};

/// One generated text's place in a grammar. Each token's mask and take
/// spend at most `workPerToken` (GrammarBudget; by default kWorkPerToken):
/// past it they throw, so that a grammar ends
/// its own text, never holds the decode batch.
class Constraint {
public:
  static constexpr int64_t kWorkPerToken = int64_t(1) << 20;

  Constraint(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const TokenTrie> vocabulary,
             int64_t workPerToken = kWorkPerToken);

  /// Sets the logits of every token that cannot come next to -inf; false if
  /// none can (the vocabulary cannot spell what the grammar needs).
  bool mask(float *logits, int64_t vocab) const;
  /// Reads token `id`'s bytes; false if the grammar refuses them.
  bool take(int32_t id);
  /// The text so far is a whole sentence that nothing may extend: the
  /// generation ends here.
  bool finished() const { return state_.complete() && !state_.canContinue(); }

private:
  std::shared_ptr<const Grammar> grammar_;
  std::shared_ptr<const TokenTrie> vocabulary_;
  int64_t workPerToken_;
  GrammarState state_;
};

/// Grammars by key (a response format), compiled on first use and kept,
/// the least recently used dropped past `capacity`. Thread-safe.
class GrammarCache {
public:
  explicit GrammarCache(size_t capacity = 64) : capacity_(capacity) {}
  /// The grammar of `key`, compiled by `compile` if not kept (what it
  /// throws goes to the caller, and nothing is kept).
  std::shared_ptr<const Grammar> get(const std::string &key,
                                     const std::function<Grammar()> &compile);
  size_t compiled() const { return compiled_; }

private:
  std::mutex m_;
  size_t capacity_, compiled_ = 0;
  std::map<std::string, std::shared_ptr<const Grammar>> kept_;
  std::deque<std::string> order_; ///< least recently used first
};

} // namespace fbt

#endif // FBT_RUNTIME_DECODE_CONSTRAINT_H
