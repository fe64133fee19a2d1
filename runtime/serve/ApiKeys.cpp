//===- ApiKeys.cpp - who may call the server ------------------------------===//

#include "runtime/serve/ApiKeys.h"

#include "runtime/base/Error.h"
#include "runtime/base/FileIO.h"

#include <algorithm>
#include <cctype>

namespace fbt {

namespace {
std::string_view trimmed(std::string_view s) {
  while (!s.empty() && std::isspace((unsigned char)s.front()))
    s.remove_prefix(1);
  while (!s.empty() && std::isspace((unsigned char)s.back()))
    s.remove_suffix(1);
  return s;
}

void checkKey(const std::string &key, const std::string &where) {
  if (key.empty())
    throw RuntimeError(where + ": an empty API key");
  if (std::any_of(key.begin(), key.end(), [](char c) { return std::isspace((unsigned char)c); }))
    throw RuntimeError(where + ": an API key may not hold whitespace");
}
} // namespace

bool constantTimeEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size())
    return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i)
    diff |= (unsigned char)(a[i] ^ b[i]);
  return diff == 0;
}

ApiKeys ApiKeys::of(const std::vector<std::string> &keys, const std::string &file) {
  ApiKeys out;
  for (const std::string &k : keys) {
    checkKey(k, "--api-key");
    out.keys_.push_back(k);
  }
  if (file.empty())
    return out;
  std::string text = readFile(file);
  size_t line = 0, before = out.keys_.size();
  for (size_t at = 0; at <= text.size();) {
    size_t end = std::min(text.find('\n', at), text.size());
    std::string_view l = trimmed(std::string_view(text).substr(at, end - at));
    ++line;
    at = end + 1;
    if (l.empty() || l.front() == '#')
      continue;
    std::string key(l);
    checkKey(key, file + ":" + std::to_string(line));
    out.keys_.push_back(key);
  }
  if (out.keys_.size() == before)
    throw RuntimeError(file + ": no API key in the file");
  return out;
}

bool ApiKeys::accepts(std::string_view authorization) const {
  if (keys_.empty())
    return true;
  constexpr std::string_view bearer = "Bearer ";
  if (authorization.substr(0, bearer.size()) != bearer)
    return false;
  std::string_view given = trimmed(authorization.substr(bearer.size()));
  bool ok = false;
  for (const std::string &k : keys_) // every key compared: no early exit
    ok |= constantTimeEquals(given, k);
  return ok;
}

} // namespace fbt
