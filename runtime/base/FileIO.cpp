//===- FileIO.cpp - Whole-file reads and crash-safe writes ----------------===//

#include "runtime/base/FileIO.h"

#include "runtime/base/Error.h"
#include "runtime/base/FaultInjection.h"

#include <cstdlib>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace fbt {

namespace {

/// Closes a file descriptor on scope exit unless released.
struct FdGuard {
  int fd = -1;
  explicit FdGuard(int f) : fd(f) {}
  FdGuard(const FdGuard &) = delete;
  FdGuard &operator=(const FdGuard &) = delete;
  ~FdGuard() {
    if (fd >= 0)
      ::close(fd);
  }
  int release() {
    int f = fd;
    fd = -1;
    return f;
  }
};

/// write(2) until done, retrying interrupted and partial writes.
bool writeAll(int fd, const char *data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return false;
    }
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

std::string parentDirectory(const std::string &path) {
  size_t slash = path.find_last_of('/');
  if (slash == std::string::npos)
    return ".";
  if (slash == 0)
    return "/";
  return path.substr(0, slash);
}

} // namespace

bool isFile(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool isDir(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string readFile(const std::string &path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw RuntimeError(systemErrorMessage(path + ": cannot open"));
  FdGuard guard(fd);
  std::string data;
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
    data.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  while (true) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      throw RuntimeError(systemErrorMessage(path + ": cannot read"));
    }
    if (n == 0)
      break;
    data.append(buf, static_cast<size_t>(n));
  }
  return data;
}

std::string atomicTempPath(const std::string &path) {
  return path + ".tmp." + std::to_string(::getpid());
}

void writeFileAtomic(const std::string &path,
                     const std::vector<std::string_view> &pieces) {
  struct stat st;
  bool replacing = ::stat(path.c_str(), &st) == 0;
  std::string tmp = atomicTempPath(path);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    throw RuntimeError(
        systemErrorMessage(path + ": cannot create the temporary file " + tmp));
  FdGuard guard(fd);

  // Any failure from here on: drop the temporary, keep the old file.
  auto fail = [&](const std::string &what) {
    std::string msg = systemErrorMessage(path + ": " + what);
    if (guard.fd >= 0)
      ::close(guard.release());
    ::unlink(tmp.c_str());
    throw RuntimeError(msg);
  };

  // The test hook's "write" point: once half of the contents is written.
  size_t total = 0, written = 0;
  for (std::string_view piece : pieces)
    total += piece.size();
  bool halfway = false;
  for (std::string_view piece : pieces) {
    size_t head = !halfway && written + piece.size() >= total / 2 ? total / 2 - written
                                                                  : piece.size();
    if (!writeAll(fd, piece.data(), head))
      fail("cannot write " + tmp);
    if (!halfway && written + head == total / 2) {
      halfway = true;
      fault::inSave("write", replacing);
    }
    if (!writeAll(fd, piece.data() + head, piece.size() - head))
      fail("cannot write " + tmp);
    written += piece.size();
  }
  // The data must be on disk before the rename makes it visible as `path`;
  // otherwise a crash could leave a renamed but empty file.
  fault::inSave("fsync", replacing);
  if (::fsync(fd) != 0)
    fail("cannot fsync " + tmp);
  if (::close(guard.release()) != 0)
    fail("cannot close " + tmp);
  fault::inSave("rename", replacing);
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    fail("cannot rename " + tmp + " over it");
  fault::inSave("directory", replacing);

  // Persist the directory entry too. Some filesystems cannot fsync a
  // directory (EINVAL); the rename has happened by then, so that is fine.
  std::string dir = parentDirectory(path);
  int dirFd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dirFd < 0)
    throw RuntimeError(systemErrorMessage(path + ": cannot open directory " +
                                          dir + " to fsync it"));
  FdGuard dirGuard(dirFd);
  if (::fsync(dirFd) != 0 && errno != EINVAL)
    throw RuntimeError(
        systemErrorMessage(path + ": cannot fsync directory " + dir));
}

std::string FileSet::stage(const std::string &path) {
  Output o;
  o.path = path;
  o.staged = path + ".staged." + std::to_string(::getpid());
  outputs_.push_back(o);
  return o.staged;
}

void FileSet::commit() {
  for (Output &o : outputs_) {
    struct stat st;
    if (::stat(o.staged.c_str(), &st) != 0) {
      std::string msg = systemErrorMessage(o.path + ": its staged copy " + o.staged +
                                           " is missing");
      rollBack();
      throw RuntimeError(msg);
    }
    if (::stat(o.path.c_str(), &st) == 0) { // set aside until all are placed
      std::string aside = o.path + ".replaced." + std::to_string(::getpid());
      if (::rename(o.path.c_str(), aside.c_str()) != 0) {
        std::string msg = systemErrorMessage(o.path + ": cannot set it aside");
        rollBack();
        throw RuntimeError(msg);
      }
      o.setAside = aside;
    }
    if (::rename(o.staged.c_str(), o.path.c_str()) != 0) {
      std::string msg = systemErrorMessage(o.path + ": cannot move " + o.staged + " there");
      rollBack();
      throw RuntimeError(msg);
    }
    o.placed = true;
  }
  committed_ = true;
  for (const Output &o : outputs_)
    if (!o.setAside.empty())
      ::unlink(o.setAside.c_str());
}

void FileSet::rollBack() {
  for (Output &o : outputs_) {
    ::unlink(o.placed ? o.path.c_str() : o.staged.c_str());
    if (!o.setAside.empty())
      ::rename(o.setAside.c_str(), o.path.c_str());
    o.placed = false;
    o.setAside.clear();
  }
}

FileSet::~FileSet() {
  if (!committed_)
    rollBack();
}

} // namespace fbt
