#!/usr/bin/env bash
# Boots the ethx guest image under QEMU with N ethx-gpu devices, console on stdout.
#
#   qemu-device/guest/run-vm.sh [--gpus 3,5] [--run CMD,ARG...]... [--modules a,b]
#                               [--memory MiB] [--timeout S] [--accel tcg|kvm] [-- QEMU args]
#
# --run: an ethx-guest command line with commas for spaces (e.g. --run list,
# --run peek,--offset,0x20,--width,8); the VM prints each command's output between ETHX-BEGIN and
# ETHX-END <status> lines and powers off. Without --run: a shell on the console (Ctrl-A x quits).
# --timeout (default 120 s with --run, none without): QEMU is killed after it; exit status 124.
# The binaries: $ETHX_QEMU or build-qemu.sh's cache; $ETHX_GUEST_KERNEL and $ETHX_GUEST_INITRD
# or build-guest-image.sh's cache. TCG by default: KVM does not boot stock kernels on every
# host (docs/guest-image.md).
set -euo pipefail

die() { printf 'qemu-device/guest/run-vm.sh: %s\n' "$*" >&2; exit 2; }

gpus="0" runs=() modules="" memory=256 timeout="" accel=tcg
while [ $# -gt 0 ]; do
  case "$1" in
    --gpus) gpus="${2:?--gpus needs a list}"; shift 2 ;;
    --run) runs+=("${2:?--run needs a command}"); shift 2 ;;
    --modules) modules="${2:?--modules needs a list}"; shift 2 ;;
    --memory) memory="${2:?--memory needs MiB}"; shift 2 ;;
    --timeout) timeout="${2:?--timeout needs seconds}"; shift 2 ;;
    --accel) accel="${2:?--accel needs tcg or kvm}"; shift 2 ;;
    --) shift; break ;;
    *) die "unknown argument '$1' (see the comment at the top of the script)" ;;
  esac
done

cache="${ETHX_CACHE:-$HOME/.cache/ethx}"
qemu="${ETHX_QEMU:-$cache/qemu-7.2/src/build/qemu-system-x86_64}"
kernel="${ETHX_GUEST_KERNEL:-$cache/guest/vmlinux}"
initrd="${ETHX_GUEST_INITRD:-$cache/guest/initramfs.cpio.gz}"
[ -x "$qemu" ] || die "no QEMU with ethx-gpu at $qemu; run qemu-device/build-qemu.sh"
if [ ! -f "$kernel" ] || [ ! -f "$initrd" ]; then
  die "no guest image ($kernel, $initrd); run qemu-device/guest/build-guest-image.sh"
fi

# panic=-1 with -no-reboot: if /init dies, QEMU exits instead of hanging.
append="console=ttyS0 quiet panic=-1"
[ -n "$modules" ] && append+=" ethx.modules=$modules"
for run in "${runs[@]}"; do
  case "$run" in *[[:space:]]*) die "--run '$run': use commas, not spaces, between words" ;; esac
  append+=" ethx.run=$run"
done
devices=()
for id in ${gpus//,/ }; do devices+=(-device "ethx-gpu,gpu-id=$id"); done
[ "${#runs[@]}" -gt 0 ] && timeout="${timeout:-120}"

# -nodefaults: no VGA, NIC, floppy or CD-ROM to probe; boots faster and keeps the console
# the only output. mon:stdio: Ctrl-C goes to the guest, Ctrl-A x quits.
cmd=("$qemu" -L /usr/share/qemu -L /usr/share/seabios -L /usr/lib/ipxe/qemu
     -accel "$accel" -machine q35 -m "$memory" -smp 1 -nodefaults -no-user-config
     -display none -serial mon:stdio -no-reboot
     -kernel "$kernel" -initrd "$initrd" -append "$append" "${devices[@]}" "$@")
if [ -n "$timeout" ]; then
  exec timeout --kill-after=5 "$timeout" "${cmd[@]}"
fi
exec "${cmd[@]}"
