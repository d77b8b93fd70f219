#!/usr/bin/env python3
"""What a file costs in a squashfs image compressed with xz, as router firmware stores it (OpenWrt's default):
each block compressed alone with LZMA2 at preset 9e, after the branch-call filter of the machine when there is one.
An estimate (no squashfs metadata, no tail packing), within a few per cent of mksquashfs.

Usage: flashcost.py FILE [BLOCK_KIB]   (default 256 KiB, OpenWrt's CONFIG_TARGET_SQUASHFS_BLOCK_SIZE)"""
import lzma
import sys

path = sys.argv[1]
block = int(sys.argv[2] if len(sys.argv) > 2 else 256) * 1024
data = open(path, "rb").read()
# e_machine of an ELF file: x86_64 (62) and aarch64 (183) have BCJ filters (arm64 one only in liblzma >= 5.4).
machine = int.from_bytes(data[18:20], "little") if data[:4] == b"\x7fELF" else 0
bcj = {62: lzma.FILTER_X86, 183: getattr(lzma, "FILTER_ARM64", None)}.get(machine)
filters = ([{"id": bcj}] if bcj else []) + [{"id": lzma.FILTER_LZMA2, "preset": 9 | lzma.PRESET_EXTREME}]
total = sum(len(lzma.compress(data[i:i + block], format=lzma.FORMAT_RAW, filters=filters))
            for i in range(0, len(data), block))
print(total)
