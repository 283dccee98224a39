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
#   glibc    compiler and glibc-source, the sources of glibc's own tests
#            (tests/glibc/): `make check-glibc`
#   deb      Debian's packaging tools and lintian: `make deb`, `make deb-check`
#   docs     the compilers, pkg-config and CMake: `make check-docs`,
#            `make check-examples` (run by `make check`)
#   native   the real programs on this machine (`make bench-native`), and
#            the tools that count their system calls and context switches
#   arm64    arm64 guests (ARCH=arm64 tests/qemu/run.sh check): the cross
#            compiler, qemu-system-arm (bookworm-backports, as QEMU for
#            x86), and the arm64 architecture in dpkg, for Debian 12's
#            arm64 kernels, busybox and Check (downloaded, never
#            installed: tests/qemu/arm64-kernels.sh)
#
# When something is missing and it cannot install (not root, no apt-get),
# it stops and names what is missing. Before it installs anything it
# prints what it will change on this host: the packages it asks for, how
# many packages apt-get will install or upgrade with them, and for `all`
# the APT source and pin it adds. It records the packages it installed
# and the files it added in /var/lib/tofutex/deps (TOFUTEX_DEPS_STATE);
#
#   tests/deps.sh undo   (make deps-undo)
#
# purges those packages (apt-get purge, then autoremove) and removes the
# APT source and pin; a package that was installed before is not touched.
#
# QEMU comes from Debian 12's backports suite (QEMU 10): the guests run
# their vCPUs in parallel host threads (-accel tcg,thread=multi), and QEMU
# 7.2's multi-threaded TCG does not keep patched kernel text coherent
# between vCPUs - a guest that flips a scheduler static key (the module's
# preempt notifiers) oopses with "int3" in __schedule. The suite is added
# with a pin of priority 100, so that only QEMU and what it needs from
# there are taken from it; everything else stays on bookworm.
set -euo pipefail

# systemtap-sdt-dev: <sys/sdt.h>, glibc's probe points in the pthread
# preload (lib/pthread/probe.h; without it the library builds without them).
# valgrind: tests/tools/run.sh (check-native) runs the drop-in under
# memcheck, helgrind and drd; gcc's sanitizer runtimes (libasan8, libtsan2,
# ...) come with build-essential. locales: the UTF-8 charmap localedef
# builds tests/preload/comma.locale with. faketime: tests/tools/run.sh
# runs it under tofutex-run (a wrapper that appends its own library to
# LD_PRELOAD). libc6-i386 (on x86-64): the 32-bit program
# tests/tools/run.sh runs under tofutex-run (built with binutils alone,
# no multilib compiler).
build=(build-essential check systemtap-sdt-dev valgrind locales faketime)
if [ "$(dpkg --print-architecture 2>/dev/null)" = amd64 ]; then
	build+=(libc6-i386)
fi
headers=(linux-headers-amd64 linux-headers-6.12-amd64)
# The kernels the harness boots (6.1: linux-*-amd64, 6.12: linux-*-6.12-*),
# QEMU and what the initramfs is made of (busybox-static, cpio, gzip; xz-utils
# and zstd unpack the kernels' compressed modules, kmod is modinfo/depmod),
# DKMS, and gnuplot for the benchmark's charts. The real programs run
# under tofutex-run in the guests (tests/programs/), packed with their
# shared libraries: sysbench, stress-ng, pigz, memcached and its load
# generator (memcslap from libmemcached-tools), and GLib's GRWLock tests
# (libglib2.0-tests); `make bench` adds the lock-bound programs (the
# native group's RocksDB, Kyoto Cabinet and SQLite). glibc-source: glibc's own tests, built by
# tests/glibc/build.sh. debootstrap and curl: the trixie root in which
# tests/qemu/debian-kernels.sh builds the module for Debian's newer kernels.
# linux-perf: perf record and perf script on the module's tracepoints in
# the guests (test_trace).
all=(linux-image-amd64 linux-headers-amd64
     linux-image-6.12-amd64 linux-headers-6.12-amd64
     busybox-static cpio gzip xz-utils zstd kmod
     check dkms gnuplot-nox build-essential
     sysbench stress-ng pigz memcached libmemcached-tools libglib2.0-tests
     rocksdb-tools kyotocabinet-utils libsqlite3-dev
     glibc-source cmake pkg-config debootstrap curl systemtap-sdt-dev valgrind
     linux-perf locales)
docs=(build-essential cmake pkg-config)
man=(groff-base mandoc)
glibc=(build-essential xz-utils glibc-source)
# The real programs `make bench-native` runs on the build machine: the
# guest's, plus xz, zstd and plzip with two threads and a threaded python3
# program; strace and perf (linux-perf) for bench/programs-count.sh. The
# lock-bound programs: RocksDB's db_bench and cache_bench (rocksdb-tools),
# Kyoto Cabinet's kccachetest and kchashtest (kyotocabinet-utils), SQLite
# for bench/drivers/sqlite-threads.c (libsqlite3-dev), memcached and
# memcaslap; valgrind for the instruction counts (bench/lockcost.sh,
# bench/profile-cost.sh).
native=(sysbench stress-ng pigz xz-utils zstd plzip python3 strace linux-perf
	rocksdb-tools kyotocabinet-utils libsqlite3-dev memcached libmemcached-tools
	valgrind)
# debian/control's Build-Depends, and what checks the result: lintian, and
# pkg-config for the program built against the installed packages.
deb=(build-essential dpkg-dev debhelper dh-dkms lintian pkg-config
     systemtap-sdt-dev)

# The arm64 guests' (arm64-kernels.sh downloads the rest with apt-get
# download and curl). The cross C library's headers are only a
# recommendation of the cross compiler, which --no-install-recommends
# leaves out.
arm64=(gcc-aarch64-linux-gnu libc6-dev-arm64-cross cpio gzip curl debootstrap)

# QEMU from bookworm-backports, at least this major version.
qemu_pkg=qemu-system-x86
qemu_min_major=10
backports_list=/etc/apt/sources.list.d/tofutex-bookworm-backports.sources
backports_pin=/etc/apt/preferences.d/tofutex-bookworm-backports

state=${TOFUTEX_DEPS_STATE:-/var/lib/tofutex/deps}

if [ "${1-}" = undo ]; then
	[ "$(id -u)" = 0 ] || { echo "deps.sh: undo needs root" >&2; exit 1; }
	if [ -s "$state/packages" ]; then
		mapfile -t pkgs < <(sort -u "$state/packages")
		echo "deps.sh: purging what tests/deps.sh installed: ${pkgs[*]}"
		DEBIAN_FRONTEND=noninteractive apt-get purge -y "${pkgs[@]}"
		DEBIAN_FRONTEND=noninteractive apt-get autoremove --purge -y
	else
		echo "deps.sh: no packages recorded in $state/packages"
	fi
	if [ -e "$state/arch-arm64" ]; then
		echo "deps.sh: removing the arm64 architecture from dpkg"
		dpkg --remove-architecture arm64 ||
			echo "deps.sh: arm64 packages are still installed: the architecture stays" >&2
	fi
	if [ -e "$backports_list" ] || [ -e "$backports_pin" ]; then
		echo "deps.sh: removing $backports_list and $backports_pin"
		rm -f "$backports_list" "$backports_pin"
		apt-get update
	fi
	rm -rf "$state"
	exit 0
fi

[ $# -gt 0 ] || set -- all
want=()
need_qemu=0
need_arm64=0
for g in "$@"; do
	case $g in
	all) want+=("${all[@]}" "${native[@]}"); need_qemu=1 ;;
	build) want+=("${build[@]}") ;;
	headers) want+=("${headers[@]}") ;;
	man) want+=("${man[@]}") ;;
	glibc) want+=("${glibc[@]}") ;;
	deb) want+=("${deb[@]}") ;;
	docs) want+=("${docs[@]}") ;;
	native) want+=("${native[@]}") ;;
	arm64) want+=("${arm64[@]}"); need_arm64=1 ;;
	*) echo "deps.sh: unknown group '$g' (all, build, headers, man, glibc, deb, docs, native, arm64)" >&2; exit 2 ;;
	esac
done

if ! command -v dpkg-query >/dev/null; then
	echo "deps.sh: no dpkg-query: this step supports Debian 12 only." >&2
	echo "  Install the equivalents of: ${want[*]}" >&2
	exit 1
fi

# A package is there when installed for this host's architecture (or
# "all"): with a foreign architecture added, dpkg-query prints one line for
# each architecture a Multi-Arch: same package is installed for.
host_arch=$(dpkg --print-architecture)
missing=()
for p in $(printf '%s\n' "${want[@]}" | sort -u); do
	dpkg-query -W -f='${Status} ${Architecture}\n' "$p" 2>/dev/null |
		grep -qxE "install ok installed ($host_arch|all)" || missing+=("$p")
done

# qemu_ok [PKG]: the installed QEMU (PKG, default $qemu_pkg) is new
# enough for parallel vCPUs.
qemu_ok() {
	local v

	v=$(dpkg-query -W -f='${Status} ${Version}' "${1:-$qemu_pkg}" 2>/dev/null || true)
	case $v in
	"install ok installed "*) ;;
	*) return 1 ;;
	esac
	v=${v##* }
	v=${v#*:}
	[ "${v%%.*}" -ge "$qemu_min_major" ] 2>/dev/null
}

# The QEMU packages to install from bookworm-backports.
qemu_pkgs=()
[ $need_qemu = 0 ] || qemu_ok || qemu_pkgs+=("$qemu_pkg")
# arm64 guests: qemu-system-arm of the same QEMU (bookworm-backports), and
# arm64 in dpkg's architectures for the kernels' and busybox's packages.
arm64_qemu_missing=0
arm64_arch_missing=0
if [ $need_arm64 = 1 ]; then
	qemu_ok qemu-system-arm || arm64_qemu_missing=1
	dpkg --print-foreign-architectures | grep -qx arm64 || arm64_arch_missing=1
	[ $arm64_qemu_missing = 0 ] || qemu_pkgs+=(qemu-system-arm)
fi
qemu_missing=0
[ ${#qemu_pkgs[@]} -eq 0 ] || qemu_missing=1
[ ${#missing[@]} -eq 0 ] && [ $qemu_missing = 0 ] && [ $arm64_arch_missing = 0 ] && exit 0

[ ${#missing[@]} -eq 0 ] || echo "deps.sh: missing Debian packages: ${missing[*]}" >&2
[ $qemu_missing = 0 ] ||
	echo "deps.sh: missing ${qemu_pkgs[*]} >= $qemu_min_major (bookworm-backports)" >&2
if ! command -v apt-get >/dev/null; then
	echo "deps.sh: no apt-get here; install them by other means." >&2
	exit 1
fi
if [ "$(id -u)" != 0 ]; then
	echo "deps.sh: not root; run as root, or install them by hand." >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
mkdir -p "$state"
echo "deps.sh: this installs on this host, with apt-get:"
[ ${#missing[@]} -eq 0 ] || echo "  ${missing[*]}"
if [ $qemu_missing = 1 ]; then
	echo "  ${qemu_pkgs[*]} from bookworm-backports (QEMU $qemu_min_major), with the APT source"
	echo "  $backports_list and the pin $backports_pin (priority 100:"
	echo "  nothing else comes from backports unless QEMU needs it)"
fi
[ $arm64_arch_missing = 0 ] ||
	echo "  the arm64 architecture (dpkg --add-architecture arm64): APT fetches its index"
echo "  (undo: tests/deps.sh undo, or make deps-undo)"
if [ $qemu_missing = 1 ] && [ ! -e "$backports_list" ]; then
	cat >"$backports_list" <<-'EOS'
	# Added by tofutex tests/deps.sh: QEMU 10 for parallel guest vCPUs.
	Types: deb
	URIs: http://deb.debian.org/debian
	Suites: bookworm-backports
	Components: main
	Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
	EOS
	cat >"$backports_pin" <<-'EOS'
	# Added by tofutex tests/deps.sh: nothing from backports unless asked.
	Package: *
	Pin: release n=bookworm-backports
	Pin-Priority: 100
	EOS
fi
if [ $arm64_arch_missing = 1 ]; then
	dpkg --add-architecture arm64
	touch "$state/arch-arm64"
fi
apt-get update
# count ARGS...: what `apt-get install ARGS` would install and upgrade.
count() {
	local sim

	sim=$(apt-get install -s --no-install-recommends "$@" 2>/dev/null || true)
	echo "deps.sh: apt-get will install $(grep -c '^Inst [^ ]* (' <<<"$sim" || true) packages and upgrade $(grep -c '^Inst [^ ]* \[' <<<"$sim" || true) for: $*"
}
if [ ${#missing[@]} -gt 0 ]; then
	count "${missing[@]}"
	apt-get install -y --no-install-recommends "${missing[@]}"
	printf '%s\n' "${missing[@]}" >>"$state/packages"
fi
for q in ${qemu_pkgs[@]+"${qemu_pkgs[@]}"}; do
	count -t bookworm-backports "$q"
	had_qemu=0
	dpkg-query -W -f='${Status}' "$q" 2>/dev/null | grep -q 'ok installed' && had_qemu=1
	apt-get install -y --no-install-recommends -t bookworm-backports "$q"
	[ $had_qemu = 1 ] || echo "$q" >>"$state/packages"
	qemu_ok "$q" || { echo "deps.sh: $q >= $qemu_min_major did not install" >&2; exit 1; }
done
