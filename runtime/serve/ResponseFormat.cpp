//===- ResponseFormat.cpp - OpenAI's response_format -----------------------===//

#include "runtime/serve/ResponseFormat.h"

#include "runtime/decode/JsonGrammar.h"
#include "runtime/serve/ApiError.h"

namespace fbt {

namespace {
[[noreturn]] void bad(const std::string &message) {
  throw ApiError{400, "'response_format': " + message, "response_format"};
}

/// json_schema.name: 1 to 64 of a-z, A-Z, 0-9, '_' and '-', as OpenAI's.
void checkName(const Json &v) {
  if (!v.is_string())
    bad("'json_schema.name' must be a string");
  const std::string &name = v.get_ref<const std::string &>();
  bool ok = !name.empty() && name.size() <= 64 &&
            name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                   "0123456789_-") == std::string::npos;
  if (!ok)
    bad("'json_schema.name' must be 1 to 64 letters, digits, '_' or '-', got " + dumpJson(v));
}

void readJsonSchema(const Json &v, ResponseFormat &f) {
  if (!v.is_object())
    bad("'json_schema' must be an object with 'name' and 'schema'");
  bool named = false;
  for (const auto &[key, value] : v.items()) {
    if (key == "name") {
      checkName(value), named = true;
      f.name = value.get<std::string>();
    } else if (key == "schema") {
      if (!value.is_object() && !value.is_null())
        bad("'json_schema.schema' must be a JSON schema (an object)");
      f.schema = value;
    } else if (key == "strict") {
      if (!value.is_boolean() && !value.is_null())
        bad("'json_schema.strict' must be true or false");
    } else if (key == "description") {
      if (!value.is_string())
        bad("'json_schema.description' must be a string");
    } else {
      bad("unknown field 'json_schema." + key + "'");
    }
  }
  if (!named)
    bad("'json_schema.name' is required");
}
} // namespace

std::string ResponseFormat::key() const {
  switch (kind) {
  case Kind::Text:
    return "text";
  case Kind::JsonObject:
    return "json_object";
  case Kind::JsonSchema:
    return schema.is_null() ? "json_object" : "json_schema:" + dumpJson(schema);
  }
  return "";
}

Grammar ResponseFormat::grammar() const {
  return schema.is_null() ? jsonObjectGrammar() : jsonSchemaGrammar(schema);
}

ResponseFormat readResponseFormat(const Json &v) {
  ResponseFormat f;
  if (v.is_null())
    return f;
  const Json *type = v.is_object() ? jsonFind(v, "type") : nullptr;
  if (!type || !type->is_string())
    bad("must be an object with a 'type': text, json_object or json_schema");
  const std::string &t = type->get_ref<const std::string &>();
  const Json *spec = jsonFind(v, "json_schema");
  for (const auto &[key, value] : v.items())
    if (key != "type" && !(key == "json_schema" && t == "json_schema"))
      bad("unknown field '" + key + "' for type '" + t + "'");
  if (t == "text")
    return f;
  if (t == "json_object") {
    f.kind = ResponseFormat::Kind::JsonObject;
    return f;
  }
  if (t != "json_schema")
    bad("unknown type '" + t + "' (text, json_object or json_schema)");
  if (!spec)
    bad("type 'json_schema' needs 'json_schema': {\"name\", \"schema\"}");
  f.kind = ResponseFormat::Kind::JsonSchema;
  readJsonSchema(*spec, f);
  return f;
}

} // namespace fbt
