#!/usr/bin/env bash
# Builds the guest image the ethx VMs boot: Debian's kernel as an uncompressed ELF vmlinux
# (QEMU boots it through PVH, skipping the decompressor) and a busybox initramfs with /init and
# the static guest tools. Nothing is installed on the host; everything is cached, outside the
# repository, in ${ETHX_CACHE:-$HOME/.cache/ethx}/guest/ (docs/guest-image.md).
#
#   qemu-device/guest/build-guest-image.sh [--tools DIR]   build or update; the last two lines
#                                                          of stdout are vmlinux and initramfs
#   qemu-device/guest/build-guest-image.sh --print-paths   only print them (fails if not built)
#   qemu-device/guest/build-guest-image.sh --clean ...     remove the cached image first
#   qemu-device/guest/build-guest-image.sh --rdma ...      the RDMA variant (docs/softroce.md):
#       the same image plus Soft-RoCE modules, rdma-core's libibverbs with the rxe provider,
#       iproute2's `rdma`, perftest, ethx-rxe-peer and ethx-rdma, with their shared libraries
#       and the dynamic loader, cached in ${ETHX_CACHE:-$HOME/.cache/ethx}/guest-rdma/
#       ($ETHX_GUEST_VARIANT=rdma does the same)
#
# --tools DIR: where the static guest tools are (default: $ETHX_GUEST_TOOLS_DIR or build/bin).
# $ETHX_GUEST_MODULES: the kernel modules (with their dependencies) put into the image.
# A second run downloads nothing and rebuilds the initramfs only when one of its inputs
# (guest tools, /init, busybox, module set, this script) changed.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
variant="${ETHX_GUEST_VARIANT:-}"
for arg in "$@"; do [ "$arg" = "--rdma" ] && variant=rdma; done
case "$variant" in
  "") cache="${ETHX_CACHE:-$HOME/.cache/ethx}/guest" ;;
  rdma) cache="${ETHX_CACHE:-$HOME/.cache/ethx}/guest-rdma" ;;
  *) echo "qemu-device/guest/build-guest-image.sh: ETHX_GUEST_VARIANT=$variant: use rdma or nothing" >&2; exit 1 ;;
esac
tools_dir="${ETHX_GUEST_TOOLS_DIR:-$repo/build/bin}"
guest_tools=(ethx-guest ethx-agent)
# NICs for the next stages and Soft-RoCE (crc32_generic: rdma_rxe needs it, modinfo does not
# say so); 9p, its virtio transport and overlay for the shared root (/init, ethx.root=9p; netfs
# and fscache come in as 9p's dependencies); together about 0.7 MB of the compressed initramfs.
shared_root_modules="9p 9pnet_virtio overlay"
# Busybox applets that go ahead of the host's programs in the shared root: module tools that
# read the text modules.dep this image carries (the host's kmod wants modules.dep.bin), power
# control without systemd, and what Debian does not package (devmem, cttyhack).
shared_root_applets="modprobe insmod rmmod lsmod modinfo poweroff reboot halt devmem cttyhack"
modules="${ETHX_GUEST_MODULES-e1000 virtio_net virtio_pci rdma_rxe ib_uverbs crc32_generic $shared_root_modules}"
# The RDMA variant also needs rdma_ucm (librdmacm, perftest -R) and the UDP tunnels rdma_rxe
# loads through; udp_tunnel and ip6_udp_tunnel come in as rdma_rxe's dependencies.
[ "$variant" = rdma ] && modules="${ETHX_GUEST_MODULES-e1000 virtio_net virtio_pci rdma_rxe ib_uverbs rdma_ucm crc32_generic $shared_root_modules}"
# Both variants: virtio_console for ethx-agent's virtio-serial ports (docs/agent-protocol.md).
modules="$modules virtio_console"
# Debian packages whose files the RDMA variant carries (downloaded, unpacked, never installed).
rdma_packages=(perftest ibverbs-providers libibverbs1 libibverbs-dev librdmacm1 libnl-3-200
               libnl-route-3-200 libpci3 iproute2 libmnl0 libbsd0 libmd0 libcap2 libc6
               ibverbs-utils libibumad3 zlib1g libudev1)
# What of them goes into the image (paths inside the packages); libraries follow by closure.
rdma_files=(usr/bin/ib_write_lat usr/bin/ib_read_lat usr/bin/ib_write_bw usr/bin/ib_read_bw
            usr/bin/ib_send_lat usr/bin/ibv_devinfo usr/bin/rdma
            usr/lib/x86_64-linux-gnu/libibverbs/librxe-rdmav34.so etc/libibverbs.d/rxe.driver)
vmlinux="$cache/vmlinux"
initramfs="$cache/initramfs.cpio.gz"

say() { printf '==> guest image: %s\n' "$*" >&2; }
die() { printf 'qemu-device/guest/build-guest-image.sh: %s\n' "$*" >&2; exit 1; }

print_only=0
while [ $# -gt 0 ]; do
  case "$1" in
    --tools) [ $# -ge 2 ] || die "--tools needs a directory"; tools_dir="$2"; shift 2 ;;
    --print-paths) print_only=1; shift ;;
    --clean) say "removing $cache"; rm -rf "$cache"; shift ;;
    --rdma) shift ;;
    *) die "unknown argument '$1' (see the comment at the top of the script)" ;;
  esac
done

if [ "$print_only" -eq 1 ]; then
  if [ ! -f "$vmlinux" ] || [ ! -f "$initramfs" ]; then
    die "no guest image in $cache; build it with qemu-device/guest/build-guest-image.sh"
  fi
  echo "$vmlinux"; echo "$initramfs"; exit 0
fi

# Host tools, checked by package so a missing one fails here with its name.
needed=(busybox-static cpio python3 binutils gzip dpkg apt)
[ "$variant" = rdma ] && needed+=(gcc libc6-dev)
missing=()
for pkg in "${needed[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  say "installing host packages: ${missing[*]}"
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null ||
    die "cannot install: ${missing[*]} (apt-get failed)"
fi
busybox=/bin/busybox
"$busybox" --list >/dev/null 2>&1 || die "$busybox does not run (package busybox-static)"
readelf -l "$busybox" | grep -q INTERP && die "$busybox is not static (install busybox-static)"

for tool in "${guest_tools[@]}"; do
  [ -x "$tools_dir/$tool" ] || die "no guest tool $tools_dir/$tool; build it first
  (cmake --build build --target ${guest_tools[*]}), or pass --tools DIR"
  readelf -l "$tools_dir/$tool" | grep -q INTERP &&
    die "$tools_dir/$tool is dynamically linked; the guest has no libraries"
done
mkdir -p "$cache"

# --- kernel: the package linux-image-amd64 depends on, e.g. linux-image-6.1.0-28-amd64 ---
kernel_package() {
  apt-cache depends linux-image-amd64 2>/dev/null |
    awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ {print $2; exit}'
}
kpkg="${ETHX_GUEST_KERNEL_PACKAGE:-$(kernel_package)}"
if [ -z "$kpkg" ]; then
  say "apt knows no linux-image-amd64; running apt-get update"
  if [ "$(id -u)" -eq 0 ]; then apt-get update -qq >/dev/null 2>&1 || true; fi
  kpkg="$(kernel_package)"
  [ -n "$kpkg" ] || die "cannot find the kernel package (apt-cache depends linux-image-amd64 \
names no linux-image-6.1.0-N-amd64); run apt-get update, or set ETHX_GUEST_KERNEL_PACKAGE"
fi
kdir="$cache/$kpkg"
mkdir -p "$kdir"
shopt -s nullglob
debs=("$kdir/${kpkg}"_*.deb)
base_debs=("${ETHX_CACHE:-$HOME/.cache/ethx}/guest/$kpkg/${kpkg}"_*.deb)
if [ "${#debs[@]}" -eq 0 ] && [ "$variant" = rdma ] && [ "${#base_debs[@]}" -gt 0 ]; then
  say "taking $kpkg from the base image's cache"
  cp "${base_debs[@]}" "$kdir/"
  debs=("$kdir/${kpkg}"_*.deb)
fi
if [ "${#debs[@]}" -eq 0 ]; then
  say "downloading $kpkg (about 70 MB; kept in $kdir)"
  # Sandbox::User=root: the cache may be root-owned; apt still verifies the package's hash.
  (cd "$kdir" && apt-get download -qq -o APT::Sandbox::User=root "$kpkg") ||
    die "apt-get download $kpkg failed"
fi
debs=("$kdir/${kpkg}"_*.deb)
[ "${#debs[@]}" -gt 0 ] || die "apt-get download left no ${kpkg}_*.deb in $kdir"
deb="$(printf '%s\n' "${debs[@]}" | sort -V | tail -n 1)"
shopt -u nullglob
kver="${kpkg#linux-image-}"
if [ ! -f "$kdir/vmlinux" ]; then
  say "extracting the kernel from $(basename "$deb")"
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$kdir" "./boot/vmlinuz-$kver" "./boot/config-$kver" ||
    die "$deb has no boot/vmlinuz-$kver"
  python3 "$here/extract-vmlinux.py" "$kdir/boot/vmlinuz-$kver" "$kdir/vmlinux"
fi
if [ ! -f "$kdir/modules/chosen" ] || [ "$(cat "$kdir/modules/chosen")" != "$modules" ]; then
  say "copying kernel modules out of the package: ${modules:-none}"
  rm -rf "$kdir/modules"
  # shellcheck disable=SC2086  # one module name per word
  python3 "$here/kernel-modules.py" "$deb" "$kdir/modules" $modules >/dev/null
  echo "$modules" > "$kdir/modules/chosen"
fi
ln -sfn "$kpkg/vmlinux" "$vmlinux"

# --- RDMA variant: Debian's RDMA user space, unpacked (never installed), and ethx-rxe-peer ---
rdma_inputs=""
if [ "$variant" = rdma ]; then
  debdir="$cache/rdma-debs"
  rootdir="$cache/rdma-root"
  mkdir -p "$debdir"
  if [ "$(cat "$debdir/packages" 2>/dev/null)" != "${rdma_packages[*]}" ] || [ ! -d "$rootdir" ]; then
    say "downloading the RDMA user space: ${rdma_packages[*]}"
    rm -f "$debdir"/*.deb "$debdir/packages"
    (cd "$debdir" && apt-get download -qq -o APT::Sandbox::User=root "${rdma_packages[@]}") ||
      die "apt-get download of ${rdma_packages[*]} failed (apt-get update first?)"
    rm -rf "$rootdir"; mkdir -p "$rootdir"
    for deb in "$debdir"/*.deb; do dpkg-deb -x "$deb" "$rootdir"; done
    echo "${rdma_packages[*]}" > "$debdir/packages"
  fi
  peer="$cache/ethx-rxe-peer"
  peer_hash="$(sha256sum < "$here/rxe_peer.c" | cut -d' ' -f1)"
  if [ ! -x "$peer" ] || [ "$(cat "$peer.source" 2>/dev/null)" != "$peer_hash" ]; then
    say "compiling ethx-rxe-peer against the packaged libibverbs"
    gcc -O2 -Wall -Wextra -Werror -std=gnu11 -I "$rootdir/usr/include" -o "$peer" \
        "$here/rxe_peer.c" -L "$rootdir/usr/lib/x86_64-linux-gnu" -l:libibverbs.so.1 \
        -Wl,-rpath-link,"$rootdir/usr/lib/x86_64-linux-gnu" ||
      die "compiling $here/rxe_peer.c failed"
    echo "$peer_hash" > "$peer.source"
  fi
  rdma_inputs="$(for f in "$here/rdma-payload.py" "$here/ethx-rdma" "$peer"; do
                   echo "$(sha256sum < "$f" | cut -d' ' -f1) $(basename "$f")"; done
                 (cd "$debdir" && ls ./*.deb)
                 echo "${rdma_files[*]}")"
fi

# --- initramfs: rebuilt only when an input changed ---
# Contents only, so that the same tools reached through another path change nothing.
inputs="$(for f in "$here/init" "$here/build-guest-image.sh" "$busybox" "${guest_tools[@]/#/$tools_dir/}"; do
            echo "$(sha256sum < "$f" | cut -d' ' -f1) $(basename "$f")"; done
          echo "$kpkg $modules"
          echo "$rdma_inputs")"
if [ -f "$initramfs" ] && [ "$(cat "$cache/initramfs.inputs" 2>/dev/null)" = "$inputs" ]; then
  say "initramfs up to date"
else
  say "building the initramfs"
  staging="$(mktemp -d "$cache/initramfs.XXXXXX")"
  trap 'rm -rf "$staging"' EXIT
  mkdir -p "$staging"/{bin,sbin,usr/bin,usr/sbin,proc,sys,dev,tmp,root,etc,lib}
  cp "$busybox" "$staging/bin/busybox"
  for applet in $("$busybox" --list-full); do
    [ -e "$staging/$applet" ] || ln -s /bin/busybox "$staging/$applet"
  done
  install -m 0755 "$here/init" "$staging/init"
  for tool in "${guest_tools[@]}"; do
    strip -o "$staging/usr/bin/$tool" "$tools_dir/$tool"  # symbols stay in the build tree
  done
  [ -d "$kdir/modules/lib/modules" ] && cp -a "$kdir/modules/lib/modules" "$staging/lib/"
  if [ "$variant" = rdma ]; then
    python3 "$here/rdma-payload.py" "$rootdir" "$staging" "${rdma_files[@]}" \
      "$peer=usr/bin/ethx-rxe-peer" > "$cache/rdma-payload.list" ||
      die "collecting the RDMA user space failed"
    install -m 0755 "$here/ethx-rdma" "$staging/usr/bin/ethx-rdma"
    # /init copies what of it the host lacks into the shared root (ethx.root=9p).
    cp "$cache/rdma-payload.list" "$staging/etc/ethx-payload.list"
    strip "$staging/usr/bin/ethx-rxe-peer"
    say "RDMA payload: $(wc -l < "$cache/rdma-payload.list") files; unpacked image $(du -sh "$staging" | cut -f1)"
  fi
  # The shared root's /opt/ethx, which /init binds into the new root in one go (ethx.root=9p,
  # docs/guest-image.md): hard links to busybox, /init and the ethx tools (no second copy in
  # the archive); bin/ also has the applets that go ahead of the host's programs, busybox/
  # every applet, last in PATH, for what the host lacks (ping, usleep, ...). Relative
  # symlinks: there, /bin/busybox is the host's (if any).
  mkdir -p "$staging/opt/ethx/bin" "$staging/opt/ethx/busybox"
  ln "$staging/bin/busybox" "$staging/opt/ethx/bin/busybox"
  ln "$staging/init" "$staging/opt/ethx/init"
  for tool in "$staging"/bin/ethx-* "$staging"/usr/bin/ethx-*; do
    [ -f "$tool" ] && ln "$tool" "$staging/opt/ethx/bin/"
  done
  for applet in $shared_root_applets; do ln -s busybox "$staging/opt/ethx/bin/$applet"; done
  for applet in $("$busybox" --list); do
    [ "$applet" = busybox ] || ln -s ../bin/busybox "$staging/opt/ethx/busybox/$applet"
  done
  (cd "$staging" && find . -mindepth 1 | LC_ALL=C sort |
     cpio -o -H newc -R 0:0 --quiet | gzip -9 > "$initramfs.tmp")
  mv "$initramfs.tmp" "$initramfs"
  echo "$inputs" > "$cache/initramfs.inputs"
  rm -rf "$staging"; trap - EXIT
fi
say "kernel $kver: $(du -h "$kdir/vmlinux" | cut -f1) vmlinux; initramfs $(du -h "$initramfs" | cut -f1)"
echo "$vmlinux"
echo "$initramfs"
