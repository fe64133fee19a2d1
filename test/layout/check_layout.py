#!/usr/bin/env python3
"""Checks the rooms of the runtime and of the compiler: the includes run one
way, and each room stays small.

  check_layout.py SOURCE_ROOT ROOMS_TXT...

Each ROOMS_TXT is what CMake wrote (runtime/CMakeLists.txt's
fbt_runtime_room(), cmake/CompilerRooms.cmake's fbt_compiler_room()): one
"room: dep dep" line per room, by its path from the source root, in the order
the rooms were defined. A file in a room may include another room's headers
only when its room builds on that room, directly or through another. Apart
from that rule, the compiler (dialect, frontend, passes, codegen, driver,
fbtc, fbt-opt) may include the runtime's base and format rooms only, and the
runtime includes no LLVM or MLIR. Every source file under runtime/ and the
compiler's folders lives in a room, and no room holds more than MAX_SOURCES .cpp files.
Within the compiler and the runtime no two files depend on each other,
through any others: a file's unit (X.h with X.cpp) depends on each unit whose
header either includes, and that graph has no cycle (but for ALLOWED_CYCLES).
Prints one line per violation (file:line: what) and exits 1 if there is any.
"""
import os
import re
import sys

MAX_SOURCES = 12
COMPILER_TOPS = ("dialect", "frontend", "passes", "codegen", "driver")
TOPS = ("runtime",) + COMPILER_TOPS  # the trees made of rooms
COMPILER = list(COMPILER_TOPS) + ["tools/fbtc", "tools/fbt-opt"]
COMPILER_MAY_USE = {"runtime/base", "runtime/format"}
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^">]+)[">]')
# MLIR's own pattern: a dialect's initialize() registers the ops, whose
# classes name the dialect (mlir/examples/standalone does the same).
ALLOWED_CYCLES = [{"dialect/FbtDialect", "dialect/FbtOps"}]


def read_rooms(paths):
    rooms = {}
    for path in paths:
        with open(path) as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                name, _, deps = line.partition(":")
                for d in deps.split():
                    if d not in rooms:
                        sys.exit(f"{path}:{n}: room {name} builds on {d}, which is not "
                                 "defined before it")
                rooms[name] = set(deps.split())
    closure = {}
    for name, deps in rooms.items():  # definition order: deps come first
        seen = {name}
        for d in deps:
            seen |= closure[d]
        closure[name] = seen
    return closure


def room_of(rel, rooms):
    """The room of the file at `rel` (from the root): its longest room prefix."""
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
                yield os.path.relpath(os.path.join(dirpath, f), root)


def includes(root, rel):
    with open(os.path.join(root, rel), errors="replace") as f:
        for n, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m:
                yield n, m.group(1)


def top(path):
    return path.split("/", 1)[0]


def unit_cycles(root):
    """One error per include cycle among the units of the rooms' trees."""
    uses = {}
    for t in TOPS:
        if not os.path.isdir(os.path.join(root, t)):
            continue
        for rel in sources(root, t):
            unit = os.path.splitext(rel)[0]
            for n, inc in includes(root, rel):
                used = os.path.splitext(inc)[0]
                if top(inc) in TOPS and used != unit:
                    uses.setdefault(unit, {}).setdefault(used, f"{rel}:{n}")
    errors, state, path = [], {}, []

    def visit(unit):
        state[unit] = "open"
        path.append(unit)
        for used, where in sorted(uses.get(unit, {}).items()):
            if state.get(used) == "open":
                cycle = path[path.index(used):]
                if set(cycle) not in ALLOWED_CYCLES:
                    errors.append(f"{where}: an include cycle: {' -> '.join(cycle + [used])}")
            elif used not in state:
                visit(used)
        path.pop()
        state[unit] = "done"

    for unit in sorted(uses):
        if unit not in state:
            visit(unit)
    return errors


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    root = sys.argv[1]
    rooms = read_rooms(sys.argv[2:])
    errors = []
    counts = {}
    for t in TOPS:
        if not os.path.isdir(os.path.join(root, t)):
            continue  # a test's tree need not have every folder
        for rel in sources(root, t):
            room = room_of(rel, rooms)
            if room is None:
                errors.append(f"{rel}: not in any room ({t}/CMakeLists.txt)")
                continue
            if os.path.dirname(rel) == room and rel.endswith(".cpp"):
                counts[room] = counts.get(room, 0) + 1
            for n, inc in includes(root, rel):
                if t == "runtime" and inc.startswith(("llvm/", "mlir/")):
                    errors.append(f"{rel}:{n}: the runtime includes no LLVM or MLIR ({inc})")
                if top(inc) not in TOPS:
                    continue
                target = room_of(inc, rooms)
                if t in COMPILER_TOPS and top(inc) == "runtime":
                    continue  # the compiler's rule, below
                if target is None:
                    errors.append(f"{rel}:{n}: includes {inc}, which is in no room")
                elif target not in rooms[room]:
                    errors.append(f"{rel}:{n}: room {room} includes {inc} from room {target}, "
                                  f"which it does not build on (it builds on: "
                                  f"{', '.join(sorted(rooms[room] - {room})) or 'nothing'})")
    for room, count in sorted(counts.items()):
        if count > MAX_SOURCES:
            errors.append(f"{room}: {count} source files, more than {MAX_SOURCES}: "
                          "split it into rooms")
    for t in COMPILER:
        for rel in sources(root, t):
            for n, inc in includes(root, rel):
                if top(inc) == "runtime" and room_of(inc, rooms) not in COMPILER_MAY_USE:
                    errors.append(f"{rel}:{n}: the compiler includes {inc}; it may use only "
                                  f"{' and '.join(sorted(COMPILER_MAY_USE))}")
    errors += unit_cycles(root)
    for e in errors:
        print(e)
    if errors:
        return 1
    print(f"layout: {len(rooms)} rooms, includes one way, no include cycle")
    return 0


if __name__ == "__main__":
    sys.exit(main())
