"""Writes a copy of a model spec with some fields set.

usage: set_spec.py IN.json OUT.json SECTION.KEY=VALUE...

The path before '=' is a key of the spec's top level (vocab_size) or a dotted
path into its sections (inference.batch_size, training.pass_distribution.2);
sections missing on the way are created. VALUE is JSON (4, 0.5, true,
{"2": 1}, "none"); a word that is not JSON is taken as a string, so
feedback.fusion=none needs no quotes. The fields keep their order and new
ones go last, so the copy differs from IN.json only where it was set.

A bad argument (no '=', an empty key, a path through a value that is not an
object) is one line on stderr naming it, and exit status 2, with nothing
written.
"""
import json
import sys


def fail(message):
    print("set_spec: " + message, file=sys.stderr)
    sys.exit(2)


def parse_value(text):
    try:
        return json.loads(text)
    except ValueError:
        return text  # a bare word


def apply(spec, change):
    path, eq, text = change.partition("=")
    keys = path.split(".")
    if not eq or not all(keys):
        fail(f"{change!r}: expected SECTION.KEY=VALUE, as in inference.batch_size=4")
    node = spec
    for depth, key in enumerate(keys[:-1]):
        node = node.setdefault(key, {})
        if not isinstance(node, dict):
            where = ".".join(keys[:depth + 1])
            fail(f"{change!r}: {where} is {json.dumps(node)}, not an object")
    node[keys[-1]] = parse_value(text)


def main(argv):
    if len(argv) < 3:
        fail("usage: set_spec.py IN.json OUT.json SECTION.KEY=VALUE...")
    source, target, changes = argv[0], argv[1], argv[2:]
    try:
        with open(source) as f:
            spec = json.load(f)
    except (OSError, ValueError) as e:
        fail(f"{source}: {e}")
    if not isinstance(spec, dict):
        fail(f"{source}: not a JSON object")
    # Every change is checked before anything is written.
    for change in changes:
        apply(spec, change)
    with open(target, "w") as f:
        json.dump(spec, f)


if __name__ == "__main__":
    main(sys.argv[1:])
