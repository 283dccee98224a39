#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/qemu/debian-kernels.sh - Debian's newer kernels for the harness:
# trixie's, trixie-backports' (6.16 on, each also -rt) and their build root.
#
#   debian-kernels.sh find WORD...
#                     print the releases the words name, from trixie and
#                     trixie-backports, always the newest upload of a series
#                     as the archive's index has it (nothing hard-coded):
#                     "default" the 6.18 LTS, the newest 7.x and the newest
#                     7.x -rt; "newest" the newest without -rt; "all" every
#                     series and flavour Debian ships;
#                     a series ("6.18", "7.3-rt") or a release
#   debian-kernels.sh fetch REL...
#                     make each kernel bootable and buildable: its headers
#                     installed in the build root, its vmlinuz in the cache;
#                     print "REL KDIR KIMAGE" for each
#   debian-kernels.sh make KDIR ARGS...
#                     make -C KDIR ARGS; when KDIR is inside the build root,
#                     run there, with this tree visible at the same path
#                     (build-module.sh builds every module through this)
#   debian-kernels.sh root
#                     make the build root if need be and print its path
#   debian-kernels.sh install PKG...
#                     install trixie's packages in the root (e.g. dkms)
#   debian-kernels.sh exec CMD...
#                     run CMD in the root, this tree at its own path
#   debian-kernels.sh lockfile
#                     print the path of the root's lock (see lock_root)
#
# Why a build root: trixie-backports' kbuild programs (fixdep, modpost) are
# linked against trixie's glibc and the kernels' configuration names gcc-14;
# neither runs on the Debian 12 host. debootstrap makes a minimal trixie
# root (about 20 s and 800 MB with two kernels' headers), cached in
# ${TOFUTEX_CACHE:-/var/cache/tofutex}/trixie-root and reused, as the debug
# kernel is; its package index is refreshed when older than a day, so that
# "newest upload" means the archive's newest. The harness's user space is
# static or packed from the host: only the module is built in the root.
#
# Where the files are: trixie-backports' index keeps every signed image
# (linux-image-<rel>, whose vmlinuz moved to linux-binary-<rel> in 6.19)
# but only the newest series' headers; older headers, their -common,
# linux-kbuild (and from 6.18 linux-base) are still in the pool, under names made from the image's
# version. Building for a kernel needs its headers' packages from there.
#
# Needs root (debootstrap, chroot, a private mount namespace). Environment:
# TOFUTEX_CACHE (cache root), TOFUTEX_MIRROR (default
# http://deb.debian.org/debian), TOFUTEX_SECURITY_MIRROR (default
# http://deb.debian.org/debian-security).
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
cache=${TOFUTEX_CACHE:-/var/cache/tofutex}
root=$cache/trixie-root
kernels=$cache/kernels
mirror=${TOFUTEX_MIRROR:-http://deb.debian.org/debian}
security=${TOFUTEX_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
# Bump when the root's package set or layout changes: the root is remade.
layout=1
# What building a module for Debian's kernels needs: the compiler the
# kernels name, make, libc headers and perl (the W=1 build's kernel-doc).
root_pkgs=(gcc make libc6-dev perl xz-utils zstd)

die() {
	echo "debian-kernels.sh: $*" >&2
	exit 1
}

# in_root CMD...: run CMD in the root (in its /), /proc mounted, this tree
# at its own path, in a private mount namespace that goes away with it.
in_root() {
	# shellcheck disable=SC2016 # the script is for the inner sh
	unshare -m --propagation private sh -c '
		r=$1 t=$2
		shift 2
		mount -t proc proc "$r/proc" &&
		mkdir -p "$r$t" && mount --bind "$t" "$r$t" &&
		exec chroot "$r" "$@"' sh "$root" "$top" "$@"
}

apt_in_root() {
	# The root's resolver settings are the host's as they are now: a root
	# made on another network, or before the host's changed, cannot
	# resolve the mirror with the copy debootstrap made.
	rm -f "$root/etc/resolv.conf"
	cp -L /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
	in_root env DEBIAN_FRONTEND=noninteractive apt-get -q -y \
		-o Acquire::Retries=3 --no-install-recommends "$@"
}

# make_root: debootstrap the root (once), keep its index fresh. The caller
# holds the root's lock (lock_root).
make_root() {
	local stamp=$root/.tofutex-root-$layout log

	if [ ! -e "$stamp" ]; then
		[ "$(id -u)" = 0 ] || die "making the trixie build root needs root"
		command -v debootstrap >/dev/null ||
			die "debootstrap is missing (tests/deps.sh all)"
		echo "debian-kernels.sh: making the trixie build root in $root" >&2
		rm -rf "$root"
		log=$cache/trixie-root.log
		if ! debootstrap --variant=minbase trixie "$root" "$mirror" >"$log" 2>&1; then
			tail -n 20 "$log" >&2
			die "debootstrap failed (log: $log)"
		fi
		rm -f "$root/etc/apt/sources.list"
		cat >"$root/etc/apt/sources.list.d/debian.sources" <<-EOF
		Types: deb
		URIs: $mirror
		Suites: trixie trixie-updates trixie-backports
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

		Types: deb
		URIs: $security
		Suites: trixie-security
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
		EOF
		apt_in_root update >"$log" 2>&1 || { tail -n 20 "$log" >&2; die "apt-get update in the root failed"; }
		apt_in_root install "${root_pkgs[@]}" >>"$log" 2>&1 ||
			{ tail -n 20 "$log" >&2; die "installing the root's compilers failed (log: $log)"; }
		touch "$stamp" "$root/.tofutex-index"
	elif [ -z "$(find "$root/.tofutex-index" -mmin -1440 2>/dev/null)" ]; then
		if apt_in_root update >/dev/null 2>&1; then
			touch "$root/.tofutex-index"
		else
			echo "debian-kernels.sh: apt-get update in the root failed; using the old index" >&2
		fi
	fi
}

# lock_root [-s]: one run at a time changes the root (debootstrap,
# apt-get), holding the lock alone; builds and commands in the root (make,
# exec) hold it shared, so that two make check runs on one machine take
# turns and no build sees headers half installed or pruned. A caller that
# changes the root across many commands (deb.sh installs and purges its
# packages there) holds the lock alone for all of them ("lockfile" names
# it) and sets TOFUTEX_ROOT_LOCKED to its path: the commands it runs
# through this script take no lock of their own, which would wait for it
# for ever.
lock_root() {
	[ "$(id -u)" = 0 ] ||
		die "Debian's newer kernels need root: the trixie build root is made with debootstrap and used through chroot"
	mkdir -p "$cache" || die "cannot write $cache; set TOFUTEX_CACHE"
	[ "${TOFUTEX_ROOT_LOCKED-}" = "$cache/.trixie-root.lock" ] && return
	exec {lk}>"$cache/.trixie-root.lock"
	flock "$@" "$lk"
}

# releases: every amd64 kernel release in the root's index, with "rt" or
# "plain" and its series: "REL FLAVOUR SERIES", oldest first.
releases() {
	in_root apt-cache pkgnames linux-image- |
		sed -n 's/^linux-image-\([0-9][0-9.]*+deb[0-9.]*-\(rt-\)\{0,1\}amd64\)$/\1/p' |
		sort -uV | awk '{
			fl = ($1 ~ /-rt-amd64$/) ? "rt" : "plain"
			split($1, v, ".")
			print $1, fl, v[1] "." v[2]
		}'
}

# pick LIST COND WHAT: the newest release of LIST ("REL SERIES FLAVOUR"
# lines) for which the awk condition COND holds; fails naming WHAT.
pick() {
	local r

	r=$(awk "$2 { print \$1 }" <<<"$1" | tail -n 1)
	[ -n "$r" ] || die "the archive's index has no $3"
	echo "$r"
}

# find_set WORD...: the releases the words name, each once.
find_set() {
	local all w ser fl

	all=$(releases)
	[ -n "$all" ] || die "no kernel in the root's package index"
	# The newest release of each series and flavour: "REL SERIES FLAVOUR".
	all=$(awk '{ last[$3 " " $2] = $1 } END { for (k in last) print last[k], k }' <<<"$all" | sort -V)
	for w in "$@"; do
		case $w in
		all)
			awk '{ print $1 }' <<<"$all"
			;;
		newest)
			awk '$3 == "plain" { print $1 }' <<<"$all" | tail -n 1
			;;
		default)
			pick "$all" '$2 == "6.18" && $3 == "plain"' "the 6.18 LTS"
			pick "$all" '$2 ~ /^[7-9]\./ && $3 == "plain"' "a 7.x kernel"
			pick "$all" '$2 ~ /^[7-9]\./ && $3 == "rt"' "a 7.x -rt kernel"
			;;
		*+deb*-amd64)
			awk -v r="$w" '$1 == r { print $1; f = 1 } END { exit !f }' <<<"$all" ||
				die "no $w in the archive's index (newest of each series: $(awk '{ printf "%s ", $1 }' <<<"$all"))"
			;;
		*)
			ser=${w%-rt}
			fl=plain
			[ "$ser" = "$w" ] || fl=rt
			awk -v s="$ser" -v f="$fl" '$2 == s && $3 == f { print $1; n = 1 } END { exit !n }' <<<"$all" ||
				die "no kernel series '$w' in the archive's index (series: $(awk '{ printf "%s%s ", $2, $3 == "rt" ? "-rt" : "" }' <<<"$all"))"
			;;
		esac
	done | awk '!seen[$0]++'
}

# pool_get DIR NAME VERSION ARCH: download NAME's .deb from the pool into
# DIR; false when the pool has none.
pool_get() {
	local dir=$1 name=$2 ver=$3 arch=$4 file

	file=${name}_${ver//:/%3a}_$arch.deb
	curl -fsS --retry 3 -o "$dir/$file" "$mirror/pool/main/l/linux/$file" 2>/dev/null
}

# fetch_one REL: headers in the root, vmlinuz in the cache.
fetch_one() {
	local rel=$1 ver abi flav dl img f debs

	case $rel in
	[0-9]*+deb*-amd64) ;;
	*) die "fetch: $rel is not a release (find turns series into releases)" ;;
	esac
	ver=$(in_root apt-cache show --no-all-versions "linux-image-$rel" 2>/dev/null |
	      sed -n 's/^Version: //p' | head -n 1)
	[ -n "$ver" ] || die "linux-image-$rel is not in the archive's index"
	if [ ! -e "$root/usr/src/linux-headers-$rel/Module.symvers" ]; then
		dl=$root/tmp/tofutex-debs
		rm -rf "$dl"
		mkdir -p "$dl"
		if [ -n "$(in_root apt-cache pkgnames "linux-headers-$rel")" ]; then
			apt_in_root install "linux-headers-$rel" >"$dl.log" 2>&1 ||
				{ tail -n 20 "$dl.log" >&2; die "headers for $rel did not install"; }
		else
			# Left the index: the same version's packages from the pool.
			abi=${rel%-amd64}
			abi=${abi%-rt}
			flav=
			case $rel in *-rt-amd64) flav=-rt ;; esac
			# -rt headers share the plain -common from 6.13 on;
			# 6.12's have a -common-rt of their own.
			pool_get "$dl" "linux-headers-$rel" "$ver" amd64 &&
			{ { [ -n "$flav" ] &&
			    pool_get "$dl" "linux-headers-$abi-common$flav" "$ver" all; } ||
			  pool_get "$dl" "linux-headers-$abi-common" "$ver" all; } &&
			pool_get "$dl" "linux-kbuild-$abi" "$ver" amd64 ||
				die "the headers of $rel ($ver) are not in $mirror/pool"
			# From 6.18 the headers also depend on linux-base-<rel>.
			pool_get "$dl" "linux-base-$rel" "$ver" amd64 || true
			debs=()
			for f in "$dl"/*.deb; do debs+=("/tmp/tofutex-debs/${f##*/}"); done
			apt_in_root install "${debs[@]}" >"$dl.log" 2>&1 ||
				{ tail -n 20 "$dl.log" >&2; die "headers for $rel did not install"; }
		fi
		rm -rf "$dl"
	fi
	img=$kernels/$rel/vmlinuz
	if [ ! -s "$img" ]; then
		dl=$root/tmp/tofutex-img
		rm -rf "$dl" "$img.tmp"
		mkdir -p "$dl" "$kernels/$rel"
		# From 6.19 the image package only depends on linux-binary-<rel>.
		for pkg in "linux-binary-$rel" "linux-image-$rel"; do
			[ -n "$(in_root apt-cache pkgnames "$pkg")" ] || continue
			in_root sh -c 'cd /tmp/tofutex-img && apt-get -q download "$0"' \
				"$pkg" >/dev/null 2>&1 ||
				die "downloading $pkg failed"
			dpkg-deb --fsys-tarfile "$dl"/"$pkg"_*.deb |
				tar -xO --wildcards "*/vmlinuz-$rel" "*/$rel/vmlinuz" \
				>"$img.tmp" 2>/dev/null || true
			[ -s "$img.tmp" ] && break
		done
		rm -rf "$dl"
		[ -s "$img.tmp" ] || die "no vmlinuz for $rel in its packages"
		mv "$img.tmp" "$img"
	fi
	# Asked for now: prune() leaves it to the run that asked (below).
	touch "$kernels/$rel"
	echo "$rel $root/usr/src/linux-headers-$rel $img"
}

# prune REL...: a series' older uploads are replaced by its newest: remove
# the headers (with their -common, kbuild and base packages, which a plain
# and an -rt release of one upload share) and the vmlinuz of every fetched
# release that is neither the newest of its series and flavour nor one of
# RELs (asked for by name), so that the cache keeps one release per series
# however long it lives. A release some run fetched or asked for in the
# last day stays: that run may boot it or build for it after this one's
# index update made it stale (the next prune after that day takes it).
prune() {
	local keep rel abi stale=() live=() pkgs

	keep=$(find_set all; printf '%s\n' "$@")
	for rel in $(cd "$root/usr/src" && ls -d linux-headers-*-amd64 2>/dev/null |
		     sed 's/^linux-headers-//'); do
		abi=${rel%-amd64}
		abi=${abi%-rt}
		if grep -qxF "$rel" <<<"$keep" ||
		   [ -n "$(find "$kernels/$rel" -maxdepth 0 -mmin -1440 2>/dev/null)" ]; then
			live+=("$abi")
		else
			stale+=("$rel")
		fi
	done
	[ ${#stale[@]} -gt 0 ] || return 0
	for rel in "${stale[@]}"; do
		rm -rf "${kernels:?}/$rel"
		abi=${rel%-amd64}
		abi=${abi%-rt}
		# An upload one of the kept releases still uses stays.
		printf '%s\n' "${live[@]}" | grep -qxF "$abi" && continue
		pkgs=$(in_root dpkg-query -W -f='${Package}\n' 2>/dev/null |
		       grep -F -- "-$abi" || true)
		[ -z "$pkgs" ] && continue
		echo "debian-kernels.sh: removing $abi's headers (superseded)" >&2
		# shellcheck disable=SC2086 # one package name per word
		in_root env DEBIAN_FRONTEND=noninteractive dpkg --purge $pkgs >/dev/null ||
			echo "debian-kernels.sh: could not remove $pkgs from the root" >&2
	done
}

case ${1-} in
root)
	lock_root
	make_root
	echo "$root"
	;;
find)
	shift
	lock_root
	make_root
	find_set "${@:-default}"
	;;
fetch)
	shift
	lock_root
	make_root
	# Each in a subshell: one that fails is reported, the others fetched.
	rc=0
	for rel in "$@"; do
		(fetch_one "$rel") || rc=1
	done
	prune "$@"
	exit $rc
	;;
install)
	shift
	lock_root
	make_root
	missing=()
	for p in "$@"; do
		in_root dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
			missing+=("$p")
	done
	[ ${#missing[@]} -eq 0 ] || apt_in_root install "${missing[@]}" >/dev/null ||
		die "installing ${missing[*]} in the root failed"
	;;
exec)
	shift
	lock_root -s
	in_root "$@"
	;;
lockfile)
	echo "$cache/.trixie-root.lock"
	;;
make)
	kdir=$(realpath "$2")
	shift 2
	case $kdir in
	"$root"/*)
		lock_root -s
		in_root make -C "${kdir#"$root"}" "$@"
		;;
	*) exec make -C "$kdir" "$@" ;;
	esac
	;;
*)
	echo "usage: $0 find WORD... | fetch REL... | make KDIR ARGS... | root | install PKG... | exec CMD... | lockfile" >&2
	exit 2
	;;
esac
