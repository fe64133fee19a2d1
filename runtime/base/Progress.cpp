//===- Progress.cpp - A terminal progress bar -----------------------------===//

#include "runtime/base/Progress.h"

#include <algorithm>
#include <cmath>

#include <unistd.h>

namespace fbt {

ProgressBar::ProgressBar(int64_t total, int64_t start, ProgressOptions options)
    : total_(std::max<int64_t>(total, 0)), start_(start),
      options_(std::move(options)), began_(std::chrono::steady_clock::now()),
      lastDone_(start) {
  tty_ = options_.tty ? *options_.tty
                      : (options_.out && ::isatty(::fileno(options_.out)));
  if (options_.linePercent <= 0)
    options_.linePercent = 10;
  // A resumed run prints its next line at the next multiple of linePercent.
  lastLineBucket_ = lineBucket(start_);
}

ProgressBar::~ProgressBar() {
  if (tty_ && drawn_ && !finished_ && options_.out) {
    std::fputc('\n', options_.out);
    std::fflush(options_.out);
  }
}

void ProgressBar::setField(const std::string &name, const std::string &value) {
  for (auto &field : fields_)
    if (field.first == name) {
      field.second = value;
      return;
    }
  fields_.emplace_back(name, value);
}

void ProgressBar::setTokensPerSecond(double rate) { tokensPerSecond_ = rate; }

double ProgressBar::elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                       began_)
      .count();
}

std::string ProgressBar::formatCount(double value) {
  char buf[32];
  if (!std::isfinite(value))
    return "?";
  if (std::fabs(value) < 999.5)
    std::snprintf(buf, sizeof buf, "%.0f", value);
  else if (std::fabs(value) < 999.95e3)
    std::snprintf(buf, sizeof buf, "%.1fk", value / 1e3);
  else if (std::fabs(value) < 999.95e6)
    std::snprintf(buf, sizeof buf, "%.1fM", value / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.1fG", value / 1e9);
  return buf;
}

std::string ProgressBar::formatDuration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0 || seconds > 1e9)
    return "-:--:--";
  auto s = static_cast<int64_t>(std::llround(seconds));
  char buf[48];
  std::snprintf(
      buf, sizeof buf, "%lld:%02lld:%02lld", static_cast<long long>(s / 3600),
      static_cast<long long>(s / 60 % 60), static_cast<long long>(s % 60));
  return buf;
}

std::string ProgressBar::render(int64_t done, double elapsedSeconds) const {
  int64_t clamped = std::clamp<int64_t>(done, 0, total_);
  int width = std::max(options_.barWidth, 1);
  int filled = total_ > 0 ? static_cast<int>(clamped * width / total_) : width;
  std::string line = "[" + std::string(static_cast<size_t>(filled), '#') +
                     std::string(static_cast<size_t>(width - filled), '.') +
                     "] " + std::to_string(done) + "/" +
                     std::to_string(total_) + " " + options_.unit;
  for (const auto &field : fields_)
    line += "  " + field.first + " " + field.second;
  if (tokensPerSecond_ >= 0)
    line += "  " + formatCount(tokensPerSecond_) + " tok/s";
  // Rate over the units done since this bar started.
  double eta = -1;
  if (done >= total_)
    eta = 0;
  else if (done > start_ && elapsedSeconds > 0)
    eta = static_cast<double>(total_ - done) * elapsedSeconds /
          static_cast<double>(done - start_);
  line += "  ETA " + formatDuration(eta);
  return line;
}

void ProgressBar::draw() {
  if (!options_.out)
    return;
  double now = elapsed();
  std::string line = render(lastDone_, now);
  if (tty_) // "\x1b[K" clears what a longer previous line left on the right
    std::fprintf(options_.out, "\r%s\x1b[K", line.c_str());
  else
    std::fprintf(options_.out, "%s\n", line.c_str());
  std::fflush(options_.out);
  lastDraw_ = now;
  lastPrinted_ = lastDone_;
  drawn_ = true;
}

void ProgressBar::update(int64_t done) {
  if (finished_)
    return;
  lastDone_ = done;
  if (tty_) {
    if (done >= total_ || elapsed() - lastDraw_ >= options_.minRedrawSeconds)
      draw();
    return;
  }
  int64_t bucket = lineBucket(done);
  if (bucket > lastLineBucket_) {
    lastLineBucket_ = bucket;
    draw();
  }
}

int64_t ProgressBar::lineBucket(int64_t done) const {
  if (total_ <= 0)
    return 0;
  return std::clamp<int64_t>(done, 0, total_) * 100 / total_ /
         options_.linePercent;
}

void ProgressBar::print(const std::string &message) {
  if (!options_.out)
    return;
  if (tty_ && drawn_ && !finished_) {
    std::fprintf(options_.out, "\r\x1b[K%s\n", message.c_str());
    draw(); // the bar again, below the message
    return;
  }
  std::fprintf(options_.out, "%s\n", message.c_str());
  std::fflush(options_.out);
}

void ProgressBar::finish() {
  if (finished_)
    return;
  finished_ = true;
  if (tty_) {
    draw();
    if (options_.out) {
      std::fputc('\n', options_.out);
      std::fflush(options_.out);
    }
  } else if (lastPrinted_ != lastDone_) {
    draw();
  }
}

} // namespace fbt
