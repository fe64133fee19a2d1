"""Compares a token file written by `fbt tokenize` with the oracle's ids.

usage: compare.py TOKENS.bin ORACLE.json [--documents N]
The token file holds N documents, each after the separator 50256; the
oracle's ids are of one document's text, so each document must be exactly
those ids. Prints "match" or the first difference.
"""
import json
import struct
import sys

data = open(sys.argv[1], "rb").read()
magic, version, count = struct.unpack("<3i", data[:12])
assert magic == 20240520 and version == 1, (magic, version)
ids = list(struct.unpack("<%dH" % count, data[1024:]))
assert len(data) == 1024 + 2 * count
oracle = json.load(open(sys.argv[2]))
if oracle["gpt3encoder"] != oracle["tiktoken"]:
    sys.exit("the two oracles disagree")
want = oracle["tiktoken"]
docs = int(sys.argv[4]) if len(sys.argv) > 4 else 1
expected = []
for _ in range(docs):
    expected += [50256] + want
for i, (a, b) in enumerate(zip(ids, expected)):
    if a != b:
        sys.exit("first difference at %d: ours %s, oracle %s" % (i, ids[i:i + 8], expected[i:i + 8]))
if len(ids) != len(expected):
    sys.exit("ours has %d ids, the oracle %d" % (len(ids), len(expected)))
print("match: %d documents, %d ids" % (docs, len(ids)))
