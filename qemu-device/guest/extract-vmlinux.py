#!/usr/bin/env python3
"""Writes the uncompressed ELF kernel hidden in a bzImage (vmlinuz).

QEMU boots an ELF vmlinux through its PVH entry point, which skips the kernel's own
decompressor (about half the boot time under TCG). Debian compresses the payload with xz; the
first xz stream after the magic FD 37 7A 58 5A 00 that decompresses to an ELF file is it.

  extract-vmlinux.py VMLINUZ OUTPUT
"""
import lzma
import os
import sys

XZ_MAGIC = b"\xfd7zXZ\x00"


def find_elf(image: bytes) -> bytes:
    start = image.find(XZ_MAGIC)
    while start >= 0:
        try:
            # The stream is followed by the bzImage's trailer; the decompressor stops at the
            # stream's end and leaves the rest in unused_data.
            payload = lzma.LZMADecompressor(format=lzma.FORMAT_XZ).decompress(image[start:])
            if payload.startswith(b"\x7fELF"):
                return payload
        except lzma.LZMAError:
            pass  # the magic bytes occurred by chance; try the next occurrence
        start = image.find(XZ_MAGIC, start + 1)
    raise SystemExit("extract-vmlinux.py: no xz-compressed ELF kernel found (not an xz bzImage?)")


def main() -> None:
    if len(sys.argv) != 3:
        raise SystemExit(__doc__.strip().splitlines()[-1].strip())
    with open(sys.argv[1], "rb") as f:
        payload = find_elf(f.read())
    tmp = sys.argv[2] + ".tmp"
    with open(tmp, "wb") as f:
        f.write(payload)
    os.replace(tmp, sys.argv[2])  # never leave a truncated vmlinux behind


if __name__ == "__main__":
    main()
