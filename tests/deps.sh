#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/deps.sh [GROUP...] - the one dependency step of tofutex.
#
# Installs the Debian packages a target needs, with --no-install-recommends,
# and does nothing (not even `apt-get update`) when they are all present.
# Every Makefile target that needs packages runs it first. Groups:
#
#   all      (default) everything below: `make check`, `make bench`,
#            `make dkms-check`
#   build    compiler and Check: `make` without kernel headers
#   headers  headers of both supported Debian kernels: `make` with the
#            default KDIR
#   man      groff and mandoc: `make lint-man` (run by `make check`)
#   deb      Debian's packaging tools and lintian: `make deb`, `make deb-check`
#
# When something is missing and it cannot install (not root, no apt-get),
# it stops and names what is missing.
set -euo pipefail

build=(build-essential check)
headers=(linux-headers-amd64 linux-headers-6.12-amd64)
# The kernels the harness boots (6.1: linux-*-amd64, 6.12: linux-*-6.12-*),
# QEMU and what the initramfs is made of (busybox-static, cpio, gzip; xz-utils
# and zstd unpack the kernels' compressed modules, kmod is modinfo/depmod),
# DKMS, and gnuplot for the benchmark's charts.
all=(linux-image-amd64 linux-headers-amd64
     linux-image-6.12-amd64 linux-headers-6.12-amd64
     qemu-system-x86 busybox-static cpio gzip xz-utils zstd kmod
     check dkms gnuplot-nox build-essential)
man=(groff-base mandoc)
# debian/control's Build-Depends, and what checks the result: lintian, and
# pkg-config for the program built against the installed packages.
deb=(build-essential dpkg-dev debhelper dh-dkms lintian pkg-config)

[ $# -gt 0 ] || set -- all
want=()
for g in "$@"; do
	case $g in
	all) want+=("${all[@]}") ;;
	build) want+=("${build[@]}") ;;
	headers) want+=("${headers[@]}") ;;
	man) want+=("${man[@]}") ;;
	deb) want+=("${deb[@]}") ;;
	*) echo "deps.sh: unknown group '$g' (all, build, headers, man, deb)" >&2; exit 2 ;;
	esac
done

if ! command -v dpkg-query >/dev/null; then
	echo "deps.sh: no dpkg-query: this step supports Debian 12 only." >&2
	echo "  Install the equivalents of: ${want[*]}" >&2
	exit 1
fi

missing=()
for p in $(printf '%s\n' "${want[@]}" | sort -u); do
	status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	[ "$status" = "install ok installed" ] || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps.sh: missing Debian packages: ${missing[*]}" >&2
if ! command -v apt-get >/dev/null; then
	echo "deps.sh: no apt-get here; install them by other means." >&2
	exit 1
fi
if [ "$(id -u)" != 0 ]; then
	echo "deps.sh: not root; run as root:" >&2
	echo "  apt-get update && apt-get install --no-install-recommends ${missing[*]}" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y --no-install-recommends "${missing[@]}"
