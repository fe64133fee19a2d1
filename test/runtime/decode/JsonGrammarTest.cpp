//===- JsonGrammarTest.cpp - JSON grammars, the recognizer, the token trie ===//

#include "runtime/decode/Constraint.h"
#include "runtime/decode/JsonGrammar.h"

#include "runtime/base/Error.h"
#include "runtime/base/Json.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace fbt;

namespace {
/// Whether `text` is a whole sentence of `g` (and nothing may follow).
bool accepts(const Grammar &g, const std::string &text) {
  GrammarState s = GrammarState::start(g).advance(g, text);
  return !s.dead() && s.complete();
}
/// Whether `text` can still become a sentence.
bool prefix(const Grammar &g, const std::string &text) {
  return !GrammarState::start(g).advance(g, text).dead();
}
std::string schemaError(const std::string &schema) {
  try {
    jsonSchemaGrammar(parseJson(schema));
  } catch (const RuntimeError &e) {
    return e.what();
  }
  return "";
}
} // namespace

TEST(JsonGrammarTest, AnyObject) {
  Grammar g = jsonObjectGrammar();
  for (const char *ok : {"{}", "{ }", R"({"a":1})", R"({"a": [1, -2.5e-3, true, null, "x\u00e9\n"], "b": {}})",
                         "{\"k\":\"\xc3\xa9\xe2\x82\xac\"}", "{\n \"a\" : 0 }"})
    EXPECT_TRUE(accepts(g, ok)) << ok;
  for (const char *bad : {"[1]", "1", R"({"a":})", R"({"a" 1})", R"({"a":01})", R"({"a":1,})",
                          "{\"a\":\"\x01\"}", "{\"a\":\"\xc3\"}", "{\"a\":\"\xff\"}",
                          R"({"a":tru})", "{   }", "{\n  \"a\":1}"})
    EXPECT_FALSE(accepts(g, bad)) << bad;
  // Nothing after the closing brace: the reply ends with its object.
  GrammarState s = GrammarState::start(g).advance(g, "{}");
  EXPECT_TRUE(s.complete());
  EXPECT_FALSE(s.canContinue());
  EXPECT_TRUE(s.advance(g, ' ').dead());
  // A number may go on or end: both stay open inside the object.
  EXPECT_TRUE(prefix(g, R"({"a":12)"));
  EXPECT_EQ(GrammarState::start(g).advance(g, R"({"a":12)").next(g).count(), 10u + 8u);
}

TEST(JsonGrammarTest, ASchemaWithRequiredOptionalAndBoundedMembers) {
  Grammar g = jsonSchemaGrammar(parseJson(R"({
    "type": "object", "title": "person",
    "properties": {
      "name": {"type": "string", "minLength": 1, "maxLength": 3},
      "age": {"type": "integer"},
      "tags": {"type": "array", "items": {"enum": ["x", "y", 3]}, "maxItems": 2},
      "nick": {"type": ["string", "null"]}
    },
    "required": ["name", "age"], "additionalProperties": false})"));
  for (const char *ok : {R"({"name":"abc","age":-12})", R"({"name":"é","age":0,"tags":[]})",
                         R"({"name":"a","age":7,"tags":["x",3],"nick":null})",
                         R"({ "name": "ab", "age": 1, "nick": "z" })"})
    EXPECT_TRUE(accepts(g, ok)) << ok;
  for (const char *bad : {R"({"age":1})", R"({"name":"a"})", R"({"name":"","age":1})",
                          R"({"name":"abcd","age":1})", R"({"name":"a","age":1.5})",
                          R"({"name":"a","age":1,"tags":["x","y","x"]})",
                          R"({"name":"a","age":1,"tags":["z"]})",
                          R"({"name":"a","age":1,"other":1})", R"({"age":1,"name":"a"})"})
    EXPECT_FALSE(accepts(g, bad)) << bad;
}

TEST(JsonGrammarTest, RefsRecurseAndAnyOfChooses) {
  Grammar g = jsonSchemaGrammar(parseJson(R"({
    "$defs": {"node": {"type": "object", "properties": {
      "v": {"anyOf": [{"type": "boolean"}, {"const": {"k": [1]}}]},
      "kids": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
      "required": ["v"]}},
    "$ref": "#/$defs/node"})"));
  EXPECT_TRUE(accepts(g, R"({"v":true,"kids":[{"v":{"k":[1]}},{"v":false,"kids":[]}]})"));
  EXPECT_FALSE(accepts(g, R"({"v":1})"));
  EXPECT_FALSE(accepts(g, R"({"v":true,"kids":[{"kids":[]}]})"));
}

TEST(JsonGrammarTest, WhatIsNotSupportedIsNamedWithItsPlace) {
  EXPECT_EQ(schemaError(R"({"type":"object","properties":{"code":{"type":"string","pattern":"^a"}}})"),
            "JSON schema at #/properties/code: 'pattern' is not supported (supported: type, "
            "properties, required, additionalProperties, items, minItems, maxItems, minLength, "
            "maxLength, enum, const, anyOf, $ref)");
  EXPECT_EQ(schemaError(R"({"type":"array"})"),
            "JSON schema at #: the root must be an object ('type': 'object'), as OpenAI's "
            "structured outputs require");
  EXPECT_EQ(schemaError(R"({"type":"object","properties":{"a":{"oneOf":[]}}})").substr(0, 50),
            "JSON schema at #/properties/a: 'oneOf' is not supp");
  EXPECT_EQ(schemaError(R"({"type":"object","properties":{"a":{"$ref":"#/$defs/b"}}})"),
            "JSON schema at #/properties/a: '$ref' names '#/$defs/b', which the schema does "
            "not define");
  EXPECT_EQ(schemaError(R"({"type":"object","required":["a"]})"),
            "JSON schema at #: 'required' names \"a\", which 'properties' lacks");
  EXPECT_EQ(schemaError(R"({"type":"object","properties":{"a":{"type":"date"}}})"),
            "JSON schema at #/properties/a: unknown type 'date'");
  EXPECT_EQ(schemaError(R"({"type":"object","properties":{"a":{"type":"string","maxLength":5000}}})"),
            "JSON schema at #/properties/a: 'maxLength' must be an integer 0..1024");
}

TEST(JsonGrammarTest, TheTrieAllowsWhatTheGrammarReads) {
  auto g = std::make_shared<const Grammar>(jsonSchemaGrammar(parseJson(
      R"({"type":"object","properties":{"a":{"enum":[1,22]}},"required":["a"]})")));
  // Tokens: control (empty), bytes, and longer pieces.
  std::vector<std::string> tokens = {"", "{", "}", "\"a", "\":", "1", "2", "22}", "{\"a\":1}",
                                     " ", "x"};
  auto trie = std::make_shared<const TokenTrie>(tokens);
  EXPECT_EQ(trie->allowed(*g, GrammarState::start(*g)), (std::vector<int32_t>{1, 8}));
  Constraint c(g, trie);
  std::vector<float> logits(tokens.size(), 1.0f);
  ASSERT_TRUE(c.mask(logits.data(), (int64_t)logits.size()));
  EXPECT_EQ(logits[0], -INFINITY);
  EXPECT_EQ(logits[1], 1.0f);
  EXPECT_EQ(logits[10], -INFINITY);
  for (int32_t id : {1, 3, 4})
    ASSERT_TRUE(c.take(id));
  EXPECT_FALSE(c.take(10)); // refused, and the state unchanged
  EXPECT_EQ(trie->allowed(*g, GrammarState::start(*g).advance(*g, "{\"a\":")),
            (std::vector<int32_t>{5, 6, 7, 9}));
  ASSERT_TRUE(c.take(7));
  EXPECT_TRUE(c.finished());
}

TEST(JsonGrammarTest, TheCacheCompilesEachKeyOnce) {
  GrammarCache cache(2);
  auto compile = [] { return jsonObjectGrammar(); };
  auto a = cache.get("a", compile);
  EXPECT_EQ(cache.get("a", compile), a);
  cache.get("b", compile);
  cache.get("c", compile); // drops "a", the least recently used
  EXPECT_EQ(cache.compiled(), 3u);
  EXPECT_NE(cache.get("a", compile), a);
  EXPECT_EQ(cache.compiled(), 4u);
  EXPECT_THROW(cache.get("bad", [] { return jsonSchemaGrammar(parseJson("{}")); }), RuntimeError);
}

namespace {
/// The issue's hostile schema: a recursive rule whose two alternatives are
/// the same, so that every level of nesting doubles the parses a stack of
/// whole stacks would keep.
const char *kAmbiguous = R"({"type": "object", "properties": {"a": {"$ref": "#/$defs/n"}},
  "required": ["a"], "$defs": {"n": {"anyOf": [
    {"type": "array", "items": {"$ref": "#/$defs/n"}},
    {"type": "array", "items": {"$ref": "#/$defs/n"}}]}}})";
} // namespace

TEST(JsonGrammarTest, AnAmbiguousGrammarCostsItsSizeNotADoublingPerByte) {
  Grammar g = jsonSchemaGrammar(parseJson(kAmbiguous));
  GrammarState s = GrammarState::start(g).advance(g, "{\"a\":");
  std::vector<size_t> heads;
  for (int depth = 1; depth <= 200; ++depth) {
    GrammarBudget budget{Constraint::kWorkPerToken};
    s = s.advance(g, '[', &budget); // each byte within one token's budget
    ASSERT_FALSE(s.dead());
    heads.push_back(s.heads());
  }
  // The heads at depth 200 are those at depth 10: parses that reach one
  // position are one head.
  EXPECT_EQ(heads[199], heads[9]);
  EXPECT_LE(heads[199], g.rules().size() * 4);
  std::string close(200, ']');
  GrammarState done = s.advance(g, close + "}");
  EXPECT_TRUE(done.complete());
  EXPECT_TRUE(s.advance(g, close).canContinue());
}

TEST(JsonGrammarTest, APastBudgetStepThrowsNamingIt) {
  Grammar g = jsonSchemaGrammar(parseJson(kAmbiguous));
  GrammarBudget budget{20};
  try {
    GrammarState::start(g, &budget).advance(g, "{\"a\":[[[[[[", &budget);
    FAIL() << "no budget error";
  } catch (const RuntimeError &e) {
    EXPECT_NE(std::string(e.what()).find("budget"), std::string::npos) << e.what();
  }
}

TEST(JsonGrammarTest, RecursionThatNeverEndsOrEntersItselfFirstIsRefused) {
  // A left-recursive $ref: the rule enters itself before reading a byte.
  EXPECT_EQ(schemaError(R"({"type": "object", "properties": {"x": {"$ref": "#/$defs/l"}},
      "$defs": {"l": {"anyOf": [{"$ref": "#/$defs/l"}, {"type": "null"}]}}})"),
            "JSON schema: grammar: left recursion: '$ref #/$defs/l' -> 'anyOf at #/$defs/l' -> "
            "'$ref #/$defs/l' before reading a byte");
  // A required member that holds itself: no finite reply.
  EXPECT_EQ(schemaError(R"({"type": "object", "properties": {"x": {"$ref": "#/$defs/r"}},
      "$defs": {"r": {"type": "object", "properties": {"y": {"$ref": "#/$defs/r"}},
                      "required": ["y"]}}})"),
            "JSON schema: grammar: '$ref #/$defs/r' derives no finite text (every alternative "
            "needs itself, or nothing can be read)");
  // The same recursion with the member optional ends, and is accepted.
  EXPECT_EQ(schemaError(R"({"type": "object", "properties": {"x": {"$ref": "#/$defs/r"}},
      "$defs": {"r": {"type": "object", "properties": {"y": {"$ref": "#/$defs/r"}}}}})"),
            "");
  // By hand: a rule with no alternative, and one on an empty byte set.
  Grammar g;
  int32_t root = g.addRule("root"), none = g.addRule("none");
  g.addAlternative(root, {Grammar::rule(none)});
  g.setRoot(root);
  EXPECT_THROW(checkGrammar(g), RuntimeError);
  Grammar h;
  int32_t r = h.addRule("root");
  h.addAlternative(r, {h.bytes(ByteSet())});
  h.setRoot(r);
  EXPECT_THROW(checkGrammar(h), RuntimeError);
}

TEST(JsonGrammarTest, KeywordsBesideEnumConstAnyOfAndRefAreEnforcedOrRefused) {
  // Beside enum and const: only the values the other keywords accept.
  Grammar g = jsonSchemaGrammar(parseJson(R"({"type": "object", "properties": {
      "k": {"type": "string", "enum": ["a", 1, "bcd", null], "maxLength": 2}},
      "required": ["k"]})"));
  EXPECT_TRUE(accepts(g, R"({"k":"a"})"));
  for (const char *bad : {R"({"k":1})", R"({"k":"bcd"})", R"({"k":null})"})
    EXPECT_FALSE(accepts(g, bad)) << bad;
  EXPECT_EQ(schemaError(R"({"type": "object", "properties": {"k": {"const": 5, "type": "string"}}})"),
            "JSON schema at #/properties/k: no value of 'const' satisfies the keywords beside it "
            "({\"type\":\"string\"})");
  EXPECT_EQ(schemaError(R"({"type": "object", "properties": {"k": {"const": 5, "enum": [4]}}})"),
            "JSON schema at #/properties/k: 'const' 5 is not among 'enum''s values");
  // Beside anyOf and $ref: JSON Schema would apply both, so it is refused.
  EXPECT_EQ(schemaError(R"({"type": "object", "properties": {"k": {"anyOf": [{"type": "string"}],
      "maxLength": 3}}})"),
            "JSON schema at #/properties/k: 'maxLength' beside 'anyOf' is not supported (put it in "
            "each of its schemas)");
  EXPECT_EQ(schemaError(R"({"type": "object", "properties": {"k": {"$ref": "#/$defs/s",
      "type": "string"}}, "$defs": {"s": {"type": "string"}}})"),
            "JSON schema at #/properties/k: 'type' beside '$ref' is not supported (put it in the "
            "definition)");
  // Metadata beside them is fine.
  EXPECT_EQ(schemaError(R"({"type": "object", "properties": {"k": {"$ref": "#/$defs/s",
      "description": "a name"}}, "$defs": {"s": {"type": "string"}}})"),
            "");
}
