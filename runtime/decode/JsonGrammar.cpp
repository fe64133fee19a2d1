//===- JsonGrammar.cpp - grammars of JSON output: any object, or a schema's ===//

#include "runtime/decode/JsonGrammar.h"

#include "runtime/base/Error.h"

#include <algorithm>
#include <map>
#include <set>

namespace fbt {

namespace {
using Element = Grammar::Element;
using Sequence = Grammar::Sequence;

constexpr int64_t kMaxBound = 1024;
constexpr int kMaxNesting = 32;

ByteSet range(int lo, int hi) {
  ByteSet s;
  for (int c = lo; c <= hi; ++c)
    s.set(c);
  return s;
}

/// The rules every JSON grammar shares: whitespace, strings, numbers and
/// any value.
struct Builder {
  Grammar g;
  int32_t ws, character, string, number, integer, value, anyObject;

  Builder() {
    ws = g.addRule("ws"); // up to two of space, tab, newline
    Element w = g.bytes(ByteSet().set(' ').set('\t').set('\n'));
    int32_t ws1 = g.addRule("ws1");
    g.addAlternative(ws1, {});
    g.addAlternative(ws1, {w});
    g.addAlternative(ws, {});
    g.addAlternative(ws, {w, Grammar::rule(ws1)});
    character = characterRule();
    string = stringRule(character);
    integer = integerRule();
    number = numberRule();
    value = g.addRule("value");
    anyObject = objectRule();
    int32_t anyArray = arrayRule();
    for (int32_t r : {anyObject, anyArray, string, number})
      g.addAlternative(value, {Grammar::rule(r)});
    for (const char *word : {"true", "false", "null"})
      g.addAlternative(value, g.literal(word));
  }

  Element rule(int32_t r) const { return Grammar::rule(r); }
  Element w() const { return rule(ws); }

  /// One character of a JSON string: printable ASCII but '"' and '\',
  /// an escape, or a whole UTF-8 sequence.
  int32_t characterRule() {
    int32_t r = g.addRule("char");
    ByteSet plain = range(0x20, 0x7f);
    plain.reset('"').reset('\\');
    g.addAlternative(r, {g.bytes(plain)});
    ByteSet escaped;
    for (char c : std::string("\"\\/bfnrt"))
      escaped.set((uint8_t)c);
    g.addAlternative(r, {g.byte('\\'), g.bytes(escaped)});
    ByteSet hex = range('0', '9') | range('a', 'f') | range('A', 'F');
    Element h = g.bytes(hex);
    g.addAlternative(r, {g.byte('\\'), g.byte('u'), h, h, h, h});
    Element tail = g.bytes(range(0x80, 0xbf));
    g.addAlternative(r, {g.bytes(range(0xc2, 0xdf)), tail});
    g.addAlternative(r, {g.bytes(range(0xe0, 0xef)), tail, tail});
    g.addAlternative(r, {g.bytes(range(0xf0, 0xf4)), tail, tail, tail});
    return r;
  }

  int32_t stringRule(int32_t ch) {
    int32_t chars = g.addRule("chars");
    g.addAlternative(chars, {});
    g.addAlternative(chars, {rule(ch), rule(chars)});
    int32_t r = g.addRule("string");
    g.addAlternative(r, {g.byte('"'), rule(chars), g.byte('"')});
    return r;
  }

  /// digits ::= '' | [0-9] digits
  int32_t digitsRule() {
    int32_t r = g.addRule("digits");
    g.addAlternative(r, {});
    g.addAlternative(r, {g.bytes(range('0', '9')), rule(r)});
    return r;
  }

  int32_t integerRule() {
    int32_t digits = digitsRule();
    int32_t r = g.addRule("integer");
    for (bool negative : {false, true}) {
      Sequence zero = negative ? g.literal("-0") : g.literal("0");
      Sequence more = {g.bytes(range('1', '9')), rule(digits)};
      if (negative)
        more.insert(more.begin(), g.byte('-'));
      g.addAlternative(r, zero);
      g.addAlternative(r, more);
    }
    return r;
  }

  int32_t numberRule() {
    int32_t digits = digitsRule();
    Element digit = g.bytes(range('0', '9'));
    int32_t frac = g.addRule("fraction");
    g.addAlternative(frac, {});
    g.addAlternative(frac, {g.byte('.'), digit, rule(digits)});
    int32_t exp = g.addRule("exponent");
    g.addAlternative(exp, {});
    g.addAlternative(exp, {g.bytes(ByteSet().set('e').set('E')), digit, rule(digits)});
    g.addAlternative(exp, {g.bytes(ByteSet().set('e').set('E')),
                           g.bytes(ByteSet().set('+').set('-')), digit, rule(digits)});
    int32_t r = g.addRule("number");
    g.addAlternative(r, {rule(integer), rule(frac), rule(exp)});
    return r;
  }

  /// "[" ws "]" | "[" ws item ws ("," ws item ws)* "]"
  int32_t arrayRule(int32_t item = -1, int64_t lo = 0, int64_t hi = -1) {
    if (item < 0)
      item = value;
    int32_t r = g.addRule("array");
    if (lo == 0)
      g.addAlternative(r, {g.byte('['), w(), g.byte(']')});
    if (hi != 0)
      g.addAlternative(r, {g.byte('['), w(), rule(item), w(), rule(repeat(item, 1, lo, hi, true)),
                           g.byte(']')});
    return r;
  }

  /// What follows `have` items or characters of at least `lo` and at most
  /// `hi` (-1: no limit): more of them (after a comma where `commas`), or
  /// nothing once there are enough.
  int32_t repeat(int32_t item, int64_t have, int64_t lo, int64_t hi, bool commas) {
    int32_t r = g.addRule("repeat");
    if (have >= lo && hi < 0) { // any more: one recursive rule
      g.addAlternative(r, {});
      g.addAlternative(r, more(item, r, commas));
      return r;
    }
    if (have >= lo)
      g.addAlternative(r, {});
    if (hi < 0 || have < hi)
      g.addAlternative(r, more(item, repeat(item, have + 1, lo, hi, commas), commas));
    return r;
  }

  Sequence more(int32_t item, int32_t then, bool commas) {
    if (commas)
      return {g.byte(','), w(), rule(item), w(), rule(then)};
    return {rule(item), rule(then)};
  }

  /// "{" ws "}" | "{" ws member ws ("," ws member ws)* "}"
  int32_t objectRule() {
    int32_t member = g.addRule("member");
    g.addAlternative(member, {rule(string), w(), g.byte(':'), w(), rule(value)});
    int32_t r = g.addRule("object");
    g.addAlternative(r, {g.byte('{'), w(), g.byte('}')});
    g.addAlternative(r, {g.byte('{'), w(), rule(member), w(), rule(repeat(member, 1, 0, -1, true)),
                         g.byte('}')});
    return r;
  }

  /// A rule matching exactly `text`.
  int32_t literalRule(const std::string &text) {
    int32_t r = g.addRule("literal");
    g.addAlternative(r, g.literal(text));
    return r;
  }
};

/// Keywords of the supported subset (JsonGrammar.h), and those that only
/// describe.
const std::set<std::string> &knownKeywords() {
  static const std::set<std::string> k = {
      "type",        "properties", "required", "additionalProperties", "items",
      "minItems",    "maxItems",   "minLength", "maxLength",           "enum",
      "const",       "anyOf",      "$ref",      "title",               "description",
      "default",     "examples",   "$schema",   "$id",                 "$comment",
      "$defs",       "definitions"};
  return k;
}

/// Keywords that describe a schema and constrain nothing.
bool describesOnly(const std::string &key) {
  static const std::set<std::string> k = {"title", "description", "default", "examples",
                                          "$schema", "$id", "$comment", "$defs", "definitions"};
  return k.count(key) > 0;
}

class SchemaCompiler {
public:
  explicit SchemaCompiler(const Json &root) : root_(root) {}

  Grammar compile() {
    const Json *resolved = &root_;
    std::string path = "#";
    if (root_.is_object() && root_.contains("$ref"))
      resolved = &resolve(root_.at("$ref"), path);
    const Json *type = resolved->is_object() ? jsonFind(*resolved, "type") : nullptr;
    if (!type || !type->is_string() || type->get<std::string>() != "object")
      fail("#", "the root must be an object ('type': 'object'), as OpenAI's structured "
                "outputs require");
    b_.g.setRoot(node(root_, "#"));
    return std::move(b_.g);
  }

private:
  [[noreturn]] static void fail(const std::string &path, const std::string &what) {
    throw RuntimeError("JSON schema at " + path + ": " + what);
  }

  /// The definition a $ref names.
  const Json &resolve(const Json &ref, const std::string &path) {
    if (!ref.is_string())
      fail(path, "'$ref' must be a string");
    std::string to = ref.get<std::string>();
    for (const char *prefix : {"#/$defs/", "#/definitions/"}) {
      std::string p = prefix;
      if (to.compare(0, p.size(), p) == 0) {
        const Json *defs = jsonFind(root_, p.substr(2, p.size() - 3));
        const Json *def = defs && defs->is_object() ? jsonFind(*defs, to.substr(p.size())) : nullptr;
        if (!def)
          fail(path, "'$ref' names '" + to + "', which the schema does not define");
        return *def;
      }
    }
    fail(path, "'$ref' '" + to + "' is not supported (only #/$defs/NAME and "
               "#/definitions/NAME)");
  }

  /// $ref and anyOf with a keyword beside them that constrains: JSON Schema
  /// applies both, an intersection a grammar cannot follow, so it is refused
  /// by name rather than ignored.
  static void onlyDescribed(const Json &s, const char *keyword, const std::string &path,
                            const char *instead) {
    for (const auto &[key, v] : s.items())
      if (key != keyword && !describesOnly(key))
        fail(path, "'" + key + "' beside '" + keyword + "' is not supported (" + instead + ")");
  }

  /// const and enum: the values that also satisfy the keywords beside them
  /// (as "type": "string" beside an enum), each tested against those
  /// keywords' own grammar; refused where none does.
  int32_t values(const Json &s, const std::string &path) {
    const Json *c = jsonFind(s, "const"), *e = jsonFind(s, "enum");
    if (e && (!e->is_array() || e->empty()))
      fail(path, "'enum' must be a non-empty array");
    std::vector<Json> candidates = c ? std::vector<Json>{*c} : std::vector<Json>(e->begin(), e->end());
    if (c && e && std::find(e->begin(), e->end(), *c) == e->end())
      fail(path, "'const' " + dumpJson(*c) + " is not among 'enum''s values");
    Json rest = Json::object();
    for (const auto &[key, v] : s.items())
      if (key != "const" && key != "enum" && !describesOnly(key))
        rest[key] = v;
    if (!rest.empty()) {
      SchemaCompiler sub(root_);
      Grammar g = sub.valueGrammar(rest, path);
      std::vector<Json> kept;
      for (const Json &v : candidates) {
        GrammarState st = GrammarState::start(g).advance(g, dumpJson(v));
        if (!st.dead() && st.complete())
          kept.push_back(v);
      }
      if (kept.empty())
        fail(path, std::string("no value of '") + (c ? "const" : "enum") +
                       "' satisfies the keywords beside it (" + dumpJson(rest) + ")");
      candidates = std::move(kept);
    }
    int32_t r = b_.g.addRule(std::string(c ? "const" : "enum") + " at " + path);
    for (const Json &v : candidates)
      b_.g.addAlternative(r, b_.g.literal(dumpJson(v)));
    return r;
  }

  /// The grammar of any value `s` accepts (not only an object), its $refs
  /// resolved in the same root.
  Grammar valueGrammar(const Json &s, const std::string &path) {
    b_.g.setRoot(node(s, path));
    checkGrammar(b_.g);
    return std::move(b_.g);
  }

  int64_t bound(const Json &s, const char *key, int64_t otherwise, const std::string &path) {
    const Json *v = jsonFind(s, key);
    if (!v)
      return otherwise;
    if (!v->is_number_integer() || v->get<int64_t>() < 0 || v->get<int64_t>() > kMaxBound)
      fail(path, std::string("'") + key + "' must be an integer 0.." + std::to_string(kMaxBound));
    return v->get<int64_t>();
  }

  int32_t node(const Json &s, const std::string &path) {
    struct Nesting { // schemas within schemas: bounded, so is the recursion
      int &depth;
      explicit Nesting(int &d) : depth(++d) {}
      ~Nesting() { --depth; }
    } nesting(depth_);
    if (depth_ > kMaxNesting)
      fail(path, "schemas nest deeper than " + std::to_string(kMaxNesting));
    if (s.is_boolean()) {
      if (!s.get<bool>())
        fail(path, "the schema 'false' accepts nothing");
      return b_.value;
    }
    if (!s.is_object())
      fail(path, "a schema must be an object, not " + std::string(jsonKindName(s)));
    for (const auto &[key, v] : s.items())
      if (!knownKeywords().count(key))
        fail(path, "'" + key + "' is not supported (supported: type, properties, required, "
                   "additionalProperties, items, minItems, maxItems, minLength, maxLength, "
                   "enum, const, anyOf, $ref)");
    if (const Json *ref = jsonFind(s, "$ref")) {
      onlyDescribed(s, "$ref", path, "put it in the definition");
      std::string to = ref->is_string() ? ref->get<std::string>() : "";
      auto it = refs_.find(to);
      if (it != refs_.end())
        return it->second;
      const Json &def = resolve(*ref, path);
      int32_t r = b_.g.addRule("$ref " + to);
      refs_[to] = r; // before compiling it: a recursive reference finds it
      b_.g.addAlternative(r, {b_.rule(node(def, to))});
      return r;
    }
    if (s.contains("const") || s.contains("enum"))
      return values(s, path);
    if (const Json *any = jsonFind(s, "anyOf")) {
      onlyDescribed(s, "anyOf", path, "put it in each of its schemas");
      if (!any->is_array() || any->empty())
        fail(path, "'anyOf' must be a non-empty array of schemas");
      int32_t r = b_.g.addRule("anyOf at " + path);
      for (size_t i = 0; i < any->size(); ++i)
        b_.g.addAlternative(r, {b_.rule(node((*any)[i], path + "/anyOf/" + std::to_string(i)))});
      return r;
    }
    const Json *type = jsonFind(s, "type");
    if (!type) // untyped: what its keywords imply, else any value
      return s.contains("properties") ? typed(s, "object", path)
             : s.contains("items")    ? typed(s, "array", path)
                                      : b_.value;
    if (type->is_string())
      return typed(s, type->get<std::string>(), path);
    if (!type->is_array() || type->empty())
      fail(path, "'type' must be a type name or a non-empty list of them");
    int32_t r = b_.g.addRule("types");
    for (const Json &t : *type) {
      if (!t.is_string())
        fail(path, "'type' lists a " + std::string(jsonKindName(t)));
      b_.g.addAlternative(r, {b_.rule(typed(s, t.get<std::string>(), path))});
    }
    return r;
  }

  int32_t typed(const Json &s, const std::string &type, const std::string &path) {
    if (type == "object")
      return object(s, path);
    if (type == "array") {
      const Json *items = jsonFind(s, "items");
      int32_t item = items ? node(*items, path + "/items") : b_.value;
      int64_t lo = bound(s, "minItems", 0, path), hi = bound(s, "maxItems", -1, path);
      if (hi >= 0 && hi < lo)
        fail(path, "'maxItems' is below 'minItems'");
      return b_.arrayRule(item, lo, hi);
    }
    if (type == "string") {
      int64_t lo = bound(s, "minLength", 0, path), hi = bound(s, "maxLength", -1, path);
      if (hi >= 0 && hi < lo)
        fail(path, "'maxLength' is below 'minLength'");
      if (lo == 0 && hi < 0)
        return b_.string;
      int32_t r = b_.g.addRule("string");
      b_.g.addAlternative(r, {b_.g.byte('"'), b_.rule(b_.repeat(b_.character, 0, lo, hi, false)),
                              b_.g.byte('"')});
      return r;
    }
    if (type == "number")
      return b_.number;
    if (type == "integer")
      return b_.integer;
    if (type == "boolean") {
      int32_t r = b_.g.addRule("boolean");
      b_.g.addAlternative(r, b_.g.literal("true"));
      b_.g.addAlternative(r, b_.g.literal("false"));
      return r;
    }
    if (type == "null")
      return b_.literalRule("null");
    fail(path, "unknown type '" + type + "'");
  }

  int32_t object(const Json &s, const std::string &path) {
    const Json *props = jsonFind(s, "properties");
    const Json *extra = jsonFind(s, "additionalProperties");
    if (extra && !extra->is_boolean() && !(extra->is_object() && extra->empty()))
      fail(path, "'additionalProperties' as a schema is not supported (true or false)");
    bool closed = extra && extra->is_boolean() && !extra->get<bool>();
    if (props && !props->is_object())
      fail(path, "'properties' must be an object");
    std::set<std::string> required;
    if (const Json *req = jsonFind(s, "required")) {
      if (!req->is_array())
        fail(path, "'required' must be an array of names");
      for (const Json &name : *req) {
        if (!name.is_string() || !props || !props->contains(name.get<std::string>()))
          fail(path, "'required' names " + dumpJson(name) + ", which 'properties' lacks");
        required.insert(name.get<std::string>());
      }
    }
    if (!props || props->empty()) {
      if (!closed)
        return b_.anyObject;
      return b_.literalRule("{}");
    }
    // members(i, first): the properties from i on, each (after a comma
    // unless first) written or, when optional, left out.
    std::vector<std::pair<std::string, int32_t>> members;
    for (const auto &[name, sub] : props->items())
      members.push_back({name, node(sub, path + "/properties/" + name)});
    const int64_t n = (int64_t)members.size();
    std::vector<std::array<int32_t, 2>> rest(n + 1);
    for (int64_t i = n; i >= 0; --i)
      for (int first = 0; first < 2; ++first) {
        int32_t r = b_.g.addRule("members at " + path);
        rest[i][first] = r;
        if (i == n) {
          b_.g.addAlternative(r, {});
          continue;
        }
        Sequence write = b_.g.literal(dumpJson(Json(members[i].first)));
        write.insert(write.end(), {b_.w(), b_.g.byte(':'), b_.w(), b_.rule(members[i].second),
                                   b_.w(), b_.rule(rest[i + 1][0])});
        if (!first)
          write.insert(write.begin(), {b_.g.byte(','), b_.w()});
        b_.g.addAlternative(r, write);
        if (!required.count(members[i].first))
          b_.g.addAlternative(r, {b_.rule(rest[i + 1][first])});
      }
    int32_t r = b_.g.addRule("object at " + path);
    b_.g.addAlternative(r, {b_.g.byte('{'), b_.w(), b_.rule(rest[0][1]), b_.g.byte('}')});
    return r;
  }

  const Json &root_;
  Builder b_;
  int depth_ = 0;
  std::map<std::string, int32_t> refs_;
};
} // namespace

Grammar jsonObjectGrammar() {
  Builder b;
  b.g.setRoot(b.anyObject);
  checkGrammar(b.g);
  return std::move(b.g);
}

Grammar jsonSchemaGrammar(const Json &schema) {
  Grammar g = SchemaCompiler(schema).compile();
  try {
    checkGrammar(g);
  } catch (const RuntimeError &e) { // in the schema's terms: its rules are named for it
    throw RuntimeError(std::string("JSON schema: ") + e.what());
  }
  return g;
}

} // namespace fbt
