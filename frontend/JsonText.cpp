//===- JsonText.cpp - JSON text helpers for spec errors -------------------===//
//
// Part of the spec reader; see JsonText.h.
//
//===----------------------------------------------------------------------===//

#include "frontend/JsonText.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/raw_ostream.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

using llvm::StringRef;
namespace json = llvm::json;

namespace {

/// Cuts `s` to at most `max` bytes without splitting a UTF-8 sequence.
StringRef truncateUtf8(StringRef s, size_t max) {
  if (s.size() <= max)
    return s;
  size_t end = max;
  while (end > 0 && (uint8_t(s[end]) & 0xC0) == 0x80)
    --end;
  return s.take_front(end);
}

} // namespace

std::string fbt::formatDouble(double d) {
  if (std::isnan(d))
    return "nan";
  if (std::isinf(d))
    return d > 0 ? "a number beyond the double range"
                 : "a number below the double range";
  char buf[40];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, d);
    if (std::strtod(buf, nullptr) == d)
      break;
  }
  return buf;
}

std::optional<int64_t> fbt::asInt64(const json::Value &v) {
  std::optional<double> d = v.getAsNumber();
  if (!d)
    return std::nullopt;
  if (std::optional<uint64_t> u = v.getAsUINT64()) // exact for integers >= 0
    return *u <= uint64_t(INT64_MAX) ? std::optional<int64_t>(int64_t(*u))
                                     : std::nullopt;
  // Negative integers and doubles. json::Value::getAsInteger would convert a
  // double of exactly 2^63 to int64 (undefined), so the range is checked
  // here first.
  if (std::trunc(*d) != *d || !(*d >= -0x1p63 && *d < 0x1p63))
    return std::nullopt;
  return v.getAsInteger();
}

std::optional<uint64_t> fbt::asUInt64(const json::Value &v) {
  if (std::optional<uint64_t> u = v.getAsUINT64())
    return u;
  std::optional<double> d = v.getAsNumber();
  if (!d || std::trunc(*d) != *d || !(*d >= 0 && *d < 0x1p64))
    return std::nullopt;
  return uint64_t(*d);
}

std::string fbt::describeValue(const json::Value &v) {
  switch (v.kind()) {
  case json::Value::Null:
    return "null";
  case json::Value::Boolean:
    return *v.getAsBoolean() ? "true" : "false";
  case json::Value::Number:
    if (std::optional<int64_t> i = asInt64(v))
      return std::to_string(*i);
    if (std::optional<uint64_t> u = v.getAsUINT64())
      return std::to_string(*u);
    return formatDouble(*v.getAsNumber());
  case json::Value::String: {
    StringRef s = *v.getAsString();
    StringRef shown = truncateUtf8(s, 40);
    std::string out;
    llvm::raw_string_ostream os(out);
    os << json::Value(shown.str());
    if (shown.size() < s.size())
      out.insert(out.size() - 1, "...");
    return out;
  }
  case json::Value::Array:
    return "an array";
  case json::Value::Object:
    return "an object";
  }
  return "?";
}

std::string fbt::displayKey(StringRef key) {
  if (!key.empty() && llvm::all_of(key, [](char c) {
        return llvm::isAlnum(c) || c == '_' || c == '-';
      }))
    return key.str();
  return describeValue(json::Value(key.str()));
}

std::pair<size_t, size_t> fbt::lineColumn(StringRef text, size_t offset) {
  StringRef before = text.take_front(offset);
  size_t line = 1 + before.count('\n');
  size_t lastNewline = before.rfind('\n');
  size_t column =
      lastNewline == StringRef::npos ? offset + 1 : offset - lastNewline;
  return {line, column};
}

fbt::TextScan fbt::scanText(StringRef text) {
  struct Frame {
    bool isObject = false;
    bool expectKey = false;
    size_t index = 0;
    std::string key;
    llvm::StringMap<size_t> keys; // key -> offset of its first occurrence
  };
  TextScan scan;
  llvm::SmallVector<Frame, 4> stack;
  auto pathTo = [&](StringRef key) {
    std::string path;
    for (const Frame &f : stack) {
      if (&f == &stack.back())
        break;
      if (f.isObject)
        path += (path.empty() ? "" : ".") + displayKey(f.key);
      else
        path += "[" + std::to_string(f.index) + "]";
    }
    return path + (path.empty() ? "" : ".") + displayKey(key);
  };
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '{' || c == '[') {
      if (stack.size() == kMaxNesting) {
        scan.tooDeepAt = i;
        return scan;
      }
      Frame &f = stack.emplace_back();
      f.isObject = f.expectKey = c == '{';
    } else if (c == '}' || c == ']') {
      if (!stack.empty())
        stack.pop_back();
    } else if (c == ',') {
      if (!stack.empty()) {
        stack.back().expectKey = stack.back().isObject;
        ++stack.back().index;
      }
    } else if (c == '"') {
      size_t start = i;
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\')
          ++i;
      if (i >= text.size())
        break; // unterminated: the parser reports it
      if (stack.empty() || !stack.back().expectKey)
        continue;
      // A key: decode its escapes (if any) the way the parser does.
      StringRef quoted = text.slice(start, i + 1);
      std::string key = quoted.drop_front().drop_back().str();
      if (quoted.contains('\\')) {
        llvm::Expected<json::Value> decoded = json::parse(quoted);
        if (!decoded) {
          llvm::consumeError(decoded.takeError());
          continue;
        }
        key = decoded->getAsString()->str();
      }
      Frame &top = stack.back();
      top.expectKey = false;
      top.key = key;
      auto [it, inserted] = top.keys.try_emplace(key, start);
      if (!inserted && !scan.duplicatePath) {
        scan.duplicatePath = pathTo(key);
        scan.firstOffset = it->second;
        scan.duplicateOffset = start;
      }
    }
  }
  return scan;
}
