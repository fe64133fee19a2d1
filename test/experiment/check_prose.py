#!/usr/bin/env python3
"""Every figure a sentence of the experiment reports quotes is in the raw
results it names.

    check_prose.py ROOT FILE.md...

Each paragraph or list item of each FILE (tables, headings and code left
out: the tables are rebuilt from raw results by reports.test) that names a
report folder (`tiny-code/`, `docs/experiments/mini-code/`, a folder under
ROOT), or sits under a heading that names one, must quote only figures
found in those folders: in its generated
tables (every .md in it) or among the values of its raw results (every
.json in it, at any precision up to the one quoted). A figure is a number
as written ("0.176", "+0.113", "1.25x", "1500", "[1.22,"): numbers of a
paragraph that names no folder, and the conventions below, are not
checked. Prints each figure not found with its file and line, then
"prose: N figures in M paragraphs checked, K not found"; exits 1 if K > 0.
"""

import json
import os
import re
import sys

# Conventions, not results: the 95% of an interval, years in prose.
CONVENTIONS = {"95"}
NUMBER = re.compile(r"(?<![\w.])[+-]?\d+(?:,\d{3})*(?:\.\d+)?(?![\w])")
FOLDER = re.compile(r"`(?:docs/experiments/)?([\w.-]+(?:/[\w.-]+)*)/`")


def paragraphs(path):
    """(first line number, text, the heading above it) of each paragraph or
    list item."""
    out, cur, start, fenced, heading = [], [], 0, False, ""
    with open(path) as f:
        lines = f.read().split("\n")
    for i, line in enumerate(lines, 1):
        s = line.strip()
        if s.startswith("```"):
            fenced = not fenced
            continue
        new_item = s.startswith("- ") or s.startswith("* ") or re.match(r"\d+\. ", s)
        if fenced or not s or s.startswith("|") or s.startswith("#") or new_item:
            if cur:
                out.append((start, " ".join(cur), heading))
            cur = []
            if s.startswith("#") and not fenced:
                heading = s
            if fenced or not s or s.startswith("|") or s.startswith("#"):
                continue
        if not cur:
            start = i
        cur.append(s)
    if cur:
        out.append((start, " ".join(cur), heading))
    return out


def json_numbers(value, out):
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        out.append(float(value))
    elif isinstance(value, dict):
        for v in value.values():
            json_numbers(v, out)
    elif isinstance(value, list):
        for v in value:
            json_numbers(v, out)
    elif isinstance(value, str):
        for m in NUMBER.finditer(value):
            out.append(float(m.group(0).replace(",", "")))


class Sources:
    """The figures a report folder holds: its tables' text, its JSON values."""

    def __init__(self):
        self.cache = {}

    def of(self, folder):
        if folder not in self.cache:
            text, values = [], []
            for dirpath, _, files in os.walk(folder):
                for name in sorted(files):
                    path = os.path.join(dirpath, name)
                    if name.endswith(".md"):
                        with open(path) as f:
                            text.append(f.read())
                    elif name.endswith(".json"):
                        with open(path) as f:
                            json_numbers(json.load(f), values)
            found = set()
            for t in text:
                for m in NUMBER.finditer(t):
                    found.add(m.group(0).lstrip("+").replace(",", ""))
            # A table's figure quoted at fewer decimals is the same figure.
            values += [float(x) for x in found]
            self.cache[folder] = (found, values)
        return self.cache[folder]

    def holds(self, folder, figure):
        found, values = self.of(folder)
        bare = figure.lstrip("+").replace(",", "")
        if bare in found or bare.lstrip("-") in found:
            return True
        decimals = len(bare.split(".")[1]) if "." in bare else 0
        x = float(bare)
        for v in values:
            for scale in (1, 100):  # a share quoted as a percentage
                if round(v * scale, decimals) in (x, -x):
                    return True
        return False


def report_folders(text, root, here):
    """The report folders `text` names (relative to ROOT or to its file)."""
    folders = []
    for m in FOLDER.finditer(text):
        for base in (root, here):
            candidate = os.path.normpath(os.path.join(base, m.group(1)))
            if not candidate.startswith(os.path.abspath(root)):
                continue  # a folder of the code, not a report
            if os.path.isdir(candidate) and candidate not in folders:
                folders.append(candidate)
    return folders


def main():
    root, files = os.path.abspath(sys.argv[1]), sys.argv[2:]
    sources = Sources()
    checked = blocks = 0
    missing = []
    for path in files:
        here = os.path.dirname(os.path.abspath(path))
        for line, text, heading in paragraphs(path):
            folders = report_folders(text, root, here)
            folders += [f for f in report_folders(heading, root, here) if f not in folders]
            if not folders:
                continue
            blocks += 1
            # Folder names and file names carry numbers of their own.
            scrubbed = re.sub(r"`[^`]*`", " ", text)
            for m in NUMBER.finditer(scrubbed):
                figure = m.group(0)
                if figure.lstrip("+-") in CONVENTIONS:
                    continue
                checked += 1
                if not any(sources.holds(f, figure) for f in folders):
                    missing.append("%s:%d: %s (not in %s)" % (
                        os.path.relpath(path, root), line, figure,
                        ", ".join(os.path.relpath(f, root) for f in folders)))
    for m in missing:
        print("not found: " + m)
    print("prose: %d figures in %d paragraphs checked, %d not found" % (
        checked, blocks, len(missing)))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
