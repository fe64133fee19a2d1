#!/usr/bin/env python3
"""Checks that the README's command lines run as written.

    check_readme.py README.md --root SRC --build BUILD --bundle M.fbtb

Takes every command line of the README (its shell blocks and the
commands in backticks: fbt, fbtc, fbt-opt, scripts/, bench/, test/ and the
Python scripts run with /usr/bin/python3), and checks

  - that each program exists: an fbt command, fbtc, fbt-opt, a file under
    the source root;
  - that each option it names (--name) is one the program's --help lists;
  - and runs the short ones, with SPEC as specs/tiny.json and M.fbtb as
    --bundle: `fbtc SPEC --describe ...`, `fbtc SPEC --emit=...`,
    `fbt inspect`, `fbt --threads N ...`, `fbt devices` (exit 0 or 1).

Prints one line per problem (the README line, the command, what is wrong),
then a count, and exits 1 if there is any.
"""
import argparse
import os
import re
import shlex
import subprocess
import sys

OPTION = re.compile(r"--[a-z][a-z0-9-]*")
SPAN = re.compile(r"`([^`]+)`")
PROGRAMS = ("fbt ", "fbtc ", "fbt-opt", "build/tools/", "scripts/", "bench/", "test/",
            "/usr/bin/python3 ")


def commands(readme):
    """(line number, command) for every command line of the README."""
    out = []
    lines = open(readme, encoding="utf-8").read().split("\n")
    in_sh, pending = False, ""
    for n, line in enumerate(lines, 1):
        if line.startswith("```"):
            in_sh = line.strip() == "```sh" and not in_sh
            continue
        if in_sh:
            text = pending + line.split("  #")[0].strip()
            if text.endswith("\\"):
                pending = text[:-1] + " "
                continue
            pending = ""
            if text:
                out.append((n, text))
            continue
        for span in SPAN.findall(line):
            span = span.replace("\\|", "|")
            # A span is a command when it runs something: a program and
            # its words, or a bare script (a path alone is a mention).
            if span.startswith(PROGRAMS) and (" " in span or span.endswith((".sh", ".py"))):
                out.append((n, span))
    return out


def program_of(words):
    """The program a command runs and the words after it: ("fbt train", [...]),
    ("fbtc", [...]), ("scripts/demo.sh", [...]); None for one not checked here."""
    if words and words[0] == "mpirun":  # its own options and their values first
        words = words[1:]
        while words and words[0].startswith("-"):
            words = words[2:] if words[0] in ("-np", "--hostfile", "-x") else words[1:]
    if words and words[0].startswith("-"):
        return None
    if not words:
        return None
    head = words[0]
    if head.endswith("/fbt") or head == "fbt":
        rest = words[1:]
        if rest and rest[0].startswith("--threads"):  # fbt --threads N COMMAND
            rest = rest[1:] if "=" in rest[0] else rest[2:]
        if not rest or rest[0] in ("...",):
            return ("fbt", rest)
        return ("fbt " + rest[0], rest[1:])
    if head.endswith("fbtc") or head.endswith("fbt-opt"):
        return (os.path.basename(head), words[1:])
    if head == "/usr/bin/python3" and len(words) > 1:
        return (words[1], words[2:])
    if "/" in head:
        return (head, words[1:])
    return None


def help_text(program, args, cache):
    if program in cache:
        return cache[program]
    if program == "fbt":
        cmd = [args.fbt, "--help"]
    elif program.startswith("fbt "):
        cmd = [args.fbt, program.split()[1], "--help"]
    elif program == "fbtc":
        cmd = [args.fbtc, "--help-hidden"]
    elif program == "fbt-opt":
        cmd = [args.fbt_opt, "--help"]
    elif program.endswith(".py"):
        cmd = ["/usr/bin/python3", os.path.join(args.root, program), "--help"]
    elif program.endswith(".sh") and program.startswith("scripts/"):
        cmd = [os.path.join(args.root, program), "--help"]
    else:
        cmd = None
    text = None
    if cmd:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        text = r.stdout + r.stderr
    cache[program] = text
    return text


def options_of(words):
    found = []
    for w in words:
        for m in OPTION.finditer(w.strip("[]()")):
            if w.strip("[]()").startswith(m.group(0)):
                found.append(m.group(0))
    return found


def runnable(program, words, args):
    """The argv to run a short command with, or None."""
    subst = {"SPEC": os.path.join(args.root, "specs", "tiny.json"), "M.fbtb": args.bundle}
    if program == "fbtc" and "SPEC" in words and (
            "--describe" in words or any(w.startswith("--emit=") for w in words)):
        argv = [args.fbtc]
        for w in words:
            w = w.strip("[]")
            if w.startswith("--emit="):
                w = "--emit=" + w.split("=", 1)[1].split("|")[0]
            if w in ("--ranks",):
                argv.append(w)
                continue
            argv.append(subst.get(w, w))
        return argv
    if program == "fbt inspect":
        return [args.fbt, "inspect", args.bundle]
    if program == "fbt devices":
        return [args.fbt, "devices"]
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("readme")
    ap.add_argument("--root", required=True)
    ap.add_argument("--build", required=True, help="the build folder (its tools/)")
    ap.add_argument("--bundle", required=True, help="a compiled bundle, for M.fbtb")
    args = ap.parse_args()
    args.fbt = os.path.join(args.build, "tools", "fbt", "fbt")
    args.fbtc = os.path.join(args.build, "tools", "fbtc", "fbtc")
    args.fbt_opt = os.path.join(args.build, "tools", "fbt-opt", "fbt-opt")

    problems, checked, options, ran, cache = [], 0, 0, 0, {}
    for n, text in commands(args.readme):
        try:
            words = shlex.split(text, comments=False)
        except ValueError:
            words = text.split()
        words = [w for w in words if w not in ("&", "&&")]
        found = program_of(words)
        if not found:
            continue
        program, rest = found
        where = "README.md:%d: %s" % (n, text)
        if not (program.startswith("fbt") or os.path.exists(os.path.join(args.root, program))):
            if program.startswith(("scripts/", "bench/", "test/")):
                problems.append("%s: no such file %s" % (where, program))
            continue
        checked += 1
        help_out = help_text(program, args, cache)
        if help_out is None:
            continue
        if program.startswith("fbt ") and "unknown command" in help_out:
            problems.append("%s: fbt has no command '%s'" % (where, program.split()[1]))
            continue
        for opt in options_of(rest):
            options += 1
            if not re.search(re.escape(opt) + r"(?![a-z0-9-])", help_out):
                problems.append("%s: %s --help does not list %s" % (where, program, opt))
        argv = runnable(program, rest, args)
        if argv:
            r = subprocess.run(argv, capture_output=True, text=True, timeout=120)
            ran += 1
            if r.returncode not in ((0, 1) if program == "fbt devices" else (0,)):
                problems.append("%s: exit %d: %s" % (where, r.returncode,
                                                     (r.stderr or r.stdout).strip()[:200]))
    # `fbt --threads N COMMAND`, as the tools table says.
    r = subprocess.run([args.fbt, "--threads", "1", "inspect", args.bundle],
                       capture_output=True, text=True, timeout=60)
    ran += 1
    if r.returncode != 0:
        problems.append("fbt --threads 1 inspect: exit %d: %s" % (r.returncode, r.stderr.strip()))
    for p in problems:
        print(p)
    print("%d commands checked, %d options, %d run, %d problems" % (
        checked, options, ran, len(problems)))
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
