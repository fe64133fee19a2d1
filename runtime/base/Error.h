//===- Error.h - The runtime's one error type ------------------*- C++ -*-===//
//
// Every failure in runtime/ (a bad file, a corrupt checkpoint, an invalid
// argument) throws fbt::RuntimeError with a message that names what failed and
// why, e.g. "ckpt.safetensors: tensor 'lm_head.weight': ...". The message is
// complete on its own: the CLI catches RuntimeError at the top level, prints
// what() on one line and exits non-zero. Nothing else is thrown on purpose
// (std::bad_alloc aside).
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_BASE_ERROR_H
#define FBT_RUNTIME_BASE_ERROR_H

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace fbt {

class RuntimeError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// "what: <strerror(errno)>", for failed system calls. Call it right after
/// the failing call, before anything else can change errno.
inline std::string systemErrorMessage(const std::string &what) {
  return what + ": " + std::strerror(errno);
}

} // namespace fbt

#endif // FBT_RUNTIME_BASE_ERROR_H
