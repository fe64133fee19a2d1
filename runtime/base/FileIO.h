//===- FileIO.h - Whole-file reads and crash-safe writes --------*- C++ -*-===//
//
// The primitives the rest of the runtime builds on:
//  - readFile: a whole file into memory, with errors that name the file;
//    isFile, isDir: what a path names.
//  - writeFileAtomic: replace a file so that a crash at any moment leaves
//    either the old contents or the new, never a mix. It writes
//    "<path>.tmp.<pid>", fsyncs it, renames it over <path> (atomic on POSIX)
//    and fsyncs the directory so the rename itself survives a power cut.
//    Checkpoints, manifests and tuning caches all go through it.
//  - FileSet: several files of one command, placed together or not at all.
// Errors throw fbt::RuntimeError.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_BASE_FILEIO_H
#define FBT_RUNTIME_BASE_FILEIO_H

#include <string>
#include <string_view>
#include <vector>

namespace fbt {

/// The whole file; throws "<path>: cannot open: <reason>" and the like.
std::string readFile(const std::string &path);

/// Whether `path` names a regular file, or a directory (links followed;
/// false where it does not exist or cannot be reached).
bool isFile(const std::string &path);
bool isDir(const std::string &path);

/// Atomically replaces `path` with the concatenation of `pieces` (written in
/// order, never copied into one buffer). On failure the temporary file is
/// removed and `path` is untouched. FBT_FAULT=stop-save:POINT stops the
/// process at that point of a replacement, for the crash-consistency tests
/// (FaultInjection.h).
void writeFileAtomic(const std::string &path,
                     const std::vector<std::string_view> &pieces);

/// The temporary name writeFileAtomic uses in this process.
std::string atomicTempPath(const std::string &path);

/// The outputs of one command that appear together or not at all (a
/// checkpoint with its tokenizer and spec, an exported folder): each is
/// written (with writeFileAtomic) to the name stage() gives, beside its
/// place, and commit() moves them all into place, setting aside any file it
/// replaces until every one is placed. A set destroyed before commit(), or a
/// commit that fails part-way, removes what it staged and placed and puts
/// back what it had set aside: a failed command leaves the folder as it was.
class FileSet {
public:
  FileSet() = default;
  FileSet(const FileSet &) = delete;
  FileSet &operator=(const FileSet &) = delete;
  ~FileSet();
  /// Where to write `path` until commit (its directory must exist).
  std::string stage(const std::string &path);
  void commit();

private:
  void rollBack();
  struct Output {
    std::string staged, path, setAside;
    bool placed = false;
  };
  std::vector<Output> outputs_;
  bool committed_ = false;
};

} // namespace fbt

#endif // FBT_RUNTIME_BASE_FILEIO_H
