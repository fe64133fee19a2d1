//===- TempDir.h - A scratch directory per test -----------------*- C++ -*-===//
//
// Tests that write files get a fresh directory under the system temp dir,
// removed with its contents when the test ends.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_TEST_RUNTIME_TEMPDIR_H
#define FBT_TEST_RUNTIME_TEMPDIR_H

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include <ftw.h>
#include <unistd.h>

namespace fbt::test {

class TempDir {
public:
  TempDir() {
    const char *base = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(base && *base ? base : "/tmp") + "/fbt-runtime-test-XXXXXX";
    if (!::mkdtemp(tmpl.data()))
      throw std::runtime_error("mkdtemp failed for " + tmpl);
    path_ = tmpl;
  }
  TempDir(const TempDir &) = delete;
  TempDir &operator=(const TempDir &) = delete;
  ~TempDir() {
    ::nftw(
        path_.c_str(),
        [](const char *p, const struct stat *, int, struct FTW *) {
          return ::remove(p);
        },
        16, FTW_DEPTH | FTW_PHYS);
  }

  const std::string &path() const { return path_; }
  std::string file(const std::string &name) const { return path_ + "/" + name; }

private:
  std::string path_;
};

} // namespace fbt::test

#endif // FBT_TEST_RUNTIME_TEMPDIR_H
