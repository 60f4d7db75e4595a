#!/usr/bin/env bash
# Builds qemu-system-x86_64 from Debian's QEMU source package with the ethx-gpu device added.
#
# The QEMU tree is fetched at build time (never committed) and cached outside the repository,
# per machine: ${ETHX_CACHE:-$HOME/.cache/ethx}/qemu-<version>/. A second run only recompiles
# the device and relinks (the device sources are symlinked into the tree).
#
#   qemu-device/build-qemu.sh            build (or update) and print the binary's path
#   qemu-device/build-qemu.sh --clean    remove the cached tree first
set -euo pipefail

# The upstream version, pinned here only; Debian's revision suffix changes with point releases
# and old revisions leave the archive, so the newest bookworm revision of it is taken.
QEMU_UPSTREAM_VERSION="7.2"

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cache="${ETHX_CACHE:-$HOME/.cache/ethx}/qemu-${QEMU_UPSTREAM_VERSION}"
jobs="$(nproc)"
say() { printf '==> qemu: %s\n' "$*" >&2; }
die() { printf 'qemu-device/build-qemu.sh: %s\n' "$*" >&2; exit 1; }

[ "${1:-}" = "--clean" ] && { say "removing $cache"; rm -rf "$cache"; }
mkdir -p "$cache"

# Build dependencies, named so a missing one fails here with its name, not deep in meson.
# libcap-ng-dev and libattr1-dev: virtio-9p (-virtfs, the guests' shared root) needs both.
needed=(dpkg-dev meson ninja-build pkg-config libglib2.0-dev libpixman-1-dev flex bison
        libslirp-dev libfdt-dev python3-venv qemu-system-data seabios ipxe-qemu
        libcap-ng-dev libattr1-dev)
missing=()
for pkg in "${needed[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  say "installing build dependencies: ${missing[*]}"
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null ||
    die "cannot install: ${missing[*]} (apt-get failed)"
fi

src="$cache/src"
if [ ! -f "$src/configure" ]; then
  # A private deb-src list: the system's apt sources stay untouched.
  lists="$cache/apt-lists"; mkdir -p "$lists/partial"
  srclist="$cache/deb-src.list"
  echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main" > "$srclist"
  # Sandbox::User=root: the cache is root-owned; the archive keyring still checks every file.
  apt_opts=(-o "Dir::Etc::sourcelist=$srclist" -o "Dir::Etc::sourceparts=-"
            -o "Dir::State::Lists=$lists" -o "APT::Sandbox::User=root")
  say "fetching Debian's qemu source package (bookworm, ${QEMU_UPSTREAM_VERSION}.x)"
  apt-get "${apt_opts[@]}" update -qq || die "apt-get update of the deb-src list failed"
  version="$(apt-cache "${apt_opts[@]}" showsrc qemu | awk '/^Version:/ {print $2}' |
             grep -E "^1:${QEMU_UPSTREAM_VERSION//./\\.}" | sort -V | tail -n 1)"
  [ -n "$version" ] || die "no qemu ${QEMU_UPSTREAM_VERSION} source in bookworm"
  (cd "$cache" && apt-get "${apt_opts[@]}" source --download-only -qq "qemu=$version") ||
    die "downloading qemu=$version failed"
  say "unpacking qemu $version"
  rm -rf "$src"
  (cd "$cache" && dpkg-source -x qemu_*.dsc "$src" >/dev/null)  # with Debian's patches
  [ -f "$src/configure" ] || die "unpacked tree has no configure script"
fi

# The device links ethx's C API and the libraries under it: one archive and a file of linker
# flags from ethx's own CMake build (target ethx_device_archive), which must come first.
ethx_build="${ETHX_BUILD_DIR:-$repo/build}"
device_lib="$ethx_build/lib"
[ -f "$device_lib/libethx_device.a" ] && [ -f "$device_lib/ethx_device_link.txt" ] ||
  die "$device_lib/libethx_device.a is missing: build ethx first (fabric/tools/setup.sh build, or cmake --build build --target ethx_device_archive; ETHX_BUILD_DIR names another build tree)"

# Hook the device in (idempotent): its sources are symlinked so edits only recompile it.
ln -sf "$repo/qemu-device/qemu/ethx_gpu.c" "$src/hw/misc/ethx_gpu.c"
ln -sf "$repo/qemu-device/host/ethx_gpu_api.h" "$src/hw/misc/ethx_gpu_api.h"
ln -sf "$repo/qemu-device/ethx_gpu_regs.h" "$src/hw/misc/ethx_gpu_regs.h"  # the register map
ln -sfn "$device_lib" "$src/hw/misc/ethx-device"
grep -q "ETHX_GPU" "$src/hw/misc/Kconfig" ||
  printf '\nconfig ETHX_GPU\n    bool\n    default y if PCI_DEVICES\n    depends on PCI\n' >> "$src/hw/misc/Kconfig"
if ! grep -q "ethx_device_dep" "$src/hw/misc/meson.build"; then
  sed -i "/ethx_gpu.c/d" "$src/hw/misc/meson.build"  # the first stage's hook, without the library
  cat >> "$src/hw/misc/meson.build" <<'MESON'
ethx_device_flags = run_command('cat', meson.current_source_dir() / 'ethx-device' / 'ethx_device_link.txt', check: true).stdout().strip().split()
ethx_device_dep = declare_dependency(link_args: [meson.current_source_dir() / 'ethx-device' / 'libethx_device.a'] + ethx_device_flags)
softmmu_ss.add(when: 'CONFIG_ETHX_GPU', if_true: [files('ethx_gpu.c'), ethx_device_dep])
MESON
fi

build="$src/build"
# Minimal features plus virtio-9p: the guests boot into the host's root over -virtfs
# (docs/guest-image.md), which needs attr (xattr) and cap-ng in QEMU 7.2.
configure_flags=(--target-list=x86_64-softmmu --disable-docs --disable-werror
                 --without-default-features --enable-kvm --enable-tcg --enable-slirp
                 --enable-virtfs --enable-attr --enable-cap-ng)
# A cache configured with other flags (an older build-qemu.sh) is reconfigured: meson keeps
# its options in the build directory, so a changed flag list would otherwise be ignored.
flags_stamp="$cache/configure-flags.stamp"
if [ -f "$build/build.ninja" ] && [ "$(cat "$flags_stamp" 2>/dev/null)" != "${configure_flags[*]}" ]; then
  say "configure flags changed: reconfiguring (a full rebuild)"
  rm -rf "$build"
fi
if [ ! -f "$build/build.ninja" ]; then
  say "configuring (x86_64-softmmu, TCG and KVM, minimal features, virtfs)"
  mkdir -p "$build"
  (cd "$build" && ../configure "${configure_flags[@]}" >/dev/null) ||
    die "configure failed; see $build/meson-logs/meson-log.txt"
  echo "${configure_flags[*]}" > "$flags_stamp"
fi
# ninja does not see the archive (it is a link argument): relink whenever the archive is not
# the one the binary was linked with (another checkout sharing this cache, or a rebuild).
archive="$(readlink -f "$device_lib/libethx_device.a")"
stamp="$archive $(stat -c %Y "$archive")"
if [ -f "$build/qemu-system-x86_64" ] && [ "$(cat "$cache/ethx-device.stamp" 2>/dev/null)" != "$stamp" ]; then
  rm -f "$build/qemu-system-x86_64"
fi
say "building qemu-system-x86_64 with $jobs jobs (first build: several minutes)"
if ! ninja -C "$build" -j "$jobs" qemu-system-x86_64 2>&1 | tee "$cache/build.log" |
     awk '/^\[[0-9]+\/[0-9]+\]/ && NR % 200 == 1 {print "==> qemu: " $1; fflush()}' >&2; then
  die "build failed; the log is $cache/build.log"
fi
echo "$stamp" > "$cache/ethx-device.stamp"
devices="$("$build/qemu-system-x86_64" -device help 2>/dev/null)"
grep -q '"ethx-gpu"' <<< "$devices" ||
  die "the built QEMU has no ethx-gpu device (Kconfig hook not applied?)"
# Guest NICs (ethx up --vms --guest-nics, docs/softroce.md): a tap netdev (always built on
# Linux, even with --without-default-features) and the NIC models, which the q35 machine's
# Kconfig pulls in (PCI_DEVICES).
say "checking the guest NIC pieces: tap netdev, virtio-net-pci, e1000"
"$build/qemu-system-x86_64" -netdev help 2>/dev/null | grep -qx 'tap' ||
  die "the built QEMU has no tap netdev; guest NICs need it (configure: --enable-tap or a Linux host)"
for nic in virtio-net-pci e1000; do
  grep -q "\"$nic\"" <<< "$devices" ||
    die "the built QEMU has no $nic device; guest NICs need it (Kconfig: CONFIG_VIRTIO_NET / CONFIG_E1000_PCI)"
done
# The guests' shared root (vm_plan.cpp: -virtfs) and the guest agent's channels (virtio-serial).
say "checking virtio-9p (-virtfs) and virtio-serial"
for dev in virtio-9p-pci virtio-serial-pci virtserialport; do
  grep -q "\"$dev\"" <<< "$devices" ||
    die "the built QEMU has no $dev device (configure: --enable-virtfs; Kconfig: CONFIG_VIRTIO_9P / CONFIG_VIRTIO_SERIAL)"
done
echo "$build/qemu-system-x86_64"
