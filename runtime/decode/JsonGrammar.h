//===- JsonGrammar.h - grammars of JSON output: any object, or a schema's -*- C++ -*-===//
//
// What OpenAI's response_format asks for, as grammars (Grammar.h) that
// constrained decoding follows, so that every reply parses (json_object)
// and validates against its schema (json_schema):
//
//   jsonObjectGrammar()    any JSON object (RFC 8259), strings valid UTF-8
//   jsonSchemaGrammar(S)   the texts schema S accepts, for this subset of
//                          JSON Schema (2020-12 names):
//     type         object, array, string, number, integer, boolean, null,
//                  or a list of them
//     object       properties (written in the schema's order; those not in
//                  required may be left out), required, additionalProperties
//                  (true, false or absent: only the listed properties are
//                  written; with no properties, true allows any members)
//     array        items, minItems, maxItems
//     string       minLength, maxLength (in characters)
//     enum, const  any JSON values; keywords beside them (as "type") keep
//                  only the values they accept (objects with their members
//                  in the order of the properties)
//     anyOf        any of the schemas
//     $ref         "#/$defs/NAME" or "#/definitions/NAME", recursion included
//     metadata     title, description, default, examples, $schema, $id,
//                  $comment, and $defs / definitions themselves
//   Anything else (pattern, format, minimum, oneOf, ...) is refused with a
//   RuntimeError naming the keyword and where it is ("#/properties/age"),
//   never ignored: a reply must validate. So is a keyword that constrains
//   beside anyOf or $ref (JSON Schema would apply both), and a recursion
//   that never ends ("required" through itself) or enters itself before
//   reading a byte (checkGrammar, Grammar.h). The root must be an object, as
//   OpenAI's structured outputs require.
//
// Between tokens the grammars allow up to two whitespace bytes, and no
// whitespace after the closing brace: a reply ends where its object does.
// Bounds (minItems, maxItems, minLength, maxLength) are at most 1024, and
// schemas nest at most 32 deep.
//
//===----------------------------------------------------------------------===//

#ifndef FBT_RUNTIME_DECODE_JSONGRAMMAR_H
#define FBT_RUNTIME_DECODE_JSONGRAMMAR_H

#include "runtime/base/Json.h"
#include "runtime/decode/Grammar.h"

namespace fbt {

Grammar jsonObjectGrammar();
Grammar jsonSchemaGrammar(const Json &schema);

} // namespace fbt

#endif // FBT_RUNTIME_DECODE_JSONGRAMMAR_H
