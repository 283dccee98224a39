#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/qemu/build-module.sh KDIR [W]
#
# Build tofutex.ko against the kernel build tree KDIR in build/<kver>/src
# and print the path of the .ko. One directory per kernel release, because
# Kbuild keeps its objects next to the sources and a `clean` for one kernel
# would delete the other's.
#
# build/<kver>/src mirrors the source tree with symlinks: Kbuild and uapi/
# are linked directly (nothing is written there), module/ is a real
# directory of per-file links so that the objects land in build/, not in
# module/. W (default 1) is passed to Kbuild as W=; any warning in the
# build output fails the build. TOFUTEX_DEBUG=y in the environment builds
# the race windows that tests widen (module/debug.c).
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
kdir=${1-}
w=${2-1}

if [ -z "$kdir" ] || [ ! -d "$kdir" ]; then
	echo "build-module: no kernel build tree${kdir:+ at $kdir}." >&2
	echo "  Install headers (tests/deps.sh, or apt-get install linux-headers-amd64)" >&2
	echo "  or pass KDIR=/path/to/kernel/build." >&2
	exit 1
fi
kver=$("$top/tests/qemu/kernels.sh" kver "$kdir")
src=$top/build/$kver/src

mkdir -p "$src/module"
ln -sfn "$top/Kbuild" "$src/Kbuild"
ln -sfn "$top/uapi" "$src/uapi"
for f in "$top"/module/*; do
	[ -f "$f" ] && ln -sfn "$f" "$src/module/"
done
# Sources removed from module/ must not linger as dangling links.
find "$src/module" -xtype l -delete

log=$top/build/$kver/module-build.log
# An arm64 kernel's headers (tests/qemu/arm64-kernels.sh) build with the
# cross compiler; Debian 12's 6.1 headers set neither ARCH nor
# CROSS_COMPILE themselves.
cross=()
if grep -q '^CONFIG_ARM64=y' "$kdir/.config" 2>/dev/null; then
	cross=(ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu-)
fi
# Our own make's command-line variables (CC=, CFLAGS=, KVERS=...) must not
# leak into Kbuild through MAKEFLAGS.
# A tree in the trixie build root is built there (debian-kernels.sh).
if ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
	"$top/tests/qemu/debian-kernels.sh" make "$kdir" M="$src" W="$w" \
	TOFUTEX_DEBUG="${TOFUTEX_DEBUG-}" ${cross[@]+"${cross[@]}"} -j"$(nproc)" modules >"$log" 2>&1; then
	cat "$log" >&2
	echo "build-module: module build against $kdir failed (log: $log)" >&2
	exit 1
fi
grep -E '^  (CC|LD|MODPOST|BTF)' "$log" >&2 || true
if grep -iE 'warning' "$log" >&2; then
	echo "build-module: the module build against $kver printed warnings (W=$w, log: $log)" >&2
	exit 1
fi
echo "$src/tofutex.ko"
