#!/usr/bin/env python3
"""test_layout.py — the shape of the source tree, checked from the code itself.

    test_layout.py ROOT OBJECT.o...     (the library's object files, from CMake)

A "room" is a .c file with its own header X.h and X_internal.h beside it; a header
without a .c of its name is a room of its own. An arrow goes from room A to room B when a
file of A includes a header of B, or when A's object file uses a function or variable
that B's object file defines (nm). Checked:
  1. no cycle of arrows between rooms (no two files include or call each other in a loop);
  2. no folder holds more than 20 .c files;
  3. no #include names a path with "..": include directories come from CMake;
  4. a header declares only functions its own .c defines, and a header without a .c
     declares none (include/ember.h, the public API, is the exception; a platform/ file
     built into the programs alone, PROGRAM_ONLY, is checked for the rest only);
  5. tools/ includes no platform/ header but the operating system's (platform/os_*.h): it
     reaches devices through include/ember.h, and the system through the same door as
     the library, so that nothing outside platform/ knows which system it runs on;
  6. no file outside platform/ asks the preprocessor which system or toolchain it is built
     for (_WIN32, __linux__, __APPLE__, _MSC_VER, __MINGW*, ...), in the library, the
     programs, the server, the demo, the examples or the tests; include/ember.h alone
     does, for its Windows export declarations.
Prints what is wrong and exits 1; prints a summary and exits 0 when all hold."""
import os
import re
import subprocess
import sys
from collections import defaultdict

LIB_DIRS = ("common", "engine", "platform")
MAX_C_PER_DIR = 20
# platform/ files built into the programs, not the library (CMakeLists.txt): rule 4 cannot
# see their definitions in the library's objects.
PROGRAM_ONLY = {"platform/os_main.c"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
# A function declaration at file scope: starts in column 0 with a type, names ember_*.
# A preprocessor condition on the system or the toolchain (rule 6).
SYSTEM_TEST = re.compile(r"^\s*#\s*(?:if|ifdef|ifndef|elif)\b.*\b(_WIN32|_WIN64|__linux__|__APPLE__|__unix__|"
                         r"_MSC_VER|__MINGW\w*|__CYGWIN__|__FreeBSD__|__ANDROID__)\b", re.M)
SYSTEM_DIRS = LIB_DIRS + ("tools", "server", "demo", "examples", "tests", "bench")
SYSTEM_ALLOWED = ("platform/", "include/ember.h")
DECL = re.compile(r"^(?!typedef|static|extern\s+\"C\"|#|\s)[A-Za-z_][\w\s\*]*?\b(ember_\w+)\s*\(", re.M)


def source_files(root, dirs):
    for d in dirs:
        for dirpath, _, files in os.walk(os.path.join(root, d)):
            for f in sorted(files):
                if f.endswith((".c", ".h")):
                    yield os.path.relpath(os.path.join(dirpath, f), root)


def room_of(path, root):
    """The .c file a header belongs to, or the file itself."""
    if path.endswith(".c"):
        return path
    base = path[:-2]
    if base.endswith("_internal"):
        base = base[: -len("_internal")]
    return base + ".c" if os.path.exists(os.path.join(root, base + ".c")) else path


def resolve(root, including, name):
    """Where a quoted include points: beside the including file, else from the root."""
    for cand in (os.path.join(os.path.dirname(including), name), name):
        if os.path.exists(os.path.join(root, cand)):
            return os.path.normpath(cand)
    return None


def nm_symbols(obj):
    out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[0] == "U":
            used.add(parts[1])
        elif len(parts) == 3 and parts[1] in "TDBR":
            defined.add(parts[2])
    return defined, used


def source_of_object(obj, root):
    """CMake names objects CMakeFiles/<target>.dir/<source path>.o."""
    path = obj.replace(os.sep, "/")
    for d in LIB_DIRS:
        i = path.find("/" + d + "/")
        if i >= 0 and path.endswith(".c.o"):
            return path[i + 1 : -2]
    return None


def find_cycles(edges):
    """Strongly connected components of more than one room (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    nodes = sorted(set(edges) | {b for bs in edges.values() for b in bs})
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def main(argv):
    root, objects = argv[1], argv[2:]
    problems = []
    files = list(source_files(root, LIB_DIRS + ("tools",)))
    edges, why = defaultdict(set), {}

    def arrow(a, b, reason):
        if a != b:
            edges[a].add(b)
            why.setdefault((a, b), reason)

    for f in files:
        text = open(os.path.join(root, f), encoding="utf-8").read()
        for name in INCLUDE.findall(text):
            if ".." in name.split("/"):
                problems.append(f"{f}: #include \"{name}\" climbs out with ..")
            target = resolve(root, f, name)
            if target is None:
                continue  # generated (ember_shaders.h) or public (ember.h)
            if f.startswith("tools/") and target.startswith("platform/") and not target.startswith("platform/os_"):
                problems.append(f"{f}: includes {target}; tools reach devices through include/ember.h")
            arrow(room_of(f, root), room_of(target, root), f"includes {target}")

    defined_by, uses = {}, {}
    for obj in objects:
        src = source_of_object(obj, root)
        if src is None or not os.path.exists(os.path.join(root, src)):
            continue  # not a library object, or a stale one from a moved source
        defined, used = nm_symbols(obj)
        uses[src] = used
        for s in defined:
            defined_by[s] = src
    for src, used in uses.items():
        for s in sorted(used):
            if s in defined_by:
                arrow(src, defined_by[s], f"calls {s}")

    for comp in find_cycles(edges):
        lines = [f"  {a} -> {b}: {why[(a, b)]}" for a in comp for b in sorted(edges[a]) if b in comp]
        problems.append("cycle between " + ", ".join(comp) + ":\n" + "\n".join(lines))

    for f in source_files(root, SYSTEM_DIRS + ("include",)):
        if f.startswith(SYSTEM_ALLOWED):
            continue
        text = open(os.path.join(root, f), encoding="utf-8", errors="replace").read()
        for m in SYSTEM_TEST.finditer(text):
            line = text.count("\n", 0, m.start()) + 1
            problems.append(f"{f}:{line}: tests for the system ({m.group(1)}); only platform/ may")

    per_dir = defaultdict(int)
    for f in files:
        if f.endswith(".c"):
            per_dir[os.path.dirname(f)] += 1
    for d, n in sorted(per_dir.items()):
        if n > MAX_C_PER_DIR:
            problems.append(f"{d}/ holds {n} .c files (at most {MAX_C_PER_DIR})")

    n_headers = 0
    for f in files:
        if not f.endswith(".h") or f.startswith("tools/"):
            continue
        n_headers += 1
        text = open(os.path.join(root, f), encoding="utf-8").read()
        own = room_of(f, root)
        for name in DECL.findall(text):
            if not own.endswith(".c"):
                problems.append(f"{f}: declares {name}() but has no .c of its own")
            elif uses and own not in PROGRAM_ONLY and defined_by.get(name) != own:
                where = defined_by.get(name, "nowhere")
                problems.append(f"{f}: declares {name}(), defined in {where}, not {own}")

    for p in problems:
        print("test_layout: " + p)
    rooms = {room_of(f, root) for f in files}
    print(f"test_layout: {len(rooms)} rooms, {sum(len(v) for v in edges.values())} arrows, "
          f"{len(uses)} objects, {n_headers} headers, {len(per_dir)} folders; {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
