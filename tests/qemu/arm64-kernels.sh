#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/qemu/arm64-kernels.sh - Debian's arm64 kernels for the harness
# (ARCH=arm64 tests/qemu/run.sh), and the arm64 pieces of a guest.
#
#   arm64-kernels.sh fetch WORD...
#                     make each kernel bootable and buildable, print
#                     "REL KDIR KIMAGE" for each. Words: "6.1" and "6.12"
#                     (Debian 12's, from this host's APT, which needs the
#                     arm64 architecture: dpkg --add-architecture arm64), an
#                     arm64 release of those ("6.1.0-57-arm64"), or what
#                     debian-kernels.sh find takes ("default", "7.3",
#                     "6.18", an amd64 release): Debian 13's, the same
#                     uploads as the x86 harness's
#   arm64-kernels.sh busybox
#                     print the path of an arm64 busybox (busybox-static)
#   arm64-kernels.sh sysroot
#                     print a directory with arm64 Check and subunit
#                     (usr/include, usr/lib/aarch64-linux-gnu) for the
#                     static test programs, and <sys/sdt.h> for the
#                     pthread preload's probes
#
# Debian 12's kernels: the arm64 image, headers and -common packages and
# the amd64 linux-kbuild of the same upload, unpacked (dpkg -x) into
# $cache/arm64/<rel>/tree: the headers' scripts link resolves to the
# amd64 kbuild programs there, which run on the Debian 12 host; the
# headers' Makefile includes -common by absolute path, rewritten to the
# tree. The host's cross compiler (gcc-aarch64-linux-gnu, gcc-12) builds.
#
# Debian 13's kernels: their kbuild programs need trixie's glibc and
# their configuration names gcc-14, so they build in debian-kernels.sh's
# trixie root, as the amd64 ones: fetching the amd64 kernel there
# installs the upload's -common and (amd64) linux-kbuild; the arm64
# headers package adds only the configuration, Module.symvers and the
# generated headers, unpacked into the root's /usr/src where its
# absolute paths point; the cross gcc-N the configuration names
# (gcc-N-aarch64-linux-gnu) is installed in the root. Their images come
# from the pool (linux-signed-arm64), as the index names the amd64 ones.
#
# The images are uncompressed arm64 Image files (no EFI zboot in Debian's
# configurations): QEMU's -kernel boots them as they are.
#
# Needs root for Debian 13's kernels (the trixie root). Environment:
# TOFUTEX_CACHE, TOFUTEX_MIRROR as debian-kernels.sh.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
here=$top/tests/qemu
cache=${TOFUTEX_CACHE:-/var/cache/tofutex}
dir=$cache/arm64
mirror=${TOFUTEX_MIRROR:-http://deb.debian.org/debian}

die() {
	echo "arm64-kernels.sh: $*" >&2
	exit 1
}

# field PKG FIELD: FIELD of PKG's candidate in this host's APT index.
field() {
	apt-cache show --no-all-versions "$1" 2>/dev/null |
		sed -n "s/^$2: //p" | head -n 1
}

# download DIR PKG[:ARCH][=VER]...: apt-get download into DIR.
download() {
	local d=$1
	shift
	# _apt cannot write a root-owned directory: say nothing of it.
	(cd "$d" && apt-get -q download "$@" >/dev/null 2>&1) ||
		die "apt-get download $* failed (is the arm64 architecture added? dpkg --add-architecture arm64 && apt-get update)"
}

# bookworm_rel WORD: the arm64 release Debian 12's index has for WORD.
bookworm_rel() {
	local meta dep

	case $1 in
	6.1) meta=linux-image-arm64:arm64 ;;
	6.12) meta=linux-image-6.12-arm64:arm64 ;;
	*-arm64) echo "$1"; return 0 ;;
	*) return 1 ;;
	esac
	dep=$(field "$meta" Depends | sed -n 's/^linux-image-\([^ ,]*-arm64\).*/\1/p')
	[ -n "$dep" ] || die "no $meta in this host's APT index (dpkg --add-architecture arm64 && apt-get update)"
	echo "$dep"
}

# fetch_bookworm REL: Debian 12's arm64 kernel REL into the cache.
fetch_bookworm() {
	local rel=$1 ver common kbuild t dl kdir

	t=$dir/$rel/tree
	kdir=$t/usr/src/linux-headers-$rel
	if [ ! -s "$dir/$rel/vmlinuz" ] || [ ! -e "$kdir/Module.symvers" ]; then
		ver=$(field "linux-image-$rel:arm64" Version)
		[ -n "$ver" ] || die "linux-image-$rel:arm64 is not in this host's APT index"
		common=$(field "linux-headers-$rel:arm64" Depends |
			 tr ',' '\n' | sed -n 's/^ *\(linux-headers-[^ ]*-common\).*/\1/p')
		kbuild=$(field "linux-headers-$rel:arm64" Depends |
			 tr ',' '\n' | sed -n 's/^ *\(linux-kbuild-[^ ]*\).*/\1/p')
		if [ -z "$common" ] || [ -z "$kbuild" ]; then
			die "linux-headers-$rel:arm64 names no -common or linux-kbuild"
		fi
		rm -rf "${dir:?}/$rel"
		dl=$dir/$rel/debs
		mkdir -p "$dl" "$t"
		download "$dl" "linux-image-$rel:arm64=$ver" "linux-headers-$rel:arm64=$ver" \
			"$common=$ver" "$kbuild:amd64=$ver"
		for f in "$dl"/linux-headers-*.deb "$dl"/linux-kbuild-*.deb; do
			dpkg-deb -x "$f" "$t"
		done
		dpkg-deb --fsys-tarfile "$dl"/linux-image-*.deb |
			tar -xO "./boot/vmlinuz-$rel" >"$dir/$rel/vmlinuz.tmp"
		mv "$dir/$rel/vmlinuz.tmp" "$dir/$rel/vmlinuz"
		rm -rf "$dl"
		# The headers include -common by absolute path.
		sed -i "s|^include /usr/src/|include $t/usr/src/|; s|^KBUILD_OUTPUT=/usr/src/|KBUILD_OUTPUT=$t/usr/src/|" \
			"$kdir/Makefile"
		[ -e "$kdir/Module.symvers" ] || die "no Module.symvers in $rel's headers"
	fi
	echo "$rel $kdir $dir/$rel/vmlinuz"
}

# pool_get DIR SOURCE NAME VERSION ARCH: NAME's .deb from the pool.
pool_get() {
	local file=${3}_${4//:/%3a}_$5.deb

	curl -fsS --retry 3 -o "$1/$file" "$mirror/pool/main/l/$2/$file" 2>/dev/null
}

# fetch_trixie AMD64REL: the arm64 kernel of the same upload as
# debian-kernels.sh's AMD64REL; its headers into the trixie root.
fetch_trixie() {
	local amd=$1 rel root ver dl gcc kdir img

	rel=${amd%-amd64}-arm64
	root=$("$here/debian-kernels.sh" root)
	# The upload's -common and linux-kbuild (and the amd64 kernel).
	"$here/debian-kernels.sh" fetch "$amd" >/dev/null
	kdir=$root/usr/src/linux-headers-$rel
	img=$dir/$rel/vmlinuz
	if [ ! -e "$kdir/Module.symvers" ] || [ ! -s "$img" ]; then
		ver=$("$here/debian-kernels.sh" exec apt-cache show --no-all-versions \
		      "linux-image-$amd" 2>/dev/null | sed -n 's/^Version: //p' | head -n 1)
		[ -n "$ver" ] || die "no version for linux-image-$amd in the root's index"
		dl=$dir/$rel/debs
		rm -rf "${dir:?}/$rel"
		mkdir -p "$dl/x"
		pool_get "$dl" linux "linux-headers-$rel" "$ver" arm64 ||
			die "linux-headers-$rel ($ver) is not in $mirror/pool"
		# From 6.19 the image is in linux-binary-<rel>.
		pool_get "$dl" linux-signed-arm64 "linux-binary-$rel" "$ver" arm64 ||
			pool_get "$dl" linux-signed-arm64 "linux-image-$rel" "$ver" arm64 ||
			die "no signed arm64 image of $rel ($ver) in $mirror/pool"
		for f in "$dl"/*.deb; do dpkg-deb -x "$f" "$dl/x"; done
		for f in "$dl/x/boot/vmlinuz-$rel" "$dl/x/usr/lib/modules/$rel/vmlinuz"; do
			[ -s "$f" ] && mv "$f" "$img" && break
		done
		[ -s "$img" ] || die "no vmlinuz in $rel's image package"
		# The compiler the configuration names: gcc-N.
		gcc=$(sed -n 's/.*(CROSS_COMPILE)\(gcc-[0-9]*\).*/\1/p' \
		      "$dl/x/usr/src/linux-headers-$rel/.kernelvariables" | head -n 1)
		[ -n "$gcc" ] || die "$rel's headers name no gcc-N"
		"$here/debian-kernels.sh" install "${gcc}-aarch64-linux-gnu"
		# Into the root, under its lock (builds there hold it shared).
		(
			exec {lk}>"$("$here/debian-kernels.sh" lockfile)"
			flock "$lk"
			rm -rf "$kdir"
			mv "$dl/x/usr/src/linux-headers-$rel" "$kdir"
		)
		rm -rf "$dl"
	fi
	echo "$rel $kdir $img"
}

case ${1-} in
fetch)
	shift
	mkdir -p "$dir" || die "cannot write $dir; set TOFUTEX_CACHE"
	rc=0
	for w in "$@"; do
		if rel=$(bookworm_rel "$w"); then
			(fetch_bookworm "$rel") || rc=1
		else
			for amd in $("$here/debian-kernels.sh" find "$w"); do
				(fetch_trixie "$amd") || rc=1
			done
		fi
	done
	exit $rc
	;;
busybox)
	bb=$dir/busybox/bin/busybox
	if [ ! -x "$bb" ]; then
		mkdir -p "$dir/busybox/debs"
		download "$dir/busybox/debs" busybox-static:arm64
		dpkg-deb -x "$dir"/busybox/debs/busybox-static_*.deb "$dir/busybox"
		rm -rf "$dir/busybox/debs"
	fi
	echo "$bb"
	;;
sysroot)
	s=$dir/sysroot
	if [ ! -e "$s/usr/lib/aarch64-linux-gnu/libcheck.a" ] ||
		[ ! -e "$s/usr/include/aarch64-linux-gnu/sys/sdt.h" ]; then
		rm -rf "$s"
		mkdir -p "$s/debs"
		# Not installed as check:arm64: two architectures of "check"
		# make dpkg-query print two statuses, and tests/deps.sh would
		# take the package for missing on every run.
		download "$s/debs" check:arm64 libsubunit-dev:arm64 \
			systemtap-sdt-dev:arm64
		for f in "$s"/debs/*.deb; do dpkg-deb -x "$f" "$s"; done
		rm -rf "$s/debs"
	fi
	echo "$s"
	;;
*)
	echo "usage: $0 fetch WORD... | busybox | sysroot" >&2
	exit 2
	;;
esac
