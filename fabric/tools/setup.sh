#!/usr/bin/env bash
# One entry point for a fresh Debian 12 machine:
#   setup.sh run    install packages, build (Release), QEMU and the guest image, then boot the
#                   default 2 VMs x 4 GPUs and run the in-guest suite (`ethx bench --vms`)
#   setup.sh test   install packages, build, run the whole test suite (what CI runs)
#   setup.sh deps | build
# Build trees live in build/ (Release) and build-asan/ (sanitizers); both are incremental.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
mode="${1:-run}"
jobs="$(nproc)"

say() { printf '==> %s\n' "$*" >&2; }

install_packages() {
  mapfile -t wanted < <(grep -v '^\s*#' "$repo/fabric/tools/debian-packages.txt" | sed '/^\s*$/d')
  local missing=()
  for pkg in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$pkg")
  done
  [ "${#missing[@]}" -eq 0 ] && { say "Debian packages: all present"; return; }
  say "installing Debian packages: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
}

build_release() {
  say "building Release in build/"
  cmake -S "$repo" -B "$repo/build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DETHX_WERROR=ON >/dev/null
  cmake --build "$repo/build" -j "$jobs"
}

build_sanitizers() {
  say "building the unit tests with AddressSanitizer + UBSan in build-asan/"
  cmake -S "$repo" -B "$repo/build-asan" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DETHX_SANITIZE=ON \
    -DETHX_WERROR=ON >/dev/null
  cmake --build "$repo/build-asan" -j "$jobs" --target ethx_unit_tests ethx_roce_tests \
    ethx_shmem_api_tests
}

# QEMU with the ethx-gpu device and the guest image, both cached outside the repository
# (${ETHX_CACHE:-~/.cache/ethx}): the first run builds QEMU (~4 min on 2 cores) and downloads
# the guest kernel package; later runs only recompile what changed.
build_vm_prerequisites() {
  say "QEMU with the ethx-gpu device (qemu-device/build-qemu.sh)"
  "$repo/qemu-device/build-qemu.sh" >/dev/null
  say "guest kernel and initramfs (qemu-device/guest/build-guest-image.sh)"
  "$repo/qemu-device/guest/build-guest-image.sh" --tools "$repo/build/bin" >/dev/null
  say "RDMA guest image: Soft-RoCE, perftest (build-guest-image.sh --rdma; docs/softroce.md)"
  "$repo/qemu-device/guest/build-guest-image.sh" --rdma --tools "$repo/build/bin" >/dev/null
}

case "$mode" in
  deps) install_packages ;;
  build) install_packages; build_release ;;
  run)
    install_packages
    build_release
    build_vm_prerequisites
    say "running: ethx bench --vms (boots 2 VMs x 4 emulated GPUs, runs the in-guest suite)"
    exec "$repo/build/bin/ethx" bench --vms
    ;;
  test)
    install_packages
    build_release
    build_vm_prerequisites
    say "style: clang-format, layers, clang-tidy (fabric/tools/check-style.sh)"
    "$repo/fabric/tools/check-style.sh" "$repo/build"
    build_sanitizers
    say "unit tests under ASan/UBSan"
    (cd "$repo/build-asan" && ctest -L unit --output-on-failure -j "$jobs")
    say "all tests (Release)"
    (cd "$repo/build" && ctest --output-on-failure -j "$jobs")
    say "fuzz targets (clang, ASan + UBSan), 15 s each (docs/fuzzing.md)"
    "$repo/fabric/tools/run-fuzzers.sh" 15
    ;;
  *) echo "usage: $0 run|test|deps|build" >&2; exit 2 ;;
esac
