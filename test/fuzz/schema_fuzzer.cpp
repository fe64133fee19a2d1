//===- schema_fuzzer.cpp - libFuzzer target for response_format's grammars ===//
//
// The input is read as a program that writes a JSON schema within the
// supported subset (runtime/decode/JsonGrammar.h: objects, arrays, strings
// with bounds, numbers, enum and const with keywords beside them, anyOf,
// $refs to up to four definitions, recursion included), then as the choices
// of a walk through its grammar: each next byte picked among those the
// grammar allows. The bounds checked, each an abort (a finding):
//  - the schema compiles, or is refused in one line, within a second;
//  - every byte of the walk costs at most one token's budget
//    (Constraint::kWorkPerToken), however ambiguous the schema;
//  - a text the grammar calls complete parses as a JSON object.
//
//===----------------------------------------------------------------------===//

#include "runtime/base/Error.h"
#include "runtime/base/Json.h"
#include "runtime/decode/Constraint.h"
#include "runtime/decode/JsonGrammar.h"

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string>

using namespace fbt;

namespace {
class Reader {
public:
  Reader(const uint8_t *data, size_t size) : data_(data), size_(size) {}
  uint8_t byte() { return at_ < size_ ? data_[at_++] : 0; }
  bool empty() const { return at_ >= size_; }

private:
  const uint8_t *data_;
  size_t size_, at_ = 0;
};

Json scalarValue(Reader &in) {
  switch (in.byte() % 5) {
  case 0: return Json(std::string(1 + in.byte() % 3, char('a' + in.byte() % 3)));
  case 1: return Json((int64_t)(in.byte() % 7) - 3);
  case 2: return Json(in.byte() % 2 == 0);
  case 3: return Json(nullptr);
  default: return Json(1.5);
  }
}

Json schema(Reader &in, int depth) {
  if (depth > 5 || in.empty())
    return Json::object({{"type", "integer"}});
  switch (in.byte() % 9) {
  case 0: {
    Json props = Json::object(), required = Json::array();
    int n = in.byte() % 4;
    for (int i = 0; i < n; ++i) {
      std::string name(1, char('p' + i));
      props[name] = schema(in, depth + 1);
      if (in.byte() % 2)
        required.push_back(name);
    }
    Json s = Json::object({{"type", "object"}, {"properties", props}});
    if (!required.empty())
      s["required"] = required;
    if (in.byte() % 2)
      s["additionalProperties"] = false;
    return s;
  }
  case 1: {
    Json s = Json::object({{"type", "array"}, {"items", schema(in, depth + 1)}});
    if (in.byte() % 2)
      s["maxItems"] = in.byte() % 5;
    if (in.byte() % 2)
      s["minItems"] = in.byte() % 3;
    return s;
  }
  case 2: {
    Json s = Json::object({{"type", "string"}});
    if (in.byte() % 2)
      s["maxLength"] = in.byte() % 6;
    if (in.byte() % 2)
      s["minLength"] = in.byte() % 3;
    return s;
  }
  case 3: {
    Json values = Json::array();
    for (int i = 0, n = 1 + in.byte() % 4; i < n; ++i)
      values.push_back(scalarValue(in));
    Json s = Json::object({{"enum", values}});
    if (in.byte() % 2)
      s["type"] = in.byte() % 2 ? "string" : "integer";
    return s;
  }
  case 4: {
    Json s = Json::object({{"const", scalarValue(in)}});
    if (in.byte() % 3 == 0)
      s["type"] = "string";
    return s;
  }
  case 5: {
    Json any = Json::array();
    for (int i = 0, n = 1 + in.byte() % 3; i < n; ++i)
      any.push_back(schema(in, depth + 1));
    return Json::object({{"anyOf", any}});
  }
  case 6:
  case 7:
    return Json::object({{"$ref", "#/$defs/d" + std::to_string(in.byte() % 4)}});
  default:
    return Json::object({{"type", in.byte() % 2 ? "number" : "boolean"}});
  }
}

[[noreturn]] void finding(const std::string &what, const Json &s) {
  std::fprintf(stderr, "schema_fuzzer: %s\nschema: %s\n", what.c_str(), dumpJson(s).c_str());
  std::abort();
}
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Reader in(data, size);
  Json defs = Json::object();
  for (int i = 0; i < 4; ++i)
    defs["d" + std::to_string(i)] = schema(in, 1);
  Json root = schema(in, 0);
  if (!root.is_object() || !root.contains("type") || root["type"] != "object")
    root = Json::object({{"type", "object"}, {"properties", Json::object({{"v", root}})}});
  root["$defs"] = defs;

  auto t0 = std::chrono::steady_clock::now();
  Grammar g;
  try {
    g = jsonSchemaGrammar(root);
  } catch (const RuntimeError &e) {
    std::string what = e.what();
    if (what.empty() || what.find('\n') != std::string::npos)
      finding("a refusal of more than one line: " + what, root);
    return 0;
  }
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (seconds > 1.0)
    finding("compiling took " + std::to_string(seconds) + " s", root);

  std::string text;
  GrammarState s = GrammarState::start(g);
  for (int step = 0; step < 512 && s.canContinue(); ++step) {
    ByteSet next = s.next(g);
    int pick = in.byte() % (int)next.count(), c = 0;
    while (!next.test(c) || pick-- > 0)
      ++c;
    GrammarBudget budget{Constraint::kWorkPerToken};
    try {
      s = s.advance(g, (uint8_t)c, &budget);
    } catch (const RuntimeError &e) {
      finding("one byte cost more than a token's budget after '" + text + "'", root);
    }
    if (s.dead())
      finding("a byte next() allowed killed the parse after '" + text + "'", root);
    text += (char)c;
    if (s.complete()) {
      try {
        if (!parseJson(text).is_object())
          finding("a complete text is not an object: " + text, root);
      } catch (const RuntimeError &e) {
        finding("a complete text does not parse: " + text, root);
      }
    }
  }
  return 0;
}
