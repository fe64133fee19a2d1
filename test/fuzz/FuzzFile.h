//===- FuzzFile.h - a fuzzer's input as a file, for readers of paths ------===//
//
// The bundle, checkpoint and token readers take paths (they map or read
// whole files), so each input is written to one file of this process, in
// memory where the machine has /dev/shm.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_TEST_FUZZ_FUZZFILE_H
#define FBT_TEST_FUZZ_FUZZFILE_H

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <sys/stat.h>
#include <unistd.h>

namespace fbt::fuzz {

/// Writes `data` to this process's file ending in `suffix` and returns its path.
inline std::string asFile(const uint8_t *data, size_t size, const std::string &suffix) {
  struct stat st;
  std::string dir = stat("/dev/shm", &st) == 0 ? "/dev/shm" : "/tmp";
  std::string path = dir + "/fbt-fuzz-" + std::to_string(getpid()) + suffix;
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f || std::fwrite(data, 1, size, f) != size || std::fclose(f) != 0)
    std::abort(); // the machine, not the reader: stop loudly
  return path;
}

} // namespace fbt::fuzz

#endif // FBT_TEST_FUZZ_FUZZFILE_H
