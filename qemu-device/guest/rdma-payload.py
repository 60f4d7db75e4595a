#!/usr/bin/env python3
"""Copies dynamically linked programs and their shared-library closure into an initramfs tree.

ROOT is a directory where Debian packages were unpacked with `dpkg-deb -x` (never installed on
the host). Every program and every extra file is copied to the same path under STAGING; for
each ELF file the NEEDED entries (read with `readelf -d`) are looked up in ROOT's library
directories, copied, and followed in turn, so the guest needs nothing the host provides. The
dynamic loader comes along (its /lib64 path and the file it points to). A library that no
unpacked package provides is an error naming it and the file that needs it.

  rdma-payload.py ROOT STAGING FILE...    FILE: a path relative to ROOT (program, provider,
                                          config file), or ABS=REL to copy an absolute host
                                          path (a tool built on the host) to STAGING/REL
Prints the copied paths (relative to STAGING), one a line.
"""
import os
import shutil
import subprocess
import sys

LIBRARY_DIRS = ["lib/x86_64-linux-gnu", "usr/lib/x86_64-linux-gnu", "lib", "usr/lib"]
LOADER = "lib64/ld-linux-x86-64.so.2"


def needed(path: str):
    out = subprocess.run(["readelf", "-d", path], capture_output=True, text=True)
    if out.returncode != 0:
        return []  # not an ELF file (a config file, a script)
    libs = []
    for line in out.stdout.splitlines():
        if "(NEEDED)" in line and "[" in line:
            libs.append(line.split("[", 1)[1].split("]", 1)[0])
    return libs


def copy(root: str, staging: str, rel: str, copied: list) -> str:
    """Copies ROOT/rel (following symlinks to the real file, keeping the link too)."""
    src = os.path.join(root, rel)
    dst = os.path.join(staging, rel)
    if rel in copied:
        return dst
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    if os.path.islink(src):
        target = os.readlink(src)
        if os.path.lexists(dst):
            os.remove(dst)
        os.symlink(target, dst)
        copied.append(rel)
        resolved = os.path.normpath(
            target.lstrip("/") if os.path.isabs(target) else os.path.join(os.path.dirname(rel), target))
        copy(root, staging, resolved, copied)
        return dst
    if not os.path.isfile(src):
        raise SystemExit(f"rdma-payload.py: {rel} is not in the unpacked packages ({root})")
    if os.path.lexists(dst):
        os.remove(dst)  # e.g. a busybox applet link: never write through it
    shutil.copy2(src, dst)
    copied.append(rel)
    return dst


def main() -> None:
    if len(sys.argv) < 4:
        raise SystemExit(__doc__.strip().splitlines()[-3].strip())
    root, staging, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    copied: list = []
    queue = []
    for item in files:
        if "=" in item:
            src, rel = item.split("=", 1)
            dst = os.path.join(staging, rel)
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            if os.path.lexists(dst):
                os.remove(dst)
            shutil.copy2(src, dst)
            copied.append(rel)
            queue.append((src, rel))
        else:
            copy(root, staging, item, copied)
            queue.append((os.path.join(root, item), item))
    copy(root, staging, LOADER, copied)
    seen = set()
    while queue:
        path, rel = queue.pop()
        for lib in needed(path):
            if lib in seen:
                continue
            seen.add(lib)
            for directory in LIBRARY_DIRS:
                candidate = os.path.join(directory, lib)
                if os.path.lexists(os.path.join(root, candidate)):
                    copy(root, staging, candidate, copied)
                    queue.append((os.path.realpath(os.path.join(root, candidate)), candidate))
                    break
            else:
                raise SystemExit(
                    f"rdma-payload.py: {lib} (needed by {rel}) is in none of the unpacked "
                    f"packages; add its package to the list in build-guest-image.sh")
    for rel in copied:
        print(rel)


if __name__ == "__main__":
    main()
