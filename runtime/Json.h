//===- Json.h - A small JSON value, parser and writer -----------*- C++ -*-===//
//
// Enough JSON for bundle manifests, safetensors headers and metrics:
//  - A value is null, bool, number, string, array or object. Objects keep
//    their members in insertion order, so what we write reads back the same
//    and diffs stay stable.
//  - A number is held as a double, and also as an exact int64 when it was
//    written or parsed as an integer (no '.', no exponent, in int64 range):
//    tensor offsets and byte counts above 2^53 stay exact.
//  - The parser is strict RFC 8259: no comments, no trailing commas, no NaN,
//    no duplicate keys, strings must be valid UTF-8 without raw control
//    characters. Errors read "line L, column C: expected ...", with 1-based
//    line and byte column, prefixed by the source name when one is given.
//  - The writer emits compact JSON (one line, for JSONL) or pretty JSON
//    (two-space indent). Non-finite numbers are written as null, since JSON
//    has no spelling for them.
// Errors throw fbt::RuntimeError (see Error.h).
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_JSON_H
#define FBT_RUNTIME_JSON_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fbt {

class Json {
public:
  enum class Kind { Null, Bool, Number, String, Array, Object };
  using Array = std::vector<Json>;
  using Member = std::pair<std::string, Json>;
  using Object = std::vector<Member>;

  Json() = default; // null
  Json(std::nullptr_t) {}
  Json(bool b) : kind_(Kind::Bool), bool_(b) {}
  Json(int v) : Json(static_cast<long long>(v)) {}
  Json(long v) : Json(static_cast<long long>(v)) {}
  Json(long long v);
  Json(unsigned v) : Json(static_cast<long long>(v)) {}
  /// Exact up to INT64_MAX; larger values are held as doubles.
  Json(unsigned long v) : Json(static_cast<unsigned long long>(v)) {}
  Json(unsigned long long v);
  Json(double v) : kind_(Kind::Number), number_(v) {}
  /// Held as the shortest decimal that reads back as v: 0.1f is 0.1.
  Json(float v);
  Json(const char *s) : kind_(Kind::String), string_(s) {}
  Json(std::string s) : kind_(Kind::String), string_(std::move(s)) {}
  Json(std::string_view s) : kind_(Kind::String), string_(s) {}
  Json(Array a) : kind_(Kind::Array), array_(std::move(a)) {}
  Json(Object o) : kind_(Kind::Object), object_(std::move(o)) {}

  static Json array() { return Json(Array{}); }
  static Json object() { return Json(Object{}); }

  /// Parses one JSON document (surrounding whitespace allowed). Errors are
  /// "<sourceName>: line L, column C: expected ..." ("line L, ..." when
  /// sourceName is empty).
  static Json parse(std::string_view text, std::string_view sourceName = {});

  Kind kind() const { return kind_; }
  bool isNull() const { return kind_ == Kind::Null; }
  bool isBool() const { return kind_ == Kind::Bool; }
  bool isNumber() const { return kind_ == Kind::Number; }
  bool isString() const { return kind_ == Kind::String; }
  bool isArray() const { return kind_ == Kind::Array; }
  bool isObject() const { return kind_ == Kind::Object; }
  /// A number with an integral value representable as int64.
  bool isInteger() const;

  // Typed access; each throws RuntimeError when the kind does not match
  // ("expected a string, got an array").
  bool asBool() const;
  double asDouble() const;
  /// The exact value of an integral number; throws for 1.5 or 1e300.
  int64_t asInt() const;
  const std::string &asString() const;
  const Array &asArray() const;
  Array &asArray();
  const Object &asObject() const;
  Object &asObject();

  /// Elements of an array or members of an object; 0 for anything else.
  size_t size() const;
  /// Array element; throws when out of range.
  const Json &operator[](size_t index) const;
  Json &operator[](size_t index);
  /// Appends to an array (a null becomes an empty array first).
  void push_back(Json value);

  /// The member named key, or nullptr (also for non-objects).
  const Json *find(std::string_view key) const;
  Json *find(std::string_view key);
  /// The member named key; throws "missing key 'key'" when absent.
  const Json &at(std::string_view key) const;
  /// The member named key, appended as null when absent (a null becomes an
  /// empty object first).
  Json &operator[](std::string_view key);
  /// Same as at(key).
  const Json &operator[](std::string_view key) const { return at(key); }
  /// Replaces the member named key, or appends it.
  void set(std::string_view key, Json value);

  /// Compact (indent < 0) or pretty with `indent` spaces per level.
  std::string dump(int indent = -1) const;

  /// Structural equality; numbers compare exactly as int64 when both are
  /// exact integers, else as doubles; object member order matters.
  bool operator==(const Json &other) const;
  bool operator!=(const Json &other) const { return !(*this == other); }

  /// "null", "a bool", "a number", "a string", "an array", "an object".
  static const char *kindName(Kind kind);

private:
  void dumpTo(std::string &out, int indent, int depth) const;
  friend class JsonParser;

  Kind kind_ = Kind::Null;
  bool bool_ = false;
  bool exactInt_ = false; // int_ holds the exact value
  int64_t int_ = 0;
  double number_ = 0;
  std::string string_;
  Array array_;
  Object object_;
};

/// Reads and parses a JSON file; errors name the file.
Json loadJsonFile(const std::string &path);

/// Appends s as a quoted JSON string (escaping '"', '\\' and control
/// characters; other bytes pass through).
void appendJsonString(std::string &out, std::string_view s);

} // namespace fbt

#endif // FBT_RUNTIME_JSON_H
