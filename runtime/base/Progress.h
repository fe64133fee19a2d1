//===- Progress.h - A terminal progress bar ---------------------*- C++ -*-===//
//
//   [#####.....] 120/500 steps  loss 2.31  1.2k tok/s  ETA 0:03:10
//
// On a terminal the line is redrawn in place ("\r", at most every 0.1 s, so
// fast steps do not flood the terminal). When stderr is a file or a pipe
// (CI logs, nohup) it prints a whole line each time progress crosses another
// 10%, since carriage returns would pile up into one unreadable line there.
// Named fields ("loss", "loss_k2", ...) are shown in the order first set.
// The ETA extrapolates from the steps done since the bar started, so a
// resumed run does not count the steps it skipped.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_BASE_PROGRESS_H
#define FBT_RUNTIME_BASE_PROGRESS_H

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace fbt {

struct ProgressOptions {
  std::FILE *out = stderr;
  /// In-place redraws (true) or a line per `linePercent` (false); unset:
  /// decided by isatty on `out`.
  std::optional<bool> tty;
  std::string unit = "steps";
  int barWidth = 10;
  int linePercent = 10;
  double minRedrawSeconds = 0.1;
};

class ProgressBar {
public:
  /// A bar for `total` units, of which `start` are already done (resume).
  explicit ProgressBar(int64_t total, int64_t start = 0,
                       ProgressOptions options = ProgressOptions());
  /// Ends a bar left unfinished on its own line.
  ~ProgressBar();
  ProgressBar(const ProgressBar &) = delete;
  ProgressBar &operator=(const ProgressBar &) = delete;

  /// Shows "name value"; setting a name again replaces its value.
  void setField(const std::string &name, const std::string &value);
  /// Shows "<rate> tok/s", e.g. "1.2k tok/s"; negative hides it.
  void setTokensPerSecond(double rate);

  /// `done` units are complete; draws if the display is due.
  void update(int64_t done);
  /// Prints `message` on a line of its own, keeping the bar below it.
  void print(const std::string &message);
  /// Draws the final state and ends the line. Idempotent.
  void finish();

  /// The bar's text for `done` units after `elapsedSeconds` since the bar
  /// started (no "\r", no newline).
  std::string render(int64_t done, double elapsedSeconds) const;

  /// 950 -> "950", 1234 -> "1.2k", 2.5e6 -> "2.5M".
  static std::string formatCount(double value);
  /// 190 -> "0:03:10"; negative or non-finite -> "-:--:--".
  static std::string formatDuration(double seconds);

private:
  void draw();
  int64_t lineBucket(int64_t done) const;
  double elapsed() const;

  int64_t total_, start_;
  ProgressOptions options_;
  bool tty_;
  std::vector<std::pair<std::string, std::string>> fields_;
  double tokensPerSecond_ = -1;
  std::chrono::steady_clock::time_point began_;
  double lastDraw_ = -1e9;
  int64_t lastDone_;         // from the latest update()
  int64_t lastPrinted_ = -1; // what the last drawn line showed
  int64_t lastLineBucket_ = -1;
  bool drawn_ = false;
  bool finished_ = false;
};

} // namespace fbt

#endif // FBT_RUNTIME_BASE_PROGRESS_H
