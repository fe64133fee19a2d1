//===- Json.h - JSON values: nlohmann::ordered_json, read strictly -*- C++ -*-===//
//
// fbt's JSON is nlohmann::ordered_json: objects keep their members in
// insertion order, so what we write reads back the same and diffs stay
// stable; integers are held exactly as int64 / uint64, so tensor offsets and
// byte counts above 2^53 stay exact.
//
// What the library does not give, and bad input needs, lives here:
//  - parseJson() is strict RFC 8259 and more: no comments, no trailing
//    commas, no NaN, valid UTF-8, no duplicate keys, at most kMaxJsonDepth
//    levels. Errors are fbt::RuntimeError reading
//    "<source>: line L, column C: <what>".
//  - The typed reads (asInt, asString, jsonAt, ...) throw RuntimeError with
//    a plain message ("expected a string, got an array", "missing key
//    'dtype'") where the library would throw its own exception types, and
//    asInt refuses 1.5 and 2^64 where get<int64_t>() would truncate or wrap.
//    Read untrusted input only through them: a const operator[] on a
//    missing key is undefined behaviour in the library.
//  - dumpJson() writes compact (one line, for JSONL) or pretty JSON; bytes
//    that are not UTF-8 (a token that ends mid-character) become U+FFFD
//    instead of an exception, and non-finite numbers become null.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_BASE_JSON_H
#define FBT_RUNTIME_BASE_JSON_H

#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace fbt {

using Json = nlohmann::ordered_json;

/// Deeper documents are refused: no reader of ours needs more, and a bound
/// keeps a hostile input from exhausting the stack of anything that walks it.
constexpr int kMaxJsonDepth = 512;

/// Parses one JSON document (surrounding whitespace allowed), strictly (see
/// above). Errors read "<sourceName>: line L, column C: ..." ("line L, ..."
/// when sourceName is empty).
Json parseJson(std::string_view text, std::string_view sourceName = {});

/// Reads and parses a JSON file; errors name the file.
Json loadJsonFile(const std::string &path);

/// Compact (indent < 0) or pretty with `indent` spaces per level.
std::string dumpJson(const Json &value, int indent = -1);

/// A float as the shortest decimal that reads back as it: 0.1f is written
/// "0.1", not "0.10000000149011612".
Json jsonFloat(float value);

/// "null", "a bool", "a number", "a string", "an array", "an object".
const char *jsonKindName(const Json &value);

/// A number with an integral value representable as int64.
bool isInteger(const Json &value);

// Typed reads; each throws RuntimeError when the kind does not match
// ("expected a string, got an array").
bool asBool(const Json &value);
double asDouble(const Json &value);
/// The exact value of an integral number; throws for 1.5, 1e300 or 2^63.
int64_t asInt(const Json &value);
const std::string &asString(const Json &value);
const Json::array_t &asArray(const Json &value);
const Json::object_t &asObject(const Json &value);

/// The member named key, or nullptr (also for non-objects).
const Json *jsonFind(const Json &object, std::string_view key);
Json *jsonFind(Json &object, std::string_view key);
/// The member named key; throws "missing key 'key'" when absent and
/// "expected an object, got ..." for non-objects.
const Json &jsonAt(const Json &object, std::string_view key);
/// Array element; throws when out of range or not an array.
const Json &jsonAt(const Json &array, size_t index);

} // namespace fbt

#endif // FBT_RUNTIME_BASE_JSON_H
