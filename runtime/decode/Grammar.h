//===- Grammar.h - a context-free grammar over bytes and its recognizer -*- C++ -*-===//
//
// What constrained decoding steers by: a context-free grammar whose
// terminals are byte sets, and a recognizer that reads a text one byte at a
// time and says, at every point, which bytes may come next and whether the
// text read so far is complete.
//
// A rule is a set of alternatives, each a sequence of elements (a byte set,
// or another rule). The recognizer's state (GrammarState) is a
// graph-structured stack of the positions the parse may be at. A rule
// referenced last in an alternative takes its caller's place, so right
// recursion ("chars ::= char chars | ''") runs in constant depth. Rules must
// not be left recursive and must each derive some finite text:
// checkGrammar() refuses a grammar that breaks either, before any byte.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_DECODE_GRAMMAR_H
#define FBT_RUNTIME_DECODE_GRAMMAR_H

#include <bitset>
#include <cstdint>
#include <memory>
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

/// What one request's parse may spend: work units (a parse position
/// reached, or a return it gains) left. A step that would spend past it
/// throws, naming the budget, so one grammar cannot take the time of others.
struct GrammarBudget {
  int64_t left;
};

/// Where a recognizer stands: a graph-structured stack (as a GLR parser's).
/// Each head is a parse position waiting for a byte set, with the set of
/// positions it may return to when its rule is done, themselves shared by
/// every parse that returns there. Parses that reach the same position at
/// the same byte are one head, whatever their history, so a step's heads
/// are at most the grammar's positions: an ambiguous grammar costs work
/// bounded by its size and the text's nesting, never a doubling per byte.
/// Copying a state copies its heads' pointers only.
class GrammarState {
public:
  /// Before the first byte.
  static GrammarState start(const Grammar &g, GrammarBudget *budget = nullptr);

  /// The state after one more byte; an empty state (dead()) if `c` cannot
  /// come next.
  GrammarState advance(const Grammar &g, uint8_t c, GrammarBudget *budget = nullptr) const;
  /// The state after `text`; dead() as soon as a byte cannot come.
  GrammarState advance(const Grammar &g, const std::string &text,
                       GrammarBudget *budget = nullptr) const;

  /// No parse continues: the text so far is not a prefix of a sentence.
  bool dead() const { return heads_.empty() && !complete_; }
  /// The text so far is a whole sentence.
  bool complete() const { return complete_; }
  /// Some parse may read another byte.
  bool canContinue() const { return !heads_.empty(); }
  /// The bytes that may come next.
  ByteSet next(const Grammar &g) const;
  /// How many heads the state has (for tests of the bound above).
  size_t heads() const { return heads_.size(); }

  struct Frame {
    int32_t rule, alternative, position;
    bool operator<(const Frame &o) const {
      return rule != o.rule                 ? rule < o.rule
             : alternative != o.alternative ? alternative < o.alternative
                                            : position < o.position;
    }
  };
  /// A parse position and where it may return: the positions in `parents`
  /// (each resumes after the element that called this rule), and, where
  /// `bottom`, the end of the sentence.
  struct Node {
    Frame frame;
    std::vector<std::shared_ptr<const Node>> parents;
    bool bottom = false;
  };

private:
  friend class GrammarStep;
  std::vector<std::shared_ptr<const Node>> heads_; ///< each waits for a byte set
  bool complete_ = false;
};

/// Refuses a grammar the recognizer cannot run or that can never end,
/// naming the rule: one with no alternatives or an empty byte set that no
/// text can get past, one that derives no finite text (unproductive), and a
/// left recursion (a rule that can enter itself before reading a byte).
void checkGrammar(const Grammar &g);

} // namespace fbt

#endif // FBT_RUNTIME_DECODE_GRAMMAR_H
