//===- Error.h - The runtime's one error type ------------------*- C++ -*-===//
//
// Every failure in runtime/ (a bad file, a corrupt checkpoint, an invalid
// argument) throws fbt::RuntimeError with a message that names what failed and
// why, e.g. "ckpt.safetensors: tensor 'lm_head.weight': ...". The message is
// complete on its own: the CLI catches RuntimeError at the top level, prints
// what() on one line and exits non-zero. Nothing else is thrown on purpose
// (std::bad_alloc aside). A message quotes what it was given (a tensor name
// from a file, a path, a field of a request), so the one line is kept here,
// not by each caller: control characters are written as escapes.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_BASE_ERROR_H
#define FBT_RUNTIME_BASE_ERROR_H

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

namespace fbt {

/// `text` with each control character (a line break, a tab, DEL) written
/// as an escape (\n, \t, \x7f): a message stays one line whatever
/// it quotes. Bytes from 0x80 up are kept, so UTF-8 names read as written.
inline std::string oneLine(const std::string &text) {
  std::string out;
  out.reserve(text.size());
  for (unsigned char c : text) {
    if (c >= 0x20 && c != 0x7f) {
      out += static_cast<char>(c);
      continue;
    }
    static const char hex[] = "0123456789abcdef";
    switch (c) {
    case '\n': out += "\\n"; break;
    case '\r': out += "\\r"; break;
    case '\t': out += "\\t"; break;
    default:
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out;
}

class RuntimeError : public std::runtime_error {
public:
  explicit RuntimeError(const std::string &message) : std::runtime_error(oneLine(message)) {}
  explicit RuntimeError(const char *message) : RuntimeError(std::string(message)) {}
};

/// "what: <strerror(errno)>", for failed system calls. Call it right after
/// the failing call, before anything else can change errno.
inline std::string systemErrorMessage(const std::string &what) {
  return what + ": " + std::strerror(errno);
}

} // namespace fbt

#endif // FBT_RUNTIME_BASE_ERROR_H
