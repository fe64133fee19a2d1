"""The code corpus recipe (scripts/code_corpus.py): the split by module
leaves no file, module or file text in both parts, the data file's held-out
tail is exactly the held-out files, and the split is deterministic.

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

    def test_no_module_in_both_parts(self):
        for fraction in (0.05, 0.1, 0.3, 0.6, 0.9):
            train, test = cc.split(self.SIZES, fraction)
            self.assertEqual(sorted(train + test), sorted(self.SIZES))
            self.assertFalse(set(train) & set(test))
            self.assertFalse({cc.module_of(p) for p in train} & {cc.module_of(p) for p in test})
            self.assertTrue(train and test)
            held = sum(self.SIZES[p] for p in test)
            if len({cc.module_of(p) for p in train}) > 1:
                self.assertGreaterEqual(held, fraction * sum(self.SIZES.values()))

    def test_same_text_in_another_module_is_dropped_from_the_held_out_part(self):
        texts = {p: "x" * n for p, n in self.SIZES.items()}
        train, test = cc.split(self.SIZES, 0.3)
        texts[train[0]] = "same\n" * 10
        texts[test[0]] = "same\n" * 10  # one held-out file, a copy of a training file
        train, test = cc.split({p: len(t) for p, t in texts.items()}, 0.3)
        got_train, got_test, dropped = cc.parts(texts, 0.3)
        self.assertEqual(got_train, train)
        self.assertEqual(dropped, [test[0]])
        self.assertEqual(got_test, test[1:])

    def test_deterministic_and_independent_of_order(self):
        a = cc.split(self.SIZES, 0.3)
        b = cc.split(dict(reversed(list(self.SIZES.items()))), 0.3)
        self.assertEqual(a, b)


@unittest.skipUnless(have_stdlib(), "no libpython3.X-stdlib installed")
class Recipe(unittest.TestCase):
    def check_parts(self, d):
        with open(os.path.join(d, "manifest.json")) as f:
            m = json.load(f)
        train, test = m["train"], m["heldout"]
        self.assertGreater(len(train["files"]), 100)
        self.assertGreater(len(test["files"]), 3)
        self.assertFalse(set(train["files"]) & set(test["files"]))
        self.assertFalse(set(train["modules"]) & set(test["modules"]))
        texts = {}
        for name in ("train", "heldout"):
            with open(os.path.join(d, name + ".jsonl")) as f:
                texts[name] = [json.loads(l) for l in f]
        self.assertEqual([t["path"] for t in texts["train"]], train["files"])
        self.assertEqual([t["path"] for t in texts["heldout"]], test["files"])
        self.assertFalse({t["text"] for t in texts["train"]} & {t["text"] for t in texts["heldout"]})
        frac = test["bytes"] / (train["bytes"] + test["bytes"])
        self.assertTrue(0.1 <= frac < 0.25, frac)
        return m, texts

    def test_bytes(self):
        with tempfile.TemporaryDirectory() as d:
            r = cc.build(d, "bytes", quiet=True)
            m, texts = self.check_parts(d)
            with open(r["data"], "rb") as f:
                data = f.read()
            heldout = "".join(cc.document(t["text"]) for t in texts["heldout"]).encode()
            # One document: BOS and every byte; fbt holds out the last
            # floor(F * n) tokens, which are the held-out files.
            self.assertEqual(r["tokens"], 1 + len(data))
            cut = int(r["val_fraction"] * r["tokens"])
            self.assertEqual(cut, len(heldout))
            self.assertEqual(data[len(data) - cut:], heldout)
            for t in texts["heldout"]:
                if len(t["text"]) > 200:
                    self.assertNotIn(t["text"].encode(), data[:len(data) - cut])
            # The same split again.
            with tempfile.TemporaryDirectory() as d2:
                cc.build(d2, "bytes", quiet=True)
                for name in ("manifest.json", "code.txt"):
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
            cut = int(r["val_fraction"] * r["tokens"])
            self.assertEqual(cut, r["heldout_tokens"])
            # The held-out tail decodes to exactly the held-out files, each
            # after BOS; the model saw only the training part.
            tail = os.path.join(d, "tail.bin")
            cc.write_bin(tail, ids[len(ids) - cut:], 1024)
            self.assertEqual(ids[len(ids) - cut], r["bos_token_id"])
            self.assertEqual(ids.count(r["bos_token_id"]), len(texts["train"]) + len(texts["heldout"]))
            out = subprocess.run([os.environ["FBT"], "tokenize", "--tokenizer", r["tokenizer_arg"],
                                  "--decode", tail], capture_output=True, check=True).stdout
            self.assertEqual(out.decode(), "".join(t["text"] for t in texts["heldout"]))
            with open(os.path.join(d, "spm-train.txt")) as f:
                spm_input = f.read()
            for t in texts["heldout"]:
                if len(t["text"]) > 200:
                    self.assertNotIn(t["text"], spm_input)


if __name__ == "__main__":
    unittest.main()
