"""check_structured.py URL [REGIME,...]: structured output through fbt serve
at URL.

For each schema (and json_object), in each regime (default standard, soft
and fused:2), on completions and chat,
plain and streamed, greedy and sampled (n = 2, temperature 1): every reply
that ends with finish_reason "stop" parses as JSON and validates against its
schema (python3-jsonschema, Draft 2020-12), one that ends with "length" is
counted; a streamed reply equals the plain one. Schemas outside the
supported subset, and malformed response formats, are refused with a 400
naming response_format. The server compiles each format once
(fbt_grammars_compiled_total). Prints one line per check; `ok` at the end
when all hold."""
import json
import sys
import urllib.error
import urllib.request

import jsonschema

URL = sys.argv[1]
REGIMES = sys.argv[2].split(",") if len(sys.argv) > 2 else ["standard", "soft", "fused:2"]

SCHEMAS = {
    "person": {
        "type": "object", "additionalProperties": False,
        "properties": {
            "name": {"type": "string", "maxLength": 10, "description": "a name"},
            "age": {"enum": [1, 2, 30]},
            "pet": {"type": ["string", "null"], "maxLength": 6},
            "tags": {"type": "array", "items": {"type": "boolean"}, "maxItems": 3},
        },
        "required": ["name", "age"],
    },
    "tree": {
        "$defs": {"leaf": {"type": "object", "properties": {
            "v": {"anyOf": [{"type": "boolean"}, {"const": "x"}]},
            "k": {"type": "array", "items": {"$ref": "#/$defs/leaf"}, "maxItems": 1}},
            "required": ["v"]}},
        "$ref": "#/$defs/leaf",
    },
    "nested": {
        "type": "object",
        "properties": {"a": {"type": "object", "properties": {
            "b": {"type": "string", "minLength": 2, "maxLength": 4}}, "required": ["b"]},
            "c": {"type": "boolean"}},
        "required": ["a", "c"],
    },
}

REFUSED = [
    ({"type": "json_schema", "json_schema": {"name": "x", "schema": {
        "type": "object", "properties": {"d": {"type": "string", "format": "date"}}}}},
     "#/properties/d: 'format' is not supported"),
    ({"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "array"}}},
     "the root must be an object"),
    ({"type": "json_schema", "json_schema": {"name": "x", "schema": {
        "type": "object", "properties": {"n": {"type": "integer", "minimum": 0}}}}},
     "'minimum' is not supported"),
    ({"type": "json_schema", "json_schema": {"schema": {"type": "object"}}},
     "'json_schema.name' is required"),
    ({"type": "yaml"}, "unknown type 'yaml'"),
    ({"type": "json_object", "schema": {}}, "unknown field 'schema'"),
]


def post(path, body):
    request = urllib.request.Request(URL + path, json.dumps(body).encode(),
                                     {"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=120) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def streamed(path, body):
    """The texts of a streamed reply, per choice, and their finish reasons."""
    request = urllib.request.Request(URL + path, json.dumps(dict(body, stream=True)).encode(),
                                     {"Content-Type": "application/json"})
    texts, finish = {}, {}
    with urllib.request.urlopen(request, timeout=120) as r:
        for line in r.read().decode().splitlines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            for c in json.loads(line[6:]).get("choices", []):
                piece = c["delta"].get("content", "") if "delta" in c else c["text"]
                texts[c["index"]] = texts.get(c["index"], "") + (piece or "")
                if c.get("finish_reason"):
                    finish[c["index"]] = c["finish_reason"]
    return [(texts[i], finish[i]) for i in sorted(texts)]


def choices(reply):
    return [(c["message"]["content"] if "message" in c else c["text"], c["finish_reason"])
            for c in json.loads(reply)["choices"]]


def format_of(name):
    if name == "json_object":
        return {"type": "json_object"}
    return {"type": "json_schema", "json_schema": {"name": name, "schema": SCHEMAS[name],
                                                   "strict": True}}


def check(text, finish, name):
    """'valid', 'length' (cut by max_tokens) or what is wrong."""
    if finish == "length":
        return "length"
    try:
        value = json.loads(text)
    except ValueError as e:
        return "does not parse (%s): %r" % (e, text)
    if not isinstance(value, dict):
        return "not an object: %r" % text
    if name != "json_object":
        try:
            jsonschema.Draft202012Validator(SCHEMAS[name]).validate(value)
        except jsonschema.ValidationError as e:
            return "invalid (%s): %r" % (e.message, text)
    return "valid"


def main():
    failures, counts = [], {"valid": 0, "length": 0}
    for name in ["json_object"] + list(SCHEMAS):
        for regime in REGIMES:
            for chat in (False, True):
                path = "/v1/chat/completions" if chat else "/v1/completions"
                body = {"max_tokens": 120, "regime": regime, "response_format": format_of(name)}
                if chat:
                    body["messages"] = [{"role": "user", "content": "Describe a pet."}]
                else:
                    body["prompt"] = "The cat"
                greedy = dict(body, temperature=0)
                status, reply = post(path, greedy)
                if status != 200:
                    failures.append("%s %s %s: %d %s" % (name, regime, path, status, reply))
                    continue
                got = choices(reply)
                if streamed(path, greedy) != got:
                    failures.append("%s %s %s: streamed differs" % (name, regime, path))
                status, sampled = post(path, dict(body, temperature=1, seed=5, n=2))
                for text, finish in got + (choices(sampled) if status == 200 else []):
                    verdict = check(text, finish, name)
                    if verdict in counts:
                        counts[verdict] += 1
                    else:
                        failures.append("%s %s %s: %s" % (name, regime, path, verdict))
    print("replies: %d valid, %d cut by max_tokens" % (counts["valid"], counts["length"]))
    for fmt, words in REFUSED:
        status, reply = post("/v1/completions", {"prompt": "a", "response_format": fmt})
        err = json.loads(reply).get("error", {})
        ok = status == 400 and err.get("param") == "response_format" and words in err["message"]
        print("refused %s: %s" % (words, "yes" if ok else "no (%d %s)" % (status, reply)))
        if not ok:
            failures.append("not refused: %s" % words)
    with urllib.request.urlopen(URL + "/metrics", timeout=30) as r:
        metrics = r.read().decode()
    compiled = [l for l in metrics.splitlines() if l.startswith("fbt_grammars_compiled_total ")]
    print("grammars compiled: %s" % compiled[0].split()[1])
    for f in failures:
        print("FAIL " + f)
    print("ok" if not failures and counts["valid"] > 0 else "failed")


main()
