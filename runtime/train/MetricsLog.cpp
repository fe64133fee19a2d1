//===- MetricsLog.cpp - Training metrics as JSON lines -----------------------===//

#include "runtime/train/MetricsLog.h"

#include "runtime/base/Error.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fbt {

static void writeAll(int fd, const std::string &data, const std::string &path) {
  const char *p = data.data();
  size_t left = data.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      throw RuntimeError(systemErrorMessage(path + ": cannot write"));
    p += n;
    left -= static_cast<size_t>(n);
  }
}

MetricsWriter::MetricsWriter(const std::string &path, Mode mode) : path_(path) {
  // Append mode also reads (the last byte, below), hence O_RDWR.
  int flags = O_CREAT | O_CLOEXEC |
              (mode == Mode::Append ? O_RDWR | O_APPEND : O_WRONLY | O_TRUNC);
  fd_ = ::open(path.c_str(), flags, 0644);
  if (fd_ < 0)
    throw RuntimeError(systemErrorMessage(path + ": cannot open for writing"));
  if (mode != Mode::Append)
    return;
  // A run killed mid-line leaves a partial last line: end it, so our first
  // record starts on a line of its own.
  struct stat st;
  char last = '\n';
  if (::fstat(fd_, &st) == 0 && st.st_size > 0 &&
      ::pread(fd_, &last, 1, st.st_size - 1) == 1 && last != '\n') {
    try {
      writeAll(fd_, "\n", path_);
    } catch (...) {
      ::close(fd_);
      throw;
    }
  }
}

MetricsWriter::~MetricsWriter() {
  if (fd_ >= 0)
    ::close(fd_);
}

void MetricsWriter::write(const Json &record) {
  if (!record.is_object())
    throw RuntimeError(path_ +
                       ": a metrics record must be a JSON object, got " +
                       jsonKindName(record));
  std::string line = dumpJson(record);
  line += '\n';
  writeAll(fd_, line, path_); // one write per line: no interleaved halves
}

} // namespace fbt
