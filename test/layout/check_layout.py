#!/usr/bin/env python3
"""Checks the runtime's rooms: the includes run one way, and each room stays small.

  check_layout.py ROOMS_TXT SOURCE_ROOT

ROOMS_TXT is what CMake's fbt_runtime_room() wrote (one "room: dep dep" line
per room, in the order they were defined; runtime/CMakeLists.txt). A file in
runtime/<room>/ may include "runtime/<other>/..." only when <other> is the
room itself or one it builds on, directly or through another. The
compiler (dialect, frontend, passes, codegen, fbtc, fbt-opt) may include the
runtime's base and format rooms only; the runtime includes no LLVM or MLIR.
Every file under runtime/ lives in a room, and no room holds more than
MAX_SOURCES .cpp files. Prints one line per violation (file:line: what) and
exits 1 if there is any.
"""
import os
import re
import sys

MAX_SOURCES = 12
COMPILER = ["dialect", "frontend", "passes", "codegen", "tools/fbtc", "tools/fbt-opt"]
COMPILER_MAY_USE = {"base", "format"}
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]')


def read_rooms(path):
    rooms = {}
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            name, _, deps = line.partition(":")
            deps = deps.split()
            for d in deps:
                if d not in rooms:
                    sys.exit(f"{path}:{n}: room {name} builds on {d}, which is not defined before it")
            rooms[name] = deps
    closure = {}
    for name, deps in rooms.items():  # definition order: deps come first
        seen = {name}
        for d in deps:
            seen |= closure[d]
        closure[name] = seen
    return closure


def room_of(rel, rooms):
    """The room of runtime/<rel>: its longest room prefix, or None."""
    folder = os.path.dirname(rel)
    while folder:
        if folder in rooms:
            return folder
        folder = os.path.dirname(folder)
    return None


def sources(root, top):
    for dirpath, _, files in os.walk(os.path.join(root, top)):
        for f in sorted(files):
            if f.endswith((".h", ".cpp", ".in")):
                yield os.path.join(dirpath, f)


def includes(path):
    with open(path, errors="replace") as f:
        for n, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m:
                yield n, m.group(1)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    rooms = read_rooms(sys.argv[1])
    root = sys.argv[2]
    errors = []
    counts = {}
    for path in sources(root, "runtime"):
        rel = os.path.relpath(path, os.path.join(root, "runtime"))
        room = room_of(rel, rooms)
        shown = os.path.relpath(path, root)
        if room is None:
            errors.append(f"{shown}: not in any room of the runtime (runtime/CMakeLists.txt)")
            continue
        if os.path.dirname(rel) == room and path.endswith(".cpp"):
            counts[room] = counts.get(room, 0) + 1
        for n, inc in includes(path):
            if inc.startswith(("llvm/", "mlir/")):
                errors.append(f"{shown}:{n}: the runtime includes no LLVM or MLIR ({inc})")
            if not inc.startswith("runtime/"):
                continue
            target = room_of(inc[len("runtime/"):], rooms)
            if target is None:
                errors.append(f"{shown}:{n}: includes {inc}, which is in no room")
            elif target not in rooms[room]:
                errors.append(f"{shown}:{n}: room {room} includes {inc} from room {target}, "
                              f"which it does not build on (it builds on: "
                              f"{', '.join(sorted(rooms[room] - {room})) or 'nothing'})")
    for room, count in sorted(counts.items()):
        if count > MAX_SOURCES:
            errors.append(f"runtime/{room}: {count} source files, more than {MAX_SOURCES}: "
                          "split it into rooms")
    for top in COMPILER:
        for path in sources(root, top):
            for n, inc in includes(path):
                if not inc.startswith("runtime/"):
                    continue
                target = room_of(inc[len("runtime/"):], rooms)
                if target not in COMPILER_MAY_USE:
                    errors.append(f"{os.path.relpath(path, root)}:{n}: the compiler includes "
                                  f"{inc}; it may use only the runtime's "
                                  f"{' and '.join(sorted(COMPILER_MAY_USE))} rooms")
    for e in errors:
        print(e)
    if errors:
        return 1
    print(f"layout: {len(rooms)} rooms, includes one way")
    return 0


if __name__ == "__main__":
    sys.exit(main())
