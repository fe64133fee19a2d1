#!/usr/bin/env python3
"""The code corpus data recipe: the Python standard library as Debian ships it.

The .py files of the installed libpython3.X-stdlib package (`dpkg -L`; the
newest X installed), split by top-level module into a training part and a
held-out part, so that no file (and no package) is in both:
  - a file's module is its first path component under /usr/lib/python3.X
    ("json/decoder.py" -> json, "os.py"... -> the file's own name);
  - modules are ordered by the SHA-256 of their name and taken into the
    held-out part, in that order, until it holds --heldout-fraction of the
    bytes (default 0.1); the rest is training;
  - a held-out file whose exact text is also a training file's is dropped
    (the stdlib has a few identical __init__.py files), and so are files
    that are not UTF-8 or hold a NUL byte.
The split depends only on the package's files, so it is the same on every
machine with the same package version.

The data file the runtime reads holds the training part, then the held-out
part; the recipe states the --val-fraction that makes fbt's held-out tail
(the last floor(F * n) tokens) exactly the held-out files:
  bytes  DIR/code.txt: each file's text ending in a newline, files separated
         by a blank line, read by the byte-level tokenizer as one document;
  sp     DIR/code.bin: token ids through a SentencePiece model trained on the
         training part only (spm_train, --sp-vocab pieces, byte fallback,
         whitespace kept), each file its own document after the model's BOS
         (fbt tokenize); the spec needs vocab_size and bos_token_id from
         DIR/recipe.json.

    code_corpus.py --out DIR [--tokenizer bytes|sp] [--sp-vocab N]
                   [--heldout-fraction F] [--fbt PATH]

writes DIR/{train,heldout}.jsonl (one {"path", "text"} per file),
DIR/manifest.json (package, modules and files of each part) and
DIR/recipe.json (the data file, its --val-fraction, tokenizer, vocab size,
BOS id, and the held-out part's tokens and bytes).
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


def split(sizes, heldout_fraction=0.1):
    """{path: bytes} -> (training paths, held-out paths), by module.

    Modules in SHA-256 order of their names go to the held-out part until it
    holds heldout_fraction of all bytes (or one module is left)."""
    if not 0 < heldout_fraction < 1:
        raise ValueError("heldout_fraction must be in (0, 1)")
    modules = {}
    for path, n in sizes.items():
        modules.setdefault(module_of(path), []).append(path)
    total = sum(sizes.values())
    heldout, held = set(), 0
    for module in sorted(modules, key=module_key):
        if held >= heldout_fraction * total or len(heldout) + 1 == len(modules):
            break  # (the training part keeps at least one module)
        heldout.add(module)
        held += sum(sizes[p] for p in modules[module])
    train = sorted(p for p in sizes if module_of(p) not in heldout)
    test = sorted(p for p in sizes if module_of(p) in heldout)
    return train, test


def parts(texts, heldout_fraction=0.1):
    """{path: text} -> (training paths, held-out paths, dropped): split() by
    module, less the held-out files whose text is also a training file's."""
    train, heldout = split({p: len(t.encode()) for p, t in texts.items()}, heldout_fraction)
    seen = {texts[p] for p in train}
    return (train, [p for p in heldout if texts[p] not in seen],
            [p for p in heldout if texts[p] in seen])


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
        if "\0" in text:
            skipped.append(rel)
            continue
        texts[rel] = text
    return texts, skipped


def document(text):
    """A file as it stands in code.txt: ending in a newline, then a blank line."""
    return (text if text.endswith("\n") else text + "\n") + "\n"


def exact_val_fraction(heldout, total):
    """F such that floor(F * total) == heldout (fbt's held-out tail)."""
    f = (heldout + 0.5) / total
    assert int(f * total) == heldout, (heldout, total)
    return f


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


def build(out, tokenizer="bytes", sp_vocab=4096, heldout_fraction=0.1, fbt="fbt",
          quiet=False):
    """Writes the recipe into out; returns recipe.json's contents."""
    if tokenizer not in ("bytes", "sp"):
        raise ValueError("tokenizer must be bytes or sp")
    os.makedirs(out, exist_ok=True)
    package, version, root = stdlib_package()
    texts, skipped = read_files(root, package_files(package, root))
    sizes = {p: len(t.encode()) for p, t in texts.items()}
    train, heldout, duplicates = parts(texts, heldout_fraction)

    for name, part in (("train", train), ("heldout", heldout)):
        with open(os.path.join(out, name + ".jsonl"), "w") as f:
            for p in part:
                f.write(json.dumps({"path": p, "text": texts[p]}) + "\n")
    manifest = {
        "package": package, "version": version, "root": root,
        "heldout_fraction": heldout_fraction,
        "train": {"modules": sorted({module_of(p) for p in train}), "files": train,
                  "bytes": sum(sizes[p] for p in train)},
        "heldout": {"modules": sorted({module_of(p) for p in heldout}), "files": heldout,
                    "bytes": sum(sizes[p] for p in heldout)},
        "skipped": skipped, "dropped_duplicates": duplicates,
    }
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)

    train_text = "".join(document(texts[p]) for p in train)
    heldout_text = "".join(document(texts[p]) for p in heldout)
    recipe = {"name": "code", "package": package, "version": version,
              "tokenizer": tokenizer, "train_files": len(train), "heldout_files": len(heldout),
              "train_bytes": len(train_text.encode()), "heldout_bytes": len(heldout_text.encode())}
    if tokenizer == "bytes":
        data = os.path.join(out, "code.txt")
        with open(data, "w") as f:
            f.write(train_text + heldout_text)
        # One document: BOS, then every byte.
        total = 1 + recipe["train_bytes"] + recipe["heldout_bytes"]
        recipe.update(data=data, tokenizer_arg="bytes", vocab_size=256, bos_token_id=0,
                      heldout_tokens=recipe["heldout_bytes"], tokens=total)
    else:
        with open(os.path.join(out, "spm-train.txt"), "w") as f:
            f.write(train_text)
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
        for name in ("train", "heldout"):
            binary = os.path.join(out, name + ".bin")
            subprocess.run([fbt, "tokenize", "--tokenizer", "sp:" + model, "--quiet", "-o", binary,
                            os.path.join(out, name + ".jsonl")], check=True)
            ids[name] = read_bin(binary)
        data = os.path.join(out, "code.bin")
        write_bin(data, ids["train"] + ids["heldout"], sp_vocab)
        total = len(ids["train"]) + len(ids["heldout"])
        # spm_train's default ids: unk 0, BOS 1 (fbt tokenize's separator), EOS 2.
        recipe.update(data=data, tokenizer_arg="sp:" + model, model=model, vocab_size=sp_vocab,
                      bos_token_id=ids["train"][0], heldout_tokens=len(ids["heldout"]),
                      tokens=total)
    recipe["val_fraction"] = exact_val_fraction(recipe["heldout_tokens"], recipe["tokens"])
    with open(os.path.join(out, "recipe.json"), "w") as f:
        json.dump(recipe, f, indent=1)
    return recipe


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="the recipe's folder")
    ap.add_argument("--tokenizer", choices=["bytes", "sp"], default="bytes")
    ap.add_argument("--sp-vocab", type=int, default=4096, help="SentencePiece pieces (default 4096)")
    ap.add_argument("--heldout-fraction", type=float, default=0.1)
    ap.add_argument("--fbt", default=os.path.join(os.environ.get("FBT_BUILD_DIR", "build"),
                                                  "tools", "fbt", "fbt"),
                    help="the fbt binary (for fbt tokenize; sp only)")
    args = ap.parse_args()
    r = build(args.out, args.tokenizer, args.sp_vocab, args.heldout_fraction, args.fbt)
    print(json.dumps(r, indent=1))


if __name__ == "__main__":
    main()
