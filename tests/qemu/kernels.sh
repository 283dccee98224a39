#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/qemu/kernels.sh - which kernels the build and the harness use.
#
#   kernels.sh kdir        default KDIR for `make`: the running kernel's build
#                          tree if it exists, else the newest installed one
#   kernels.sh list        default KVERS for `make check`: the newest
#                          installed Debian 6.1 kernel and the newest 6.12
#                          one that have both /boot/vmlinuz-<kver> and
#                          /lib/modules/<kver>/build (an older upload left
#                          installed after a point release is not booted)
#   kernels.sh bench       default kernel for `make bench`: the newest 6.12
#                          one, else the newest of `list`
#   kernels.sh kver DIR    the release string modules built against the
#                          build tree DIR must match (its UTS_RELEASE)
#   kernels.sh resolve K   K as a full release: an installed release, or a
#                          prefix such as "6.1" or "6.12" (newest match)
set -euo pipefail

# Print the arguments one per line, sorted by version, oldest first.
vsort() {
	[ $# -gt 0 ] || return 0
	printf '%s\n' "$@" | sort -V
}

# Releases with both a kernel image and a module build tree.
installed() {
	local img kver out=()

	for img in /boot/vmlinuz-*; do
		[ -e "$img" ] || continue
		kver=${img#/boot/vmlinuz-}
		[ -d "/lib/modules/$kver/build" ] && out+=("$kver")
	done
	vsort "${out[@]}"
}

kver_of() {
	local h=$1/include/generated/utsrelease.h

	if [ ! -r "$h" ]; then
		echo "kernels.sh: $1 is not a prepared kernel build tree (no $h)" >&2
		exit 1
	fi
	sed -n 's/^#define UTS_RELEASE "\(.*\)"$/\1/p' "$h"
}

case ${1-} in
kdir)
	running=/lib/modules/$(uname -r)/build
	if [ -d "$running" ]; then
		echo "$running"
		exit 0
	fi
	trees=()
	for d in /lib/modules/*/build; do
		[ -d "$d" ] && trees+=("$(basename "$(dirname "$d")")")
	done
	newest=$(vsort "${trees[@]}" | tail -n 1)
	# An empty KDIR makes the module build print what to install.
	[ -n "$newest" ] && echo "/lib/modules/$newest/build"
	exit 0
	;;
list)
	all=$(installed)
	for series in 6.1 6.12; do
		grep -E "^${series//./\\.}\." <<<"$all" | tail -n 1 || true
	done
	;;
bench)
	all=$(installed | grep -E '^6\.(1|12)\.' || true)
	pick=$(grep -E '^6\.12\.' <<<"$all" | tail -n 1 || true)
	[ -n "$pick" ] || pick=$(tail -n 1 <<<"$all")
	echo "$pick"
	;;
kver)
	kver_of "$2"
	;;
resolve)
	k=$2
	if [ -e "/boot/vmlinuz-$k" ]; then
		echo "$k"
		exit 0
	fi
	match=$(installed | grep -E "^${k//./\\.}[.-]" | tail -n 1 || true)
	if [ -z "$match" ]; then
		echo "kernels.sh: no installed kernel matches '$k' (installed:" \
		     "$(installed | tr '\n' ' '))" >&2
		exit 1
	fi
	echo "$match"
	;;
*)
	echo "usage: $0 kdir|list|bench|kver DIR|resolve K" >&2
	exit 2
	;;
esac
