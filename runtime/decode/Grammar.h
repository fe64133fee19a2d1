//===- Grammar.h - a context-free grammar over bytes and its recognizer -*- C++ -*-===//
//
// What constrained decoding steers by: a context-free grammar whose
// terminals are byte sets, and a recognizer that reads a text one byte at a
// time and says, at every point, which bytes may come next and whether the
// text read so far is complete.
//
// A rule is a set of alternatives, each a sequence of elements (a byte set,
// or another rule). The recognizer's state is the set of stacks of the
// positions the parse may be at: a stack's top is the byte set it waits for,
// the frames below it the rules it will go back to (as in a pushdown
// automaton; ambiguity keeps several stacks). A rule referenced last in an
// alternative replaces its caller's frame, so right recursion ("chars ::=
// char chars | ''") runs in constant stack. Rules must not be left
// recursive; the builders (JsonGrammar.h) write none.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_DECODE_GRAMMAR_H
#define FBT_RUNTIME_DECODE_GRAMMAR_H

#include <bitset>
#include <cstdint>
#include <string>
#include <vector>

namespace fbt {

using ByteSet = std::bitset<256>;

class Grammar {
public:
  struct Element {
    bool isRule = false;
    int32_t index = 0; ///< into byteSets() or rules()
  };
  using Sequence = std::vector<Element>;
  struct Rule {
    std::string name; ///< for messages and dumps
    std::vector<Sequence> alternatives;
  };

  /// A new rule without alternatives yet (so that rules can refer to each
  /// other, recursion included); its index.
  int32_t addRule(std::string name);
  void addAlternative(int32_t rule, Sequence alternative);
  Element bytes(const ByteSet &set);
  Element byte(uint8_t c);
  static Element rule(int32_t index) { return {true, index}; }
  /// The elements that match `text` exactly.
  Sequence literal(const std::string &text);

  void setRoot(int32_t rule) { root_ = rule; }
  int32_t root() const { return root_; }
  const std::vector<Rule> &rules() const { return rules_; }
  const std::vector<ByteSet> &byteSets() const { return sets_; }

private:
  std::vector<Rule> rules_;
  std::vector<ByteSet> sets_;
  int32_t root_ = 0;
};

/// Where a recognizer stands: every stack the parse may be at (each frame a
/// rule, one of its alternatives and the element next in it). An empty
/// stack: the text so far is a whole sentence.
class GrammarState {
public:
  /// Before the first byte.
  static GrammarState start(const Grammar &g);

  /// The state after one more byte; an empty state (dead()) if `c` cannot
  /// come next.
  GrammarState advance(const Grammar &g, uint8_t c) const;
  /// The state after `text`; dead() as soon as a byte cannot come.
  GrammarState advance(const Grammar &g, const std::string &text) const;

  /// No parse continues: the text so far is not a prefix of a sentence.
  bool dead() const { return stacks_.empty(); }
  /// The text so far is a whole sentence.
  bool complete() const;
  /// Some parse may read another byte.
  bool canContinue() const;
  /// The bytes that may come next.
  ByteSet next(const Grammar &g) const;

  bool operator==(const GrammarState &o) const { return stacks_ == o.stacks_; }

private:
  struct Frame {
    int32_t rule, alternative, position;
    bool operator==(const Frame &o) const {
      return rule == o.rule && alternative == o.alternative && position == o.position;
    }
    bool operator<(const Frame &o) const {
      return rule != o.rule                 ? rule < o.rule
             : alternative != o.alternative ? alternative < o.alternative
                                            : position < o.position;
    }
  };
  using Stack = std::vector<Frame>;
  /// Pushes into `out` every stack reachable from `s` without reading a
  /// byte whose top waits for a byte set (or that is empty: complete).
  static void expand(const Grammar &g, Stack s, std::vector<Stack> &out, int depth);
  void normalize();

  std::vector<Stack> stacks_; ///< sorted, without duplicates
};

} // namespace fbt

#endif // FBT_RUNTIME_DECODE_GRAMMAR_H
