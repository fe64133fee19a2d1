#!/usr/bin/env python3
"""The code corpus data recipe: the Python standard library as Debian ships it.

The .py files of the installed libpython3.X-stdlib package (`dpkg -L`; the
newest X installed), split by top-level module into training, validation
and test parts, so that no file (and no package) is in two of them:
  - a file's module is its first path component under /usr/lib/python3.X
    ("json/decoder.py" -> json, "os.py"... -> the file's own name);
  - modules are ordered by the SHA-256 of their name and taken into the
    test part, in that order, until it holds --test-fraction of the bytes
    (default 0.1), then into the validation part until it holds
    --validation-fraction (default 0.1); the rest is training;
  - a validation or test file whose exact text is also a training file's
    (or a test file's text a validation file's) is dropped (the stdlib has a
    few identical __init__.py files), and so are files that are not UTF-8 or
    hold a NUL byte.
The split depends only on the package's files, so it is the same on every
machine with the same package version.

The data file the runtime reads holds the training files, then the
validation files, then the test files, each file its own document; the
recipe states the --val-fraction and --test-fraction that make fbt's parts
(runtime/text/DataSplits.h) exactly these files:
  bytes  DIR/code.jsonl: one {"text"} per file, read byte-level, each line a
         document after BOS;
  sp     DIR/code.bin: token ids through a SentencePiece model trained on the
         training part only (spm_train, --sp-vocab pieces, byte fallback,
         whitespace kept), each file its own document after the model's BOS
         (fbt tokenize); the spec needs vocab_size and bos_token_id from
         DIR/recipe.json.

    code_corpus.py --out DIR [--tokenizer bytes|sp] [--sp-vocab N]
                   [--validation-fraction F] [--test-fraction F] [--fbt PATH]

writes DIR/{train,validation,test}.jsonl (one {"path", "text"} per file),
DIR/manifest.json (package, modules and files of each part) and
DIR/recipe.json (the data file, its --val-fraction and --test-fraction,
tokenizer, vocab size, BOS id, and each held-out part's tokens and bytes).
"""

import argparse
import hashlib
import json
import os
import re
import struct
import subprocess
import sys

BIN_MAGIC_U16, BIN_MAGIC_U32, BIN_HEADER = 20240520, 20240801, 1024


def stdlib_package():
    """The newest installed libpython3.X-stdlib: (package, version, root)."""
    out = subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Version} ${Status}\n",
                          "libpython3.*-stdlib"], capture_output=True, text=True).stdout
    found = []
    for line in out.splitlines():
        parts = line.split(" ", 2)
        m = re.fullmatch(r"libpython3\.(\d+)-stdlib(:\w+)?", parts[0])
        if m and len(parts) == 3 and parts[2].endswith("installed") and "not-installed" not in parts[2]:
            found.append((int(m.group(1)), parts[0], parts[1]))
    if not found:
        sys.exit("code_corpus: no libpython3.X-stdlib package is installed "
                 "(scripts/install-deps.sh installs one)")
    minor, package, version = max(found)
    return package, version, "/usr/lib/python3.%d" % minor


def package_files(package, root):
    """The package's .py files under root (regular files, sorted), relative."""
    out = subprocess.run(["dpkg", "-L", package], capture_output=True, text=True,
                         check=True).stdout
    files = []
    for path in out.splitlines():
        if (path.endswith(".py") and path.startswith(root + "/") and os.path.isfile(path)
                and not os.path.islink(path)):
            files.append(os.path.relpath(path, root))
    return sorted(set(files))


def module_of(rel):
    """The top-level module a file belongs to: json/decoder.py -> json."""
    first = rel.split("/", 1)[0]
    return first[:-3] if first.endswith(".py") and "/" not in rel else first


def module_key(module):
    return hashlib.sha256(module.encode()).hexdigest()


PARTS = ("train", "validation", "test")


def split(sizes, test_fraction=0.1, validation_fraction=0.1):
    """{path: bytes} -> (training, validation, test paths), by module.

    Modules in SHA-256 order of their names go to the test part until it
    holds test_fraction of all bytes, then to the validation part until it
    holds validation_fraction (each part keeps at least one module)."""
    if not (0 < test_fraction < 1 and 0 <= validation_fraction < 1
            and test_fraction + validation_fraction < 1):
        raise ValueError("the test and validation fractions must be in (0, 1), [0, 1) "
                         "and leave a training part")
    modules = {}
    for path, n in sizes.items():
        modules.setdefault(module_of(path), []).append(path)
    total = sum(sizes.values())
    ordered = sorted(modules, key=module_key)
    part_of, taken = {}, 0
    for name, fraction in (("test", test_fraction), ("validation", validation_fraction)):
        held = 0
        # Leave a module for training, and one for validation when it is asked.
        left = 2 if name == "test" and validation_fraction > 0 else 1
        while held < fraction * total and taken + left < len(ordered):
            part_of[ordered[taken]] = name
            held += sum(sizes[p] for p in modules[ordered[taken]])
            taken += 1
    out = {name: sorted(p for p in sizes if part_of.get(module_of(p), "train") == name)
           for name in PARTS}
    return out["train"], out["validation"], out["test"]


def parts(texts, test_fraction=0.1, validation_fraction=0.1):
    """{path: text} -> (training, validation, test paths, dropped): split() by
    module, less the held-out files whose text is also in an earlier part."""
    train, val, test = split({p: len(t.encode()) for p, t in texts.items()}, test_fraction,
                             validation_fraction)
    seen = {texts[p] for p in train}
    keep_val = [p for p in val if texts[p] not in seen]
    seen |= {texts[p] for p in keep_val}
    keep_test = [p for p in test if texts[p] not in seen]
    dropped = sorted(set(val) - set(keep_val)) + sorted(set(test) - set(keep_test))
    return train, keep_val, keep_test, dropped


def read_files(root, rels):
    """{rel: text} of the files that are UTF-8 without NUL; and the rest."""
    texts, skipped = {}, []
    for rel in rels:
        with open(os.path.join(root, rel), "rb") as f:
            data = f.read()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            skipped.append(rel)
            continue
        if "\0" in text or not text:  # (an empty file is no document)
            skipped.append(rel)
            continue
        texts[rel] = text
    return texts, skipped


def exact_fractions(tokens, validation_tokens, test_tokens):
    """(--val-fraction, --test-fraction) that cut a stream of `tokens` whose last
    test_tokens are the test documents and the validation_tokens before them
    the validation documents exactly there (runtime/text/DataSplits.h: each
    part's cut is the first document start at or after n - floor(F * n))."""
    out = []
    for held in (validation_tokens, test_tokens):
        f = (held + 0.5) / tokens
        assert int(f * tokens) == held, (held, tokens)
        out.append(f)
    return tuple(out)


def read_bin(path):
    """The ids of an llm.c .bin file."""
    with open(path, "rb") as f:
        data = f.read()
    magic, _, n = struct.unpack("<3i", data[:12])
    width = {BIN_MAGIC_U16: "H", BIN_MAGIC_U32: "I"}[magic]
    return list(struct.unpack("<%d%s" % (n, width), data[BIN_HEADER:]))


def write_bin(path, ids, vocab):
    narrow = vocab <= 65536
    header = [0] * 256
    header[0], header[1], header[2] = (BIN_MAGIC_U16, 1, len(ids)) if narrow else (
        BIN_MAGIC_U32, 7, len(ids))
    with open(path + ".tmp", "wb") as f:
        f.write(struct.pack("<256i", *header))
        f.write(struct.pack("<%d%s" % (len(ids), "H" if narrow else "I"), *ids))
    os.replace(path + ".tmp", path)


def build(out, tokenizer="bytes", sp_vocab=4096, test_fraction=0.1, validation_fraction=0.1,
          fbt="fbt", quiet=False):
    """Writes the recipe into out; returns recipe.json's contents."""
    if tokenizer not in ("bytes", "sp"):
        raise ValueError("tokenizer must be bytes or sp")
    os.makedirs(out, exist_ok=True)
    package, version, root = stdlib_package()
    texts, skipped = read_files(root, package_files(package, root))
    sizes = {p: len(t.encode()) for p, t in texts.items()}
    train, val, test, duplicates = parts(texts, test_fraction, validation_fraction)
    split_files = dict(zip(PARTS, (train, val, test)))

    for name, part in split_files.items():
        with open(os.path.join(out, name + ".jsonl"), "w") as f:
            for p in part:
                f.write(json.dumps({"path": p, "text": texts[p]}) + "\n")
    manifest = {"package": package, "version": version, "root": root,
                "test_fraction": test_fraction, "validation_fraction": validation_fraction,
                "skipped": skipped, "dropped_duplicates": duplicates}
    for name, part in split_files.items():
        manifest[name] = {"modules": sorted({module_of(p) for p in part}), "files": part,
                          "bytes": sum(sizes[p] for p in part)}
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)

    recipe = {"name": "code", "package": package, "version": version, "tokenizer": tokenizer}
    for name, part in split_files.items():
        recipe[name + "_files"] = len(part)
        recipe[name + "_bytes"] = sum(sizes[p] for p in part)
    if tokenizer == "bytes":
        data = os.path.join(out, "code.jsonl")
        with open(data, "w") as f:
            for part in split_files.values():
                for p in part:
                    f.write(json.dumps({"text": texts[p]}) + "\n")
        # Each file a document: BOS, then its bytes.
        count = {name: sum(1 + sizes[p] for p in part) for name, part in split_files.items()}
        recipe.update(data=data, tokenizer_arg="bytes", vocab_size=256, bos_token_id=0)
    else:
        with open(os.path.join(out, "spm-train.txt"), "w") as f:
            f.write("".join(texts[p] if texts[p].endswith("\n") else texts[p] + "\n"
                            for p in train))
        prefix = os.path.join(out, "code-sp%d" % sp_vocab)
        cmd = ["spm_train", "--input=" + os.path.join(out, "spm-train.txt"),
               "--model_prefix=" + prefix, "--vocab_size=%d" % sp_vocab,
               "--model_type=bpe", "--character_coverage=1.0", "--byte_fallback=true",
               "--normalization_rule_name=identity", "--remove_extra_whitespaces=false",
               "--allow_whitespace_only_pieces=true", "--split_digits=true", "--add_dummy_prefix=false",
               "--max_sentence_length=100000", "--num_threads=%d" % (os.cpu_count() or 1),
               "--minloglevel=2"]
        if not quiet:
            print("$ " + " ".join(cmd), flush=True)
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL if quiet else None)
        model = os.path.abspath(prefix + ".model")
        ids = {}
        for name in PARTS:
            binary = os.path.join(out, name + ".bin")
            subprocess.run([fbt, "tokenize", "--tokenizer", "sp:" + model, "--quiet", "-o", binary,
                            os.path.join(out, name + ".jsonl")], check=True)
            ids[name] = read_bin(binary)
        data = os.path.join(out, "code.bin")
        write_bin(data, ids["train"] + ids["validation"] + ids["test"], sp_vocab)
        count = {name: len(v) for name, v in ids.items()}
        # spm_train's default ids: unk 0, BOS 1 (fbt tokenize's separator), EOS 2.
        recipe.update(data=data, tokenizer_arg="sp:" + model, model=model, vocab_size=sp_vocab,
                      bos_token_id=ids["train"][0])
    for name in PARTS:
        recipe[name + "_tokens"] = count[name]
    recipe["tokens"] = sum(count.values())
    recipe["val_fraction"], recipe["test_fraction"] = exact_fractions(
        recipe["tokens"], count["validation"], count["test"])
    with open(os.path.join(out, "recipe.json"), "w") as f:
        json.dump(recipe, f, indent=1)
    return recipe


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="the recipe's folder")
    ap.add_argument("--tokenizer", choices=["bytes", "sp"], default="bytes")
    ap.add_argument("--sp-vocab", type=int, default=4096, help="SentencePiece pieces (default 4096)")
    ap.add_argument("--test-fraction", type=float, default=0.1)
    ap.add_argument("--validation-fraction", type=float, default=0.1)
    ap.add_argument("--fbt", default=os.path.join(os.environ.get("FBT_BUILD_DIR", "build"),
                                                  "tools", "fbt", "fbt"),
                    help="the fbt binary (for fbt tokenize; sp only)")
    args = ap.parse_args()
    r = build(args.out, args.tokenizer, args.sp_vocab, args.test_fraction,
              args.validation_fraction, args.fbt)
    print(json.dumps(r, indent=1))


if __name__ == "__main__":
    main()
