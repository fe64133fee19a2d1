//===- Tasks.h - held-out problems answered by greedy decoding --*- C++ -*-===//
//
// `fbt eval --task NAME` asks the model problems whose exact answers are
// known and counts the greedy answers that match, per decoding regime:
//   arithmetic  "a+b=", "a-b=", "a*b=" of the default corpus's kinds (the
//               same ranges), drawn under their own seed; a problem whose
//               fact line is in the training text is never asked. Two
//               solved held-out facts precede each question, as the corpus's
//               arithmetic documents list facts one per line.
//   counting    "Count from S: S, S+1, S+2," with S in 100..989, beyond the
//               corpus's counts (which start below 81): the answer is the
//               next three numbers, " S+3, S+4, S+5", a value carried
//               through a list of updates.
//   file:PATH   problems written by a generator outside the runtime (e.g.
//               scripts/depth_task.py): a JSON Lines file, one
//               {"prompt", "answer", "terminator"?} per line, the first
//               --problems of them asked. A problem whose question (the
//               prompt's last line) and answer stand as a whole line in the
//               training text is refused: held-out means never trained on.
//   chat:PATH   held-out conversations (chat JSON Lines, as training takes
//               them: text/JsonlData.h), each ending with the assistant's
//               answer: the model is asked the conversation before it in the
//               chat template and writes until the line that closes the
//               turn ends (or 4x the answer's bytes, at least 64): exact
//               match of that line, so answers are one line each.
//               A conversation whose last question and answer stand in the
//               training text as a turn pair is refused.
//   passkey:N   a long-range check: a five-digit key stated once in N
//               bytes of filler and asked for at the end, problem i stating
//               it at depth (i + 0.5) / count, so the distances between key
//               and question spread from 0 to about N.
// Every task also reports the mean length of the written answers (bytes,
// up to the terminator), per regime: whether a regime answers shorter.
// Prompts are byte-level and start with BOS, like every training document.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_EVAL_TASKS_H
#define FBT_RUNTIME_EVAL_TASKS_H

#include "runtime/base/Json.h"
#include "runtime/decode/Decoder.h"
#include "runtime/session/Session.h"
#include "runtime/text/TokenStream.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fbt {

struct TaskProblem {
  std::string prompt; ///< the text after BOS
  std::string answer; ///< what the model must write next
  /// The answer ends where the model writes this (e.g. a newline); empty:
  /// the answer is a prefix of what is written.
  std::string terminator;
  /// The most bytes the model may write; 0: the answer and terminator's.
  int64_t maxLength = 0;
  int64_t limit() const {
    return maxLength ? maxLength : int64_t(answer.size() + terminator.size());
  }
};

/// The task names `fbt eval --task` takes.
const std::vector<std::string> &taskNames();

/// `count` problems of task `name` under `seed`, none of whose facts appear
/// in `trainingText` (arithmetic, file:PATH). Throws for an unknown name,
/// and for a task file that cannot be read or asks a trained problem.
std::vector<TaskProblem> makeTask(const std::string &name, int64_t count,
                                  uint64_t seed, std::string_view trainingText);

struct TaskResult {
  std::string regime;
  int64_t correct = 0, total = 0;
  /// Bytes written before the terminator (or all, where none came), summed.
  int64_t answerBytes = 0;
  double accuracy() const { return total ? double(correct) / double(total) : 0; }
  double meanAnswerBytes() const { return total ? double(answerBytes) / double(total) : 0; }
};

/// The greedy answers' exact-match counts, per regime.
std::vector<TaskResult> evaluateTask(Session &session,
                                     const std::vector<TaskProblem> &problems,
                                     const std::vector<Regime> &regimes,
                                     int64_t bosToken);

Json toJson(const std::string &task, const std::vector<TaskResult> &results);

/// `fbt eval --task`: `count` problems of `task` under `seed`, none of whose
/// facts appear in `data` (the run's whole data: validation text counts as
/// seen), answered in each regime (empty: the bundle's defaults). Byte-level
/// text questions: throws for a run on another tokenizer, or for `data` that
/// is token ids (`ids`).
std::vector<TaskResult> evaluateTaskOnData(Session &session, const std::string &task,
                                           const TokenStream &data, bool ids,
                                           std::vector<Regime> regimes, int64_t count,
                                           uint64_t seed);

} // namespace fbt

#endif // FBT_RUNTIME_EVAL_TASKS_H
