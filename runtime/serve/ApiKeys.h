//===- ApiKeys.h - who may call the server ----------------------*- C++ -*-===//
//
// `fbt serve --api-key KEY` (or --api-key-file FILE, one key per line):
// every request but GET /health (and GET /metrics with --metrics-open) must
// carry "Authorization: Bearer KEY" with one of the keys, else a 401 in
// OpenAI's error shape (code "invalid_api_key"). The key is compared in
// time that does not depend on where it first differs, so a caller cannot
// find it byte by byte from the answers' timing. No key given: every caller
// is served, as before (the server listens on 127.0.0.1 by default).
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_SERVE_APIKEYS_H
#define FBT_RUNTIME_SERVE_APIKEYS_H

#include <string>
#include <string_view>
#include <vector>

namespace fbt {

class ApiKeys {
public:
  ApiKeys() = default;
  /// `keys` as given, and those of `file` ("" for none): one per line,
  /// surrounding whitespace dropped, blank lines and lines starting with
  /// '#' skipped. RuntimeError for an empty key given, a key holding
  /// whitespace, or a file that holds no key.
  static ApiKeys of(const std::vector<std::string> &keys, const std::string &file);

  /// Whether any key is required.
  bool required() const { return !keys_.empty(); }
  size_t size() const { return keys_.size(); }
  /// Whether an Authorization header's value names one of the keys
  /// ("Bearer KEY"; true for anything when no key is required).
  bool accepts(std::string_view authorization) const;

private:
  std::vector<std::string> keys_;
};

/// Equality of two strings in time that depends on their lengths alone.
bool constantTimeEquals(std::string_view a, std::string_view b);

} // namespace fbt

#endif // FBT_RUNTIME_SERVE_APIKEYS_H
