//===- MetricsLog.h - Training metrics as JSON lines ---------------*- C++ -*-===//
//
// One JSON object per line (JSONL), e.g.
//   {"step":120,"lr":0.00093,"loss":2.31,"loss_k":[2.4,2.22],"tok_s":1210.5}
// Each line goes to the file with a single write(2) as soon as it is
// recorded, so `tail -f` and plotting scripts see progress live and a crash
// loses at most the line being written. A resumed run appends; a fresh run
// truncates. When appending to a file whose last line was cut short by a
// crash, a newline is added first so the new records stay parseable.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_TRAIN_METRICSLOG_H
#define FBT_RUNTIME_TRAIN_METRICSLOG_H

#include "runtime/base/Json.h"

#include <string>

namespace fbt {

class MetricsWriter {
public:
  enum class Mode { Append, Truncate };

  /// Opens (creating if needed) `path`; throws RuntimeError on failure.
  MetricsWriter(const std::string &path, Mode mode);
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter &) = delete;
  MetricsWriter &operator=(const MetricsWriter &) = delete;

  /// Appends `record` (a JSON object) as one compact line.
  void write(const Json &record);

  const std::string &path() const { return path_; }

private:
  std::string path_;
  int fd_ = -1;
};

} // namespace fbt

#endif // FBT_RUNTIME_TRAIN_METRICSLOG_H
