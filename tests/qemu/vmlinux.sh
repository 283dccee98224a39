#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/qemu/vmlinux.sh IMAGE OUT - print the kernel file QEMU should boot.
#
# A bzImage decompresses itself at boot, which under QEMU's software
# emulation is slow: about 9 s for Debian's xz-compressed 6.1 kernel on a
# loaded 2-core host, 2 s for the zstd 6.12 one. The host does it in about a
# second, and QEMU boots the resulting ELF vmlinux directly through its PVH
# entry point (CONFIG_PVH, set in both Debian kernels). So: find the
# compressed payload in IMAGE, unpack it to OUT once (again only when IMAGE
# is newer), and print OUT; print IMAGE itself when it has no payload we can
# unpack or the vmlinux has no PVH entry note.
set -euo pipefail

image=$1
out=$2

# XEN_ELFNOTE_PHYS32_ENTRY (18): what QEMU needs to boot an ELF kernel.
has_pvh_note() {
	readelf -n "$1" 2>/dev/null | grep -q 'Unknown note type: (0x00000012)'
}

if [ "$(head -c 4 "$image" | od -An -tx1 | tr -d ' ')" = 7f454c46 ]; then
	# Already an ELF vmlinux.
	echo "$image"
	exit 0
fi
if [ -s "$out" ] && [ "$out" -nt "$image" ]; then
	echo "$out"
	exit 0
fi

# magic (grep -P) and the command that unpacks from there to the end.
try() {
	local magic=$1 off
	shift
	command -v "$1" >/dev/null || return 1
	for off in $(LC_ALL=C grep -obUaP "$magic" "$image" 2>/dev/null |
		     cut -d: -f1 | head -n 5); do
		# Trailing data after the payload makes the tools complain.
		tail -c +$((off + 1)) "$image" | "$@" >"$out.tmp" 2>/dev/null || true
		if [ "$(head -c 4 "$out.tmp" | od -An -tx1 | tr -d ' ')" = 7f454c46 ]; then
			mv "$out.tmp" "$out"
			return 0
		fi
	done
	return 1
}

mkdir -p "$(dirname "$out")"
if { try '\xfd\x37\x7a\x58\x5a\x00' xz -dc ||
     try '\x28\xb5\x2f\xfd' zstd -dcq ||
     try '\x1f\x8b\x08' gzip -dc; } && has_pvh_note "$out"; then
	echo "$out"
else
	rm -f "$out" "$out.tmp"
	echo "$image"
fi
