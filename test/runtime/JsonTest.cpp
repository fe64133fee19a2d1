//===- JsonTest.cpp - JSON values, parser errors, writer ------------------===//

#include "runtime/Json.h"
#include "runtime/Error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using fbt::Json;
using fbt::RuntimeError;

namespace {

/// The message of the error parsing `text` throws ("" if it parses).
std::string parseError(const std::string &text) {
  try {
    Json::parse(text);
  } catch (const RuntimeError &e) {
    return e.what();
  }
  return "";
}

TEST(JsonTest, ParsesEveryKind) {
  Json v = Json::parse(R"( {"n": null, "t": true, "f": false, "i": -42,
      "d": 2.5, "s": "hi", "a": [1, [2], {}], "o": {"k": "v"}} )");
  ASSERT_TRUE(v.isObject());
  EXPECT_TRUE(v.at("n").isNull());
  EXPECT_TRUE(v.at("t").asBool());
  EXPECT_FALSE(v.at("f").asBool());
  EXPECT_EQ(v.at("i").asInt(), -42);
  EXPECT_DOUBLE_EQ(v.at("d").asDouble(), 2.5);
  EXPECT_EQ(v.at("s").asString(), "hi");
  EXPECT_EQ(v.at("a").size(), 3u);
  EXPECT_EQ(v.at("a")[1][0].asInt(), 2);
  EXPECT_EQ(v.at("o").at("k").asString(), "v");
  EXPECT_EQ(v.find("missing"), nullptr);
}

TEST(JsonTest, ObjectsKeepInsertionOrder) {
  Json v = Json::parse(R"({"z": 1, "a": 2, "m": 3})");
  std::vector<std::string> keys;
  for (const auto &m : v.asObject())
    keys.push_back(m.first);
  EXPECT_EQ(keys, (std::vector<std::string>{"z", "a", "m"}));
  EXPECT_EQ(v.dump(), R"({"z":1,"a":2,"m":3})");
}

TEST(JsonTest, IntegersStayExact) {
  // 2^53 + 1 is not a double; offsets into big checkpoints need it exact.
  Json v = Json::parse("[9007199254740993, -9223372036854775808, "
                       "9223372036854775807]");
  EXPECT_EQ(v[0].asInt(), 9007199254740993LL);
  EXPECT_EQ(v[1].asInt(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(v[2].asInt(), std::numeric_limits<int64_t>::max());
  EXPECT_EQ(v.dump(), "[9007199254740993,-9223372036854775808,"
                      "9223372036854775807]");
  // Beyond int64 it is a double, still a number.
  Json big = Json::parse("18446744073709551616");
  EXPECT_FALSE(big.isInteger());
  EXPECT_DOUBLE_EQ(big.asDouble(), 18446744073709551616.0);
  // Integral doubles are integers too; fractions are not.
  EXPECT_EQ(Json::parse("1e3").asInt(), 1000);
  EXPECT_THROW(Json::parse("1.5").asInt(), RuntimeError);
}

TEST(JsonTest, DoublesRoundTripShortest) {
  for (double d :
       {0.1, 1.0 / 3.0, -2.5e-300, 1e21, 123456789.125, 100.0, -0.0}) {
    Json back = Json::parse(Json(d).dump());
    EXPECT_EQ(back.asDouble(), d) << Json(d).dump();
  }
  EXPECT_EQ(Json(0.1).dump(), "0.1");
  EXPECT_EQ(Json(100.0).dump(), "100.0"); // stays a double when read back
  EXPECT_EQ(Json(0.1f).dump(), "0.1");    // a float's shortest spelling
  EXPECT_EQ(Json(2.3125f).dump(), "2.3125");
  // JSON cannot spell non-finite numbers.
  EXPECT_EQ(Json(std::nan("")).dump(), "null");
  EXPECT_EQ(Json(INFINITY).dump(), "null");
}

TEST(JsonTest, StringsEscapeAndDecode) {
  Json v =
      Json::parse(R"("a\"b\\c\/d\b\f\n\r\t\u0001\u00e9\u20ac\ud83d\ude00")");
  EXPECT_EQ(v.asString(), "a\"b\\c/d\b\f\n\r\t\x01\xc3\xa9\xe2\x82\xac"
                          "\xf0\x9f\x98\x80");
  EXPECT_EQ(v.dump(),
            "\"a\\\"b\\\\c/d\\b\\f\\n\\r\\t\\u0001\xc3\xa9\xe2\x82\xac"
            "\xf0\x9f\x98\x80\"");
  EXPECT_EQ(Json::parse(v.dump()), v);
  // Raw UTF-8 passes through.
  EXPECT_EQ(Json::parse("\"\xe6\x97\xa5\"").asString(), "\xe6\x97\xa5");
}

TEST(JsonTest, RoundTripsCompactAndPretty) {
  const char *text = R"({"name":"tiny","shape":[2,3],"lr":0.001,"ok":true,)"
                     R"("none":null,"nested":{"a":[],"b":{}}})";
  Json v = Json::parse(text);
  EXPECT_EQ(v.dump(), text);
  std::string pretty = v.dump(2);
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
  EXPECT_EQ(Json::parse(pretty), v);
}

TEST(JsonTest, BuildsValues) {
  Json v;
  v["step"] = 3;
  v["loss"] = Json::array();
  v["loss"].push_back(2.5);
  v["loss"].push_back(2.25);
  v.set("step", 4); // replaces in place
  v["tag"] = "x";
  EXPECT_EQ(v.dump(), R"({"step":4,"loss":[2.5,2.25],"tag":"x"})");
  EXPECT_FALSE(Json(uint64_t(1) << 63).isInteger()); // beyond int64
  EXPECT_EQ(Json(uint64_t(1) << 62).asInt(), int64_t(1) << 62);
}

TEST(JsonTest, WrongKindAccessThrows) {
  Json v = Json::parse("[1]");
  try {
    v.asString();
    FAIL();
  } catch (const RuntimeError &e) {
    EXPECT_STREQ(e.what(), "expected a string, got an array");
  }
  EXPECT_THROW(v[1], RuntimeError);
  EXPECT_THROW(Json::parse("{}").at("k"), RuntimeError);
}

TEST(JsonTest, ErrorsGiveLineAndColumn) {
  EXPECT_EQ(parseError(""),
            "line 1, column 1: expected a value, got end of input");
  EXPECT_EQ(parseError("{\n  \"a\": 1,\n  \"b\" 2\n}"),
            "line 3, column 7: expected ':' after an object key, got '2'");
  EXPECT_EQ(parseError("[1, 2,]"),
            "line 1, column 7: expected a value, got ']'");
  EXPECT_EQ(parseError("{\"a\": 1,}"),
            "line 1, column 9: expected a string key, got '}'");
  EXPECT_EQ(parseError("{\"a\" : 1 \"b\": 2}"),
            "line 1, column 10: expected ',' or '}' after an object member, "
            "got '\"'");
  EXPECT_EQ(parseError("[1 2]"),
            "line 1, column 4: expected ',' or ']' after an array element, "
            "got '2'");
  EXPECT_EQ(parseError("{1: 2}"),
            "line 1, column 2: expected a string key or '}', got '1'");
  EXPECT_EQ(parseError("{} x"),
            "line 1, column 4: expected end of input after the value, got 'x'");
  EXPECT_EQ(parseError("tru"), "line 1, column 1: expected 'true'");
  EXPECT_EQ(parseError("[NaN]"), "line 1, column 2: expected a value, got 'N'");
  EXPECT_EQ(parseError("012"),
            "line 1, column 2: expected '.', 'e' or the end of the number "
            "after a leading 0 (no leading zeros)");
  EXPECT_EQ(parseError("1."), "line 1, column 3: expected a digit after '.', "
                              "got end of input");
  EXPECT_EQ(parseError("-"), "line 1, column 2: expected a digit, got end of "
                             "input");
  EXPECT_EQ(parseError("1e"), "line 1, column 3: expected a digit in the "
                              "exponent, got end of input");
  EXPECT_EQ(parseError("1e999"),
            "line 1, column 1: number 1e999 is out of the range of a double");
  EXPECT_EQ(parseError("  \"abc"), "line 1, column 3: unterminated string");
  EXPECT_EQ(parseError("\"a\nb\""),
            "line 1, column 3: expected a string character, got control "
            "character byte 0x0a (escape it)");
  EXPECT_EQ(parseError("\"\\x\""),
            "line 1, column 3: expected an escape character (one of "
            "\"\\/bfnrtu), got 'x'");
  EXPECT_EQ(parseError("\"\\u12g4\""),
            "line 1, column 6: expected 4 hex digits after \\u, got 'g'");
  EXPECT_EQ(parseError("\"\\ude00\""),
            "line 1, column 2: expected a high surrogate before a low "
            "surrogate in a \\u escape");
  EXPECT_EQ(parseError("\"\\ud83d\""),
            "line 1, column 2: expected a \\u low surrogate after a high "
            "surrogate");
  EXPECT_EQ(parseError("\"\xff\""),
            "line 1, column 2: expected UTF-8 in a string, got invalid byte "
            "0xff");
  EXPECT_EQ(parseError("\"\xc0\xaf\""), // overlong '/'
            "line 1, column 2: expected UTF-8 in a string, got invalid byte "
            "0xc0");
  EXPECT_EQ(parseError("{\"a\": 1,\r\n \"a\": 2}"),
            "line 2, column 2: duplicate key \"a\"");
  EXPECT_EQ(parseError("/* no */ 1"),
            "line 1, column 1: expected a value, got '/'");
}

TEST(JsonTest, ErrorsNameTheSource) {
  try {
    Json::parse("[", "manifest.json");
    FAIL();
  } catch (const RuntimeError &e) {
    EXPECT_STREQ(e.what(),
                 "manifest.json: line 1, column 2: expected a value, got end "
                 "of input");
  }
}

TEST(JsonTest, DeepNestingIsAnErrorNotACrash) {
  std::string deep(100000, '[');
  EXPECT_NE(parseError(deep).find("nesting deeper than 512 levels"),
            std::string::npos);
  std::string ok = std::string(500, '[') + std::string(500, ']');
  EXPECT_EQ(parseError(ok), "");
}

TEST(JsonTest, LoadsFilesAndNamesThemInErrors) {
  EXPECT_THROW(fbt::loadJsonFile("/nonexistent/x.json"), RuntimeError);
  try {
    fbt::loadJsonFile("/nonexistent/x.json");
  } catch (const RuntimeError &e) {
    EXPECT_EQ(
        std::string(e.what()).rfind("/nonexistent/x.json: cannot open", 0), 0u);
  }
}

} // namespace
