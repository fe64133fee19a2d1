//===- PySession.h - the runtime session behind fbt.Session -------*- C++ -*-===//

#ifndef FBT_PYTHON_PYSESSION_H
#define FBT_PYTHON_PYSESSION_H

#include "runtime/decode/Decoder.h"
#include "runtime/session/Session.h"

#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace fbt::python {

/// A Session, its Decoder once one is needed, and the lock every call
/// holds while the runtime works (taken with the GIL released).
class PySession {
public:
  /// Opens `bundle` with the tune cache's choice (unless `tune` is false);
  /// loads `ckpt`, or initializes from `seed` (default: the spec's).
  PySession(const std::string &bundle, const std::optional<std::string> &ckpt,
            std::optional<int> threads, std::optional<uint64_t> seed, bool tune,
            const std::string &tuneCache, const std::optional<std::string> &tokenizer);

  Session &session() { return *session_; }
  /// The decoder over the session, made on first use (call locked).
  Decoder &decoder();
  std::unique_lock<std::mutex> lock() { return std::unique_lock<std::mutex>(mutex_); }

private:
  std::mutex mutex_;
  std::unique_ptr<Session> session_;
  std::unique_ptr<Decoder> decoder_; ///< after session_: it holds the session
};

} // namespace fbt::python

#endif // FBT_PYTHON_PYSESSION_H
