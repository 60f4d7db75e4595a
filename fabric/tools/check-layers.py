#!/usr/bin/env python3
"""Checks that the folders stay the architecture (docs/architecture.md).

Each folder's CMakeLists.txt declares its library with ethx_library(NAME DEPENDS ...). This
script reads those declarations and then every #include "..." in the folder's C/C++ files:
an include may name a header of the same folder, or of a folder whose library is reached
through DEPENDS (transitively). A program (*_main.cpp) may also reach what its executable
links. Nobody includes a .cpp or another folder's *_internal header.

  fabric/tools/check-layers.py          exit 0 when clean; else one line per violation
"""
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SKIP = {"tests", "docs", "cmake", ".git", ".ci"}
LIBRARY = re.compile(r"ethx_library\(\s*(\w+)((?:\s+DEPENDS)?[^)]*)\)", re.S)
EXECUTABLE = re.compile(r"target_link_libraries\(\s*([\w-]+)\s+PRIVATE([^)]*)\)", re.S)
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def read_folders():
    """Folder -> (library name, direct ethx_* dependencies, {executable: deps})."""
    folders = {}
    for dirpath, dirnames, filenames in os.walk(ROOT):
        rel = os.path.relpath(dirpath, ROOT)
        dirnames[:] = [d for d in dirnames if d not in SKIP and not d.startswith("build")]
        if "CMakeLists.txt" not in filenames or rel == ".":
            continue
        text = open(os.path.join(dirpath, "CMakeLists.txt")).read()
        text = re.sub(r"#[^\n]*", "", text)
        match = LIBRARY.search(text)
        if not match:
            continue
        deps = [d for d in match.group(2).split() if d.startswith("ethx_") and d != "ethx_warnings"]
        programs = {m.group(1): [d for d in m.group(2).split() if d.startswith("ethx_")]
                    for m in EXECUTABLE.finditer(text) if m.group(1) != match.group(1)}
        folders[rel] = (match.group(1), deps, programs)
    return folders


def reachable(start, graph):
    seen, todo = set(), list(start)
    while todo:
        lib = todo.pop()
        if lib in seen or lib not in graph:
            continue
        seen.add(lib)
        todo.extend(graph[lib])
    return seen


def owner_folder(header, folders):
    folder = os.path.dirname(header)
    return folder if folder in folders else None


def check():
    folders = read_folders()
    graph = {lib: deps for lib, deps, _ in folders.values()}
    folder_of = {lib: folder for folder, (lib, _, _) in folders.items()}
    problems = []
    for folder, (lib, deps, programs) in sorted(folders.items()):
        library_reach = {folder_of[l] for l in reachable(deps, graph) if l in folder_of}
        program_deps = [d for ds in programs.values() for d in ds]
        program_reach = {folder_of[l] for l in reachable(program_deps, graph) if l in folder_of}
        for name in sorted(os.listdir(os.path.join(ROOT, folder))):
            if not re.search(r"\.(c|h|cpp|hpp)$", name):
                continue
            path = os.path.join(folder, name)
            allowed = library_reach | (program_reach if name.endswith("_main.cpp") else set())
            for header in INCLUDE.findall(open(os.path.join(ROOT, path)).read()):
                target = owner_folder(header, folders)
                if header.endswith(".cpp"):
                    problems.append(f"{path}: includes a source file, {header}")
                elif target is None or target == folder:
                    continue
                elif header.endswith("_internal.hpp"):
                    problems.append(f"{path}: includes {header}, internal to {target}")
                elif target not in allowed:
                    problems.append(f"{path}: includes {header}, but {lib} does not depend on "
                                    f"{folders[target][0]} ({target})")
    return problems


def main():
    problems = check()
    for line in problems:
        print(line)
    if problems:
        print(f"check-layers: {len(problems)} include(s) cross the layers", file=sys.stderr)
        return 1
    print("check-layers: every include points down", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
