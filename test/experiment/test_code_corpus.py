"""The code corpus recipe (scripts/code_corpus.py): the split by module
leaves no file, module or file text in two parts, the data file's parts as
fbt cuts them (runtime/text/DataSplits.h) are exactly the validation and test
files, and the split is deterministic.

FBT names the fbt binary for the SentencePiece recipe (skipped without it)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts"))
import code_corpus as cc  # noqa: E402


def have_stdlib():
    try:
        return shutil.which("dpkg") and cc.stdlib_package()
    except SystemExit:
        return False


class Split(unittest.TestCase):
    SIZES = {"json/__init__.py": 100, "json/decoder.py": 300, "json/tool/x.py": 50,
             "os.py": 400, "asyncio/a.py": 250, "asyncio/b.py": 250, "re/_parser.py": 80,
             "this.py": 10, "csv.py": 120, "email/mime/text.py": 60, "email/utils.py": 90}

    def test_modules(self):
        self.assertEqual(cc.module_of("json/tool/x.py"), "json")
        self.assertEqual(cc.module_of("os.py"), "os")
        self.assertEqual(cc.module_of("email/mime/text.py"), "email")

    def test_no_module_in_two_parts(self):
        for test_f, val_f in ((0.05, 0.05), (0.1, 0.1), (0.3, 0.2), (0.6, 0.1), (0.45, 0.45)):
            train, val, test = cc.split(self.SIZES, test_f, val_f)
            self.assertEqual(sorted(train + val + test), sorted(self.SIZES))
            mods = [{cc.module_of(p) for p in part} for part in (train, val, test)]
            self.assertFalse(mods[0] & mods[1] or mods[0] & mods[2] or mods[1] & mods[2])
            self.assertTrue(train and val and test)
            if len(mods[0]) > 1:
                total = sum(self.SIZES.values())
                self.assertGreaterEqual(sum(self.SIZES[p] for p in test), test_f * total)
                self.assertGreaterEqual(sum(self.SIZES[p] for p in val), val_f * total)

    def test_same_text_in_an_earlier_part_is_dropped(self):
        texts = {p: "x%d" % i * (n // 2) for i, (p, n) in enumerate(self.SIZES.items())}
        train, val, test = cc.split({p: len(t) for p, t in texts.items()}, 0.3, 0.2)
        texts[test[0]] = texts[train[0]]  # a test file, a copy of a training file
        texts[val[0]] = texts[train[1]]   # a validation file, too
        train, val, test = cc.split({p: len(t) for p, t in texts.items()}, 0.3, 0.2)
        got_train, got_val, got_test, dropped = cc.parts(texts, 0.3, 0.2)
        self.assertEqual(got_train, train)
        self.assertEqual(sorted(dropped), sorted([val[0], test[0]]))
        self.assertEqual(got_test, [p for p in test if p not in dropped])
        self.assertEqual(got_val, [p for p in val if p not in dropped])

    def test_deterministic_and_independent_of_order(self):
        a = cc.split(self.SIZES, 0.3)
        b = cc.split(dict(reversed(list(self.SIZES.items()))), 0.3)
        self.assertEqual(a, b)


def cuts(n, starts, val_f, test_f):
    """fbt's cuts (runtime/text/DataSplits.h): each part from the first
    document start at or after n - floor(F * n) of the part after it."""
    at = lambda target: min([s for s in starts if s >= target] or [n])  # noqa: E731
    test = at(n - int(test_f * n))
    return at(test - int(val_f * n)), test


@unittest.skipUnless(have_stdlib(), "no libpython3.X-stdlib installed")
class Recipe(unittest.TestCase):
    def check_parts(self, d):
        with open(os.path.join(d, "manifest.json")) as f:
            m = json.load(f)
        self.assertGreater(len(m["train"]["files"]), 100)
        for name in cc.PARTS:
            self.assertGreater(len(m[name]["files"]), 3, name)
        for a, b in (("train", "validation"), ("train", "test"), ("validation", "test")):
            self.assertFalse(set(m[a]["files"]) & set(m[b]["files"]), (a, b))
            self.assertFalse(set(m[a]["modules"]) & set(m[b]["modules"]), (a, b))
        texts = {}
        for name in cc.PARTS:
            with open(os.path.join(d, name + ".jsonl")) as f:
                texts[name] = [json.loads(l) for l in f]
            self.assertEqual([t["path"] for t in texts[name]], m[name]["files"])
        bodies = [{t["text"] for t in texts[name]} for name in cc.PARTS]
        self.assertFalse(bodies[0] & bodies[1] or bodies[0] & bodies[2] or bodies[1] & bodies[2])
        total = sum(m[name]["bytes"] for name in cc.PARTS)
        for name in ("validation", "test"):
            frac = m[name]["bytes"] / total
            self.assertTrue(0.1 <= frac < 0.25, (name, frac))
        return m, texts

    def test_bytes(self):
        with tempfile.TemporaryDirectory() as d:
            r = cc.build(d, "bytes", quiet=True)
            m, texts = self.check_parts(d)
            with open(r["data"]) as f:
                docs = [json.loads(l)["text"].encode() for l in f]
            self.assertEqual(docs, [t["text"].encode() for name in cc.PARTS for t in texts[name]])
            # Each file a document: BOS and its bytes; fbt's cuts fall exactly
            # at the first validation file and the first test file.
            starts, n = [], 0
            for doc in docs:
                starts.append(n)
                n += 1 + len(doc)
            self.assertEqual(r["tokens"], n)
            nt, nv = len(texts["train"]), len(texts["validation"])
            self.assertEqual(cuts(n, starts, r["val_fraction"], r["test_fraction"]),
                             (starts[nt], starts[nt + nv]))
            # The same split again.
            with tempfile.TemporaryDirectory() as d2:
                cc.build(d2, "bytes", quiet=True)
                for name in ("manifest.json", "code.jsonl"):
                    with open(os.path.join(d, name), "rb") as a, open(os.path.join(d2, name), "rb") as b:
                        self.assertEqual(a.read(), b.read(), name)

    @unittest.skipUnless(os.environ.get("FBT") and shutil.which("spm_train"), "FBT or spm_train")
    def test_sentencepiece(self):
        with tempfile.TemporaryDirectory() as d:
            r = cc.build(d, "sp", sp_vocab=1024, fbt=os.environ["FBT"], quiet=True)
            m, texts = self.check_parts(d)
            ids = cc.read_bin(r["data"])
            self.assertEqual(len(ids), r["tokens"])
            self.assertLess(max(ids), 1024)
            bos = r["bos_token_id"]
            starts = [i for i, t in enumerate(ids) if t == bos]
            self.assertEqual(len(starts), sum(len(texts[name]) for name in cc.PARTS))
            val_cut, test_cut = cuts(len(ids), starts, r["val_fraction"], r["test_fraction"])
            self.assertEqual(len(ids) - test_cut, r["test_tokens"])
            self.assertEqual(test_cut - val_cut, r["validation_tokens"])
            # The test part decodes to exactly the test files, each after
            # BOS; the model saw only the training part.
            tail = os.path.join(d, "tail.bin")
            cc.write_bin(tail, ids[test_cut:], 1024)
            out = subprocess.run([os.environ["FBT"], "tokenize", "--tokenizer", r["tokenizer_arg"],
                                  "--decode", tail], capture_output=True, check=True).stdout
            self.assertEqual(out.decode(), "".join(t["text"] for t in texts["test"]))
            with open(os.path.join(d, "spm-train.txt")) as f:
                spm_input = f.read()
            for t in texts["test"] + texts["validation"]:
                if len(t["text"]) > 200:
                    self.assertNotIn(t["text"], spm_input)


if __name__ == "__main__":
    unittest.main()
