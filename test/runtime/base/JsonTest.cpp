//===- JsonTest.cpp - Strict JSON reading, typed reads, writing -----------===//
//
// The parser and writer are nlohmann's; these tests pin what fbt adds or
// relies on: strictness (duplicate keys and depth included), errors that are
// RuntimeErrors naming source, line and column, exact integers, typed reads
// that refuse what get<T>() would truncate, and the writer's spelling.
//
//===----------------------------------------------------------------------===//

#include "runtime/base/Error.h"
#include "runtime/base/Json.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace fbt;

namespace {

/// The message of the error parsing `text` throws ("" if it parses).
std::string parseError(const std::string &text, std::string_view source = {}) {
  try {
    parseJson(text, source);
  } catch (const RuntimeError &e) {
    return e.what();
  }
  return "";
}

/// Whether the message starts with `where` ("line L, column C: ").
bool startsWith(const std::string &message, const std::string &where) {
  return message.rfind(where, 0) == 0;
}

TEST(JsonTest, ParsesEveryKind) {
  Json v = parseJson(R"( {"n": null, "t": true, "f": false, "i": -42,
      "d": 2.5, "s": "hi", "a": [1, [2], {}], "o": {"k": "v"}} )");
  ASSERT_TRUE(v.is_object());
  EXPECT_TRUE(jsonAt(v, "n").is_null());
  EXPECT_TRUE(asBool(jsonAt(v, "t")));
  EXPECT_FALSE(asBool(jsonAt(v, "f")));
  EXPECT_EQ(asInt(jsonAt(v, "i")), -42);
  EXPECT_DOUBLE_EQ(asDouble(jsonAt(v, "d")), 2.5);
  EXPECT_EQ(asString(jsonAt(v, "s")), "hi");
  EXPECT_EQ(asArray(jsonAt(v, "a")).size(), 3u);
  EXPECT_EQ(asInt(jsonAt(jsonAt(jsonAt(v, "a"), 1), 0)), 2);
  EXPECT_EQ(asString(jsonAt(jsonAt(v, "o"), "k")), "v");
  EXPECT_EQ(jsonFind(v, "missing"), nullptr);
  EXPECT_EQ(jsonFind(jsonAt(v, "a"), "k"), nullptr); // not an object
}

TEST(JsonTest, ObjectsKeepInsertionOrder) {
  Json v = parseJson(R"({"z": 1, "a": 2, "m": 3})");
  std::vector<std::string> keys;
  for (const auto &[key, value] : asObject(v))
    keys.push_back(key);
  EXPECT_EQ(keys, (std::vector<std::string>{"z", "a", "m"}));
  EXPECT_EQ(dumpJson(v), R"({"z":1,"a":2,"m":3})");
}

TEST(JsonTest, IntegersStayExact) {
  // 2^53 + 1 is not a double; the int64 extremes are not either.
  Json v = parseJson("[9007199254740993, -9223372036854775808, "
                     "9223372036854775807]");
  EXPECT_EQ(asInt(v[0]), 9007199254740993LL);
  EXPECT_EQ(asInt(v[1]), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(asInt(v[2]), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(dumpJson(v), "[9007199254740993,-9223372036854775808,"
                         "9223372036854775807]");
  EXPECT_EQ(asInt(parseJson("1e3")), 1000);
}

TEST(JsonTest, AsIntRefusesWhatGetWouldTruncate) {
  EXPECT_THROW(asInt(parseJson("1.5")), RuntimeError);
  EXPECT_THROW(asInt(parseJson("1e300")), RuntimeError);
  EXPECT_THROW(asInt(parseJson("9223372036854775808")), RuntimeError); // 2^63
  EXPECT_THROW(asInt(parseJson("18446744073709551616")), RuntimeError);
  EXPECT_FALSE(isInteger(parseJson("9223372036854775808")));
  EXPECT_TRUE(isInteger(parseJson("-9223372036854775808")));
  EXPECT_FALSE(isInteger(parseJson("\"1\"")));
  try {
    asInt(parseJson("2.5"));
    FAIL();
  } catch (const RuntimeError &e) {
    EXPECT_STREQ(e.what(), "expected an integer, got 2.5");
  }
}

TEST(JsonTest, NumbersAreWrittenShortest) {
  for (double d : {0.1, 1e-7, 123456.789, 5e-324, 1.7976931348623157e308}) {
    Json back = parseJson(dumpJson(Json(d)));
    EXPECT_EQ(asDouble(back), d) << dumpJson(Json(d));
  }
  EXPECT_EQ(dumpJson(Json(0.1)), "0.1");
  EXPECT_EQ(dumpJson(Json(100.0)), "100.0"); // stays a double when read back
  EXPECT_EQ(dumpJson(jsonFloat(0.1f)), "0.1"); // a float's shortest spelling
  EXPECT_EQ(dumpJson(jsonFloat(2.3125f)), "2.3125");
  // JSON has no spelling for non-finite numbers.
  EXPECT_EQ(dumpJson(Json(std::nan(""))), "null");
  EXPECT_EQ(dumpJson(Json(INFINITY)), "null");
  EXPECT_EQ(dumpJson(jsonFloat(INFINITY)), "null");
}

TEST(JsonTest, StringsEscapeAndDecode) {
  Json v = parseJson(R"("a\"b\\c\/d\b\f\n\r\t\u0001\u00e9\u20ac\ud83d\ude00")");
  EXPECT_EQ(asString(v), "a\"b\\c/d\b\f\n\r\t\x01\xc3\xa9\xe2\x82\xac"
                         "\xf0\x9f\x98\x80");
  EXPECT_EQ(dumpJson(v), "\"a\\\"b\\\\c/d\\b\\f\\n\\r\\t\\u0001\xc3\xa9\xe2\x82"
                         "\xac\xf0\x9f\x98\x80\"");
  EXPECT_EQ(parseJson(dumpJson(v)), v);
}

TEST(JsonTest, WritingBytesThatAreNotUtf8DoesNotThrow) {
  // A token can end in the middle of a character; what is written stays
  // valid JSON and valid UTF-8.
  std::string out = dumpJson(Json(std::string("ok\xe2\x82")));
  EXPECT_EQ(out, "\"ok\xef\xbf\xbd\"");
  EXPECT_NO_THROW(parseJson(out));
}

TEST(JsonTest, RoundTripsCompactAndPretty) {
  const char *text = R"({"name":"tiny","shape":[2,3],"lr":0.001,"ok":true,)"
                     R"("none":null,"nested":{"a":[],"b":{}}})";
  Json v = parseJson(text);
  EXPECT_EQ(dumpJson(v), text);
  std::string pretty = dumpJson(v, 2);
  EXPECT_EQ(pretty, R"({
  "name": "tiny",
  "shape": [
    2,
    3
  ],
  "lr": 0.001,
  "ok": true,
  "none": null,
  "nested": {
    "a": [],
    "b": {}
  }
})");
  EXPECT_EQ(parseJson(pretty), v);
}

TEST(JsonTest, WrongKindOrMissingReadsThrowPlainErrors) {
  Json v = parseJson("[1]");
  try {
    asString(v);
    FAIL();
  } catch (const RuntimeError &e) {
    EXPECT_STREQ(e.what(), "expected a string, got an array");
  }
  EXPECT_THROW(jsonAt(v, 1), RuntimeError);
  EXPECT_THROW(jsonAt(v, "k"), RuntimeError); // not an object
  try {
    jsonAt(parseJson("{}"), "dtype");
    FAIL();
  } catch (const RuntimeError &e) {
    EXPECT_STREQ(e.what(), "missing key 'dtype'");
  }
  EXPECT_THROW(asBool(parseJson("0")), RuntimeError);
  EXPECT_THROW(asDouble(parseJson("\"1\"")), RuntimeError);
  EXPECT_THROW(asObject(v), RuntimeError);
  EXPECT_STREQ(jsonKindName(parseJson("{}")), "an object");
  EXPECT_STREQ(jsonKindName(parseJson("7")), "a number");
}

TEST(JsonTest, RefusesWhatRfc8259Refuses) {
  // Each refusal names where: the text after it is the library's.
  EXPECT_TRUE(startsWith(parseError(""), "line 1, column 1: "));
  EXPECT_TRUE(startsWith(parseError("{\n  \"a\": 1,\n  \"b\" 2\n}"),
                         "line 3, column 7: "));
  for (const char *bad :
       {"[1, 2,]", "{\"a\": 1,}", "[1 2]", "{1: 2}", "{} x", "tru", "[NaN]",
        "012", "1.", "-", "1e", "  \"abc", "\"a\nb\"", "\"\\x\"",
        "\"\\u12g4\"", "\"\\ude00\"", "\"\xff\"", "\"\xc0\xaf\"",
        "/* no */ 1", "1e999", "[Infinity]"})
    EXPECT_TRUE(startsWith(parseError(bad), "line 1, column ") ||
                parseError(bad).find("1e999") != std::string::npos)
        << bad << " -> " << parseError(bad);
}

TEST(JsonTest, RefusesDuplicateKeysAndSaysWhere) {
  EXPECT_EQ(parseError("{\"a\": 1,\r\n \"a\": 2}"),
            "line 2, column 2: duplicate key \"a\"");
  // Per object: the same key in two objects is fine, a repeat in a nested
  // one is found after other keys and strings.
  EXPECT_EQ(parseError(R"({"a": {"b": 1}, "c": {"b": 2}})"), "");
  EXPECT_EQ(parseError(R"({"x": "a:", "y": [{"k": 1, "k": 2}]})"),
            "line 1, column 28: duplicate key \"k\"");
  EXPECT_EQ(parseError(R"({"q\"": 1, "q\"": 2})", "spec.json"),
            "spec.json: line 1, column 12: duplicate key \"q\\\"\"");
}

TEST(JsonTest, RefusesDuplicatesInLargeObjectsToo) {
  // Past a few members the keys go into a set: the same answers.
  std::string text = "{";
  for (int i = 0; i < 40; ++i)
    text += "\"k" + std::to_string(i) + "\": " + std::to_string(i) + ", ";
  EXPECT_EQ(parseError(text + "\"k39x\": 0}"), "");
  size_t column = text.size() + 1;
  EXPECT_EQ(parseError(text + "\"k3\": 0}"),
            "line 1, column " + std::to_string(column) + ": duplicate key \"k3\"");
  EXPECT_EQ(parseError(text + "\"k39\": 0}"),
            "line 1, column " + std::to_string(column) + ": duplicate key \"k39\"");
  for (int k = 14; k < 19; ++k) // around the switch to the set
    EXPECT_EQ(parseError(text + "\"k" + std::to_string(k) + "\": 0}"),
              "line 1, column " + std::to_string(column) + ": duplicate key \"k" +
                  std::to_string(k) + "\"");
  Json v = parseJson(text + "\"last\": true}");
  EXPECT_EQ(asObject(v).size(), 41u);
  EXPECT_EQ(asInt(jsonAt(v, "k17")), 17);
  EXPECT_TRUE(asBool(jsonAt(v, "last")));
}

TEST(JsonTest, ErrorsNameTheSource) {
  EXPECT_TRUE(startsWith(parseError("[", "manifest.json"),
                         "manifest.json: line 1, column 2: "))
      << parseError("[", "manifest.json");
}

TEST(JsonTest, DeepNestingIsAnErrorNotACrash) {
  std::string deep(100000, '[');
  EXPECT_EQ(parseError(deep), "line 1, column 513: nesting deeper than 512 "
                              "levels");
  std::string ok = std::string(512, '[') + std::string(512, ']');
  EXPECT_EQ(parseError(ok), "");
  std::string objects = "{\"a\": [" + std::string(600, '[');
  EXPECT_EQ(parseError(objects), "line 1, column 518: nesting deeper than "
                                 "512 levels");
}

TEST(JsonTest, LoadsFilesAndNamesThemInErrors) {
  try {
    loadJsonFile("/nonexistent/x.json");
    FAIL();
  } catch (const RuntimeError &e) {
    EXPECT_EQ(
        std::string(e.what()).rfind("/nonexistent/x.json: cannot open", 0), 0u);
  }
}

} // namespace
