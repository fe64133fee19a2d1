//===- JsonStrict.cpp - Strict parsing and typed reads over nlohmann ------===//

#include "runtime/Json.h"

#include "runtime/Error.h"
#include "runtime/FileIO.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <set>
#include <vector>

namespace fbt {

namespace {

/// "line L, column C" of a byte offset: 1-based line and byte column.
std::string lineColumn(std::string_view text, size_t offset) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < offset && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

/// What the parse callback refuses: the library accepts duplicate keys (the
/// last wins) and any depth. The callback does not know where it is in the
/// text, so it records which key or bracket offended, counted from the
/// start, and find() locates that one once the parse has stopped.
struct Refusal {
  enum class Kind { DuplicateKey, TooDeep } kind;
  size_t ordinal; // the ordinal-th key, or bracket (0-based)
  std::string key;

  /// Byte offset of the offending key's opening quote, or bracket.
  size_t find(std::string_view text) const {
    size_t keys = 0, brackets = 0;
    for (size_t i = 0; i < text.size(); ++i) {
      char c = text[i];
      if (c == '"') {
        size_t start = i;
        for (++i; i < text.size() && text[i] != '"'; ++i)
          if (text[i] == '\\')
            ++i;
        size_t j = i + 1;
        while (j < text.size() && (text[j] == ' ' || text[j] == '\t' ||
                                   text[j] == '\n' || text[j] == '\r'))
          ++j;
        if (j < text.size() && text[j] == ':' && kind == Kind::DuplicateKey &&
            keys++ == ordinal)
          return start;
      } else if ((c == '[' || c == '{') && kind == Kind::TooDeep &&
                 brackets++ == ordinal) {
        return i;
      }
    }
    return text.size();
  }
};

RuntimeError kindError(const char *expected, const Json &got) {
  return RuntimeError(std::string("expected ") + expected + ", got " +
                      jsonKindName(got));
}

} // namespace

Json parseJson(std::string_view text, std::string_view sourceName) {
  std::string prefix = sourceName.empty() ? "" : std::string(sourceName) + ": ";
  // Per open bracket: the keys seen so far (arrays keep an empty set).
  std::vector<std::set<std::string>> open;
  size_t keys = 0, brackets = 0;
  auto check = [&](int, Json::parse_event_t event, Json &parsed) {
    switch (event) {
    case Json::parse_event_t::object_start:
    case Json::parse_event_t::array_start:
      if (open.size() >= static_cast<size_t>(kMaxJsonDepth))
        throw Refusal{Refusal::Kind::TooDeep, brackets, {}};
      open.emplace_back();
      ++brackets;
      break;
    case Json::parse_event_t::object_end:
    case Json::parse_event_t::array_end:
      open.pop_back();
      break;
    case Json::parse_event_t::key: {
      const std::string &key = parsed.get_ref<const std::string &>();
      if (!open.back().insert(key).second)
        throw Refusal{Refusal::Kind::DuplicateKey, keys, key};
      ++keys;
      break;
    }
    case Json::parse_event_t::value:
      break;
    }
    return true;
  };
  try {
    return Json::parse(text.begin(), text.end(), check,
                       /*allow_exceptions=*/true, /*ignore_comments=*/false);
  } catch (const Refusal &r) {
    std::string where = lineColumn(text, r.find(text));
    if (r.kind == Refusal::Kind::TooDeep)
      throw RuntimeError(prefix + where + ": nesting deeper than " +
                         std::to_string(kMaxJsonDepth) + " levels");
    Json key = r.key;
    throw RuntimeError(prefix + where + ": duplicate key " + dumpJson(key));
  } catch (const Json::parse_error &e) {
    // "[json.exception.parse_error.101] parse error at line 1, column 5:
    // syntax error ..." keeps its text after the position; the position is
    // recomputed from the byte offset (the library counts a newline inside
    // a string as a line of its own, column 0).
    std::string what = e.what();
    size_t colon = what.find(": ", what.find("parse error"));
    what = colon == std::string::npos ? what : what.substr(colon + 2);
    size_t offset = e.byte > 0 ? e.byte - 1 : 0;
    throw RuntimeError(prefix + lineColumn(text, offset) + ": " + what);
  } catch (const Json::exception &e) {
    // A number out of a double's range ("number overflow parsing '1e999'").
    std::string what = e.what();
    throw RuntimeError(prefix + what.substr(what.find(']') + 2));
  }
}

Json loadJsonFile(const std::string &path) {
  return parseJson(readFile(path), path);
}

std::string dumpJson(const Json &value, int indent) {
  return value.dump(indent, ' ', /*ensure_ascii=*/false,
                    Json::error_handler_t::replace);
}

Json jsonFloat(float value) {
  char buf[32];
  double shortest = value;
  auto res = std::to_chars(buf, buf + sizeof buf, value);
  if (!std::isfinite(value) || res.ec != std::errc() ||
      std::from_chars(buf, res.ptr, shortest).ec != std::errc())
    shortest = value;
  return shortest;
}

const char *jsonKindName(const Json &value) {
  switch (value.type()) {
  case Json::value_t::null:
  case Json::value_t::discarded:
    return "null";
  case Json::value_t::boolean:
    return "a bool";
  case Json::value_t::number_integer:
  case Json::value_t::number_unsigned:
  case Json::value_t::number_float:
    return "a number";
  case Json::value_t::string:
    return "a string";
  case Json::value_t::array:
    return "an array";
  case Json::value_t::object:
    return "an object";
  case Json::value_t::binary:
    return "binary data";
  }
  return "?";
}

bool isInteger(const Json &value) {
  if (value.is_number_integer())
    return !value.is_number_unsigned() ||
           value.get<uint64_t>() <=
               static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  if (!value.is_number_float())
    return false;
  double d = value.get<double>();
  // [-2^63, 2^63): both bounds are exact doubles.
  return std::isfinite(d) && d == std::floor(d) && d >= -0x1p63 && d < 0x1p63;
}

bool asBool(const Json &value) {
  if (!value.is_boolean())
    throw kindError("a bool", value);
  return value.get<bool>();
}

double asDouble(const Json &value) {
  if (!value.is_number())
    throw kindError("a number", value);
  return value.get<double>();
}

int64_t asInt(const Json &value) {
  if (!value.is_number())
    throw kindError("an integer", value);
  if (!isInteger(value))
    throw RuntimeError("expected an integer, got " + dumpJson(value));
  if (value.is_number_float())
    return static_cast<int64_t>(value.get<double>());
  return value.get<int64_t>();
}

const std::string &asString(const Json &value) {
  if (!value.is_string())
    throw kindError("a string", value);
  return value.get_ref<const std::string &>();
}

const Json::array_t &asArray(const Json &value) {
  if (!value.is_array())
    throw kindError("an array", value);
  return value.get_ref<const Json::array_t &>();
}

const Json::object_t &asObject(const Json &value) {
  if (!value.is_object())
    throw kindError("an object", value);
  return value.get_ref<const Json::object_t &>();
}

const Json *jsonFind(const Json &object, std::string_view key) {
  if (!object.is_object())
    return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

Json *jsonFind(Json &object, std::string_view key) {
  if (!object.is_object())
    return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

const Json &jsonAt(const Json &object, std::string_view key) {
  asObject(object);
  const Json *member = jsonFind(object, key);
  if (!member)
    throw RuntimeError("missing key '" + std::string(key) + "'");
  return *member;
}

const Json &jsonAt(const Json &array, size_t index) {
  const Json::array_t &a = asArray(array);
  if (index >= a.size())
    throw RuntimeError("array index " + std::to_string(index) +
                       " out of range (size " + std::to_string(a.size()) + ")");
  return a[index];
}

} // namespace fbt
