//===- ResponseFormat.h - OpenAI's response_format ----------------*- C++ -*-===//
//
// What a request asks its replies to be:
//   {"type": "text"}         (or null, or absent) free text
//   {"type": "json_object"}  a JSON object
//   {"type": "json_schema", "json_schema": {"name", "schema", "strict",
//    "description"}}         a JSON object that validates against "schema"
//                            (the subset of decode/JsonGrammar.h; no schema:
//                            any object)
// The engine compiles the JSON formats into grammars that constrained
// decoding follows (decode/Constraint.h). "strict" is accepted either way:
// the reply follows the schema exactly.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_SERVE_RESPONSEFORMAT_H
#define FBT_RUNTIME_SERVE_RESPONSEFORMAT_H

#include "runtime/base/Json.h"
#include "runtime/decode/Grammar.h"

#include <string>

namespace fbt {

struct ResponseFormat {
  enum class Kind { Text, JsonObject, JsonSchema };
  Kind kind = Kind::Text;
  std::string name; ///< json_schema.name
  Json schema;      ///< json_schema.schema (null: any object)

  bool constrained() const { return kind != Kind::Text; }
  /// What identifies its grammar: the same key, the same grammar.
  std::string key() const;
  /// The grammar replies follow; a RuntimeError naming what of the schema
  /// is not supported.
  Grammar grammar() const;
};

/// Reads a request's response_format; throws ApiError (400) naming what is
/// wrong.
ResponseFormat readResponseFormat(const Json &v);

} // namespace fbt

#endif // FBT_RUNTIME_SERVE_RESPONSEFORMAT_H
