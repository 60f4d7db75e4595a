#!/usr/bin/env python3
"""Copies chosen kernel modules and their dependencies out of a Debian linux-image package.

The package ships no modules.dep (depmod runs at install time, and it is never installed on
the host), so the dependencies are read from each module's .modinfo "depends=" field. Writes
  OUTDIR/modules.dep.all                  every module of the package, depmod's format
  OUTDIR/lib/modules/KVER/...             the chosen modules with their dependencies
  OUTDIR/lib/modules/KVER/modules.dep     the same, for busybox modprobe in the guest

  kernel-modules.py DEB OUTDIR MODULE...
"""
import os
import re
import subprocess
import sys
import tarfile

MODULE_PATH = re.compile(r"^\./lib/modules/([^/]+)/(kernel/.+\.ko)$")


def module_name(path: str) -> str:
    # Module names treat '-' and '_' alike; files and depends= mix both spellings.
    return os.path.basename(path)[: -len(".ko")].replace("-", "_")


def package_tar(deb: str):
    # dpkg-deb knows every compression Debian uses for data.tar; tarfile reads the stream.
    proc = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", deb], stdout=subprocess.PIPE)
    return proc, tarfile.open(fileobj=proc.stdout, mode="r|")


def read_dependencies(deb: str):
    kver, paths, depends = None, {}, {}
    proc, tar = package_tar(deb)
    for member in tar:
        match = MODULE_PATH.match(member.name)
        if not match or not member.isfile():
            continue
        kver, path = match.group(1), match.group(2)
        name = module_name(path)
        paths[name] = path
        found = re.search(rb"\0depends=([^\0]*)\0", b"\0" + tar.extractfile(member).read())
        listed = found.group(1).decode().split(",") if found else []
        depends[name] = [module_name(d + ".ko") for d in listed if d]
    tar.close()
    proc.wait()
    if kver is None:
        raise SystemExit(f"kernel-modules.py: no modules in {deb}")
    return kver, paths, depends


def load_order(wanted, paths, depends):
    """Dependencies before their users (post-order); unknown names are an error."""
    order, seen = [], set()

    def visit(name):
        if name in seen:
            return
        seen.add(name)
        if name not in paths:
            raise SystemExit(f"kernel-modules.py: no module named {name} in the package")
        for dep in depends[name]:
            visit(dep)
        order.append(name)

    for name in wanted:
        visit(name.replace("-", "_"))
    return order


def dep_line(name, paths, depends):
    # depmod lists a module's dependencies users first; modprobe loads the list backwards.
    closure = [n for n in load_order([name], paths, depends) if n != name]
    return f"{paths[name]}: " + " ".join(paths[n] for n in reversed(closure))


def main() -> None:
    if len(sys.argv) < 3:
        raise SystemExit(__doc__.strip().splitlines()[-1].strip())
    deb, outdir, wanted = sys.argv[1], sys.argv[2], sys.argv[3:]
    kver, paths, depends = read_dependencies(deb)
    os.makedirs(outdir, exist_ok=True)
    with open(os.path.join(outdir, "modules.dep.all"), "w") as f:
        for name in sorted(paths, key=lambda n: paths[n]):
            f.write(dep_line(name, paths, depends).rstrip() + "\n")

    chosen = load_order(wanted, paths, depends)
    moddir = os.path.join(outdir, "lib", "modules", kver)
    os.makedirs(moddir, exist_ok=True)
    with open(os.path.join(moddir, "modules.dep"), "w") as f:
        for name in chosen:
            f.write(dep_line(name, paths, depends).rstrip() + "\n")
    wanted_paths = {"./lib/modules/%s/%s" % (kver, paths[n]) for n in chosen}
    proc, tar = package_tar(deb)
    for member in tar:
        if member.name in wanted_paths:
            target = os.path.join(outdir, member.name[2:])
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(target, "wb") as f:
                f.write(tar.extractfile(member).read())
    tar.close()
    proc.wait()
    print(" ".join(chosen))


if __name__ == "__main__":
    main()
