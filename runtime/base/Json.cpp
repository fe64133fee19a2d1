//===- Json.cpp - Strict parsing and typed reads over nlohmann ------===//

#include "runtime/base/Json.h"

#include "runtime/base/Error.h"
#include "runtime/base/FileIO.h"

#include <charconv>
#include <cmath>
#include <limits>
#include <unordered_set>
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

/// Builds the document from the library's SAX events, refusing what the
/// library would accept. Members are appended to their object directly (the
/// library's own builder looks each key up first, linearly in an ordered
/// object); duplicates are found by scanning small objects and through a
/// hash set of the keys of large ones.
class StrictBuilder {
public:
  using number_integer_t = Json::number_integer_t;
  using number_unsigned_t = Json::number_unsigned_t;
  using number_float_t = Json::number_float_t;
  using string_t = Json::string_t;
  using binary_t = Json::binary_t;

  explicit StrictBuilder(Json &root) : root_(root) {}

  bool null() { return value(nullptr); }
  bool boolean(bool v) { return value(v); }
  bool number_integer(number_integer_t v) { return value(v); }
  bool number_unsigned(number_unsigned_t v) { return value(v); }
  bool number_float(number_float_t v, const string_t &) { return value(v); }
  bool string(string_t &v) { return value(std::move(v)); }
  bool binary(binary_t &v) { return value(std::move(v)); }

  bool start_object(std::size_t) { return open(Json::object()); }
  bool start_array(std::size_t) { return open(Json::array()); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(string_t &k) {
    Open &o = open_.back();
    Json::object_t &members = o.value->get_ref<Json::object_t &>();
    bool repeated = false;
    if (!o.keys.empty()) {
      repeated = !o.keys.insert(k).second;
    } else {
      for (const auto &member : members)
        repeated |= member.first == k;
      if (members.size() >= kScanLimit) // from now on, a set
        for (const auto &member : members)
          o.keys.insert(member.first);
      if (!o.keys.empty())
        o.keys.insert(k);
    }
    if (repeated)
      throw Refusal{Refusal::Kind::DuplicateKey, keys_, k};
    ++keys_;
    members.emplace_back(std::move(k), nullptr);
    return true;
  }

  bool parse_error(std::size_t position, const std::string &, const nlohmann::detail::exception &e) {
    errorPosition_ = position;
    error_ = e.what();
    return false;
  }

  std::size_t errorPosition() const { return errorPosition_; }
  const std::string &error() const { return error_; }

private:
  static constexpr size_t kScanLimit = 16;
  struct Open {
    Json *value;
    std::unordered_set<std::string> keys; // large objects only
  };

  /// Where the next value goes: the root, the open array's end, or the
  /// member the last key made.
  Json *slot() {
    if (open_.empty())
      return &root_;
    Json &top = *open_.back().value;
    if (top.is_array()) {
      top.get_ref<Json::array_t &>().emplace_back();
      return &top.get_ref<Json::array_t &>().back();
    }
    return &top.get_ref<Json::object_t &>().back().second;
  }
  template <class T> bool value(T &&v) {
    *slot() = Json(std::forward<T>(v));
    return true;
  }
  bool open(Json empty) {
    if (open_.size() >= static_cast<size_t>(kMaxJsonDepth))
      throw Refusal{Refusal::Kind::TooDeep, brackets_, {}};
    ++brackets_;
    Json *at = slot();
    *at = std::move(empty);
    open_.push_back({at, {}});
    return true;
  }
  bool close() {
    open_.pop_back();
    return true;
  }

  Json &root_;
  std::vector<Open> open_;
  size_t keys_ = 0, brackets_ = 0;
  std::size_t errorPosition_ = 0;
  std::string error_;
};

} // namespace

Json parseJson(std::string_view text, std::string_view sourceName) {
  std::string prefix = sourceName.empty() ? "" : std::string(sourceName) + ": ";
  Json root;
  StrictBuilder builder(root);
  bool ok = false;
  try {
    ok = Json::sax_parse(text.begin(), text.end(), &builder, Json::input_format_t::json,
                         /*strict=*/true, /*ignore_comments=*/false);
  } catch (const Refusal &r) {
    std::string where = lineColumn(text, r.find(text));
    if (r.kind == Refusal::Kind::TooDeep)
      throw RuntimeError(prefix + where + ": nesting deeper than " +
                         std::to_string(kMaxJsonDepth) + " levels");
    Json key = r.key;
    throw RuntimeError(prefix + where + ": duplicate key " + dumpJson(key));
  }
  if (!ok) {
    // "[json.exception.parse_error.101] parse error at line 1, column 5:
    // syntax error ..." keeps its text after the position; the position is
    // recomputed from the byte offset (the library counts a newline inside
    // a string as a line of its own, column 0).
    std::string what = builder.error();
    size_t colon = what.find(": ", what.find("parse error"));
    if (what.find("parse error") == std::string::npos || colon == std::string::npos)
      colon = what.find("] ") + 1; // "number overflow parsing '1e999'"
    what = what.substr(colon + 1 + (what[colon + 1] == ' '));
    size_t offset = builder.errorPosition() > 0 ? builder.errorPosition() - 1 : 0;
    throw RuntimeError(prefix + lineColumn(text, offset) + ": " + what);
  }
  return root;
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
