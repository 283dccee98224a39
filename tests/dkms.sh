#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/dkms.sh check [KVER...]    (make dkms-check)
# tests/dkms.sh install [KVER...]  (make dkms-install)
# tests/dkms.sh uninstall          (make dkms-uninstall)
#
# check: proves that dkms.conf works from a clean copy of the sources:
# `dkms add`, then `dkms build` and `dkms install` for each kernel (default:
# every installed Debian 6.1 and 6.12 kernel, and the newest Debian 13
# kernel with trixie's dkms in the trixie build root), checks each module's
# version and vermagic, then `dkms remove`. DKMS runs with its own trees
# under a temporary directory (--dkmstree, --sourcetree, --installtree,
# --no-depmod), so the system's DKMS state and /lib/modules are untouched.
#
# install: the real thing, for a host that can load modules: checks that
# each kernel (default: the running one) has its headers, then the module
# sources (only what DKMS needs) go to /usr/src/tofutex-<version>, dkms
# install for each kernel, and the Debian package's tofutex.service,
# enabled, loads the module at boot where one was built for the running
# kernel. When a build fails, the DKMS entry and the sources are removed
# again.
#
# uninstall: dkms remove --all, delete /usr/src/tofutex-<version> and the
# unit (and a modules-load.d entry, if there is one).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cmd=${1-}
shift || true

die() {
	echo "dkms.sh: $*" >&2
	exit 1
}

version=$(sed -n 's/^#define[[:space:]]*TOFUTEX_MODULE_VERSION[[:space:]]*"\(.*\)".*/\1/p' \
	"$top/module/tofutex.h")
conf_version=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$top/dkms.conf")
[ -n "$version" ] || die "no TOFUTEX_MODULE_VERSION in module/tofutex.h"
[ "$version" = "$conf_version" ] ||
	die "dkms.conf PACKAGE_VERSION=$conf_version but module/tofutex.h says $version"
command -v dkms >/dev/null || die "dkms is not installed (tests/deps.sh)"
[ "$(id -u)" = 0 ] || die "dkms needs root"

# copy_sources DIR: what DKMS needs, and nothing built.
copy_sources() {
	mkdir -p "$1"
	cp -a "$top/Kbuild" "$top/dkms.conf" "$top/module" "$top/uapi" "$1/"
	# Objects of an in-tree build must not reach DKMS.
	find "$1/module" -type f ! -name '*.[ch]' -delete
}

kernels() {
	if [ $# -gt 0 ]; then
		for k in "$@"; do "$top/tests/qemu/kernels.sh" resolve "$k"; done
	else
		"$top/tests/qemu/kernels.sh" list
	fi
}

# check_exclusive: dkms.conf's BUILD_EXCLUSIVE_KERNEL takes the release
# strings of every kernel Debian ships from 6.1 on, and no older one.
check_exclusive() {
	local re k bad=0

	re=$(sed -n 's/^BUILD_EXCLUSIVE_KERNEL="\(.*\)"$/\1/p' "$top/dkms.conf")
	for k in 6.1.0-57-amd64 6.1.0-57-rt-amd64 6.12.117+deb12-amd64 \
		 6.12.118+deb13-cloud-amd64 6.16.12+deb13-amd64 6.18.15+deb13-rt-amd64 \
		 7.0.13+deb13-amd64 7.3.4+deb13-rt-amd64 7.3-amd64 7.3-rt-amd64 \
		 7.2.13+deb14-amd64 10.0-amd64 6.10.0-rc1; do
		[[ $k =~ $re ]] || { echo "FAILED: BUILD_EXCLUSIVE_KERNEL refuses $k" >&2; bad=1; }
	done
	for k in 5.10.0-30-amd64 6.0.12-amd64 4.19.0-27-amd64 6.0-amd64; do
		[[ ! $k =~ $re ]] || { echo "FAILED: BUILD_EXCLUSIVE_KERNEL takes $k" >&2; bad=1; }
	done
	[ $bad = 0 ] || die "dkms.conf's BUILD_EXCLUSIVE_KERNEL is wrong"
	echo "ok: BUILD_EXCLUSIVE_KERNEL takes Debian's 6.1-7.x release strings, refuses older ones"
}

# check_trixie: the same for the newest Debian 13 kernel, as a Debian 13
# user's DKMS builds it: trixie's dkms and gcc-14, in the trixie build root
# of tests/qemu/debian-kernels.sh. Prints the release.
check_trixie() {
	local dk=$top/tests/qemu/debian-kernels.sh rel root t ko vermagic modver

	rel=$("$dk" find newest) && "$dk" fetch "$rel" >/dev/null &&
		"$dk" install dkms kmod || die "no trixie build root"
	root=$("$dk" root)
	echo "== dkms build/install tofutex/$version for $rel (trixie's dkms, in $root)" >&2
	t=$(mktemp -d "$root/tmp/tofutex-dkms.XXXXXX")
	copy_sources "$t/tree"
	mkdir -p "$t/dkms" "$t/src" "$t/install/$rel"
	# $0: the private trees' directory in the root, $1 version, $2 kernel,
	# $3 what to do.
	# shellcheck disable=SC2016 # expanded in the root's shell
	set -- sh -c 'd="dkms --dkmstree $0/dkms --sourcetree $0/src --installtree $0/install"
		k="-m tofutex -v $1 -k $2 --kernelsourcedir /lib/modules/$2/build"
		if [ "$3" = remove ]; then
			$d remove --no-depmod -m tofutex -v "$1" --all
		else
			$d add "$0/tree" && $d build $k && $d install --no-depmod $k
		fi' "${t#"$root"}" "$version" "$rel"
	if ! "$dk" exec "$@" install >"$t.log" 2>&1; then
		cat "$t.log" >&2
		tail -n 30 "$t/dkms/tofutex/$version/build/make.log" >&2 2>/dev/null || true
		rm -rf "$t" "$t.log"
		echo "FAILED: dkms for $rel" >&2
		echo "$rel"
		return 1
	fi
	ko=$(grep -o "/updates/dkms/tofutex\.ko[.a-z]*" "$t.log" | head -n 1)
	ko=$t/install/$rel$ko
	vermagic=$(modinfo -F vermagic "$ko" 2>/dev/null | cut -d' ' -f1)
	modver=$(modinfo -F version "$ko" 2>/dev/null)
	"$dk" exec "$@" remove >>"$t.log" 2>&1 || { cat "$t.log" >&2; die "dkms remove failed in the root"; }
	rm -rf "$t" "$t.log"
	echo "$rel"
	if [ "$vermagic" != "$rel" ] || [ "$modver" != "$version" ]; then
		echo "FAILED: $rel: installed module has vermagic '$vermagic', version '$modver'" >&2
		return 1
	fi
	echo "ok: $rel: updates/dkms/${ko##*/} (vermagic $vermagic, version $modver; trixie's dkms)" >&2
}

case $cmd in
check)
	check_exclusive
	tmp=$(mktemp -d /tmp/tofutex-dkms.XXXXXX)
	trap 'rm -rf "$tmp"' EXIT
	copy_sources "$tmp/tree"
	d=(dkms --dkmstree "$tmp/dkms" --sourcetree "$tmp/src"
	   --installtree "$tmp/install")
	mkdir -p "$tmp/dkms" "$tmp/src" "$tmp/install"
	"${d[@]}" add "$tmp/tree" >"$tmp/add.log" 2>&1 || {
		cat "$tmp/add.log" >&2
		die "dkms add failed"
	}
	fails=0
	list=$(kernels "$@")
	[ -n "$list" ] || die "no kernels to build for"
	for k in $list; do
		echo "== dkms build/install tofutex/$version for $k"
		start=$(date +%s)
		# The install tree stands for /lib/modules: one directory per kernel.
		mkdir -p "$tmp/install/$k"
		log=$tmp/dkms-$k.log
		if ! "${d[@]}" build -m tofutex -v "$version" -k "$k" >"$log" 2>&1 ||
		   ! "${d[@]}" install --no-depmod -m tofutex -v "$version" -k "$k" >>"$log" 2>&1; then
			cat "$log" >&2
			f=$tmp/dkms/tofutex/$version/build/make.log
			if [ -f "$f" ]; then
				tail -n 30 "$f" >&2
			fi
			echo "FAILED: dkms for $k" >&2
			fails=$((fails + 1))
			continue
		fi
		ko=$(find "$tmp/install/$k/updates/dkms" -name 'tofutex.ko*' | head -n 1)
		vermagic=$(modinfo -F vermagic "$ko" 2>/dev/null | cut -d' ' -f1)
		modver=$(modinfo -F version "$ko" 2>/dev/null)
		if [ -z "$ko" ] || [ "$vermagic" != "$k" ] || [ "$modver" != "$version" ]; then
			echo "FAILED: $k: installed module '${ko:-none}' has vermagic '$vermagic', version '$modver'" >&2
			fails=$((fails + 1))
			continue
		fi
		echo "ok: $k: ${ko#"$tmp"/install/} (vermagic $vermagic, version $modver, $(($(date +%s) - start)) s)"
	done
	"${d[@]}" remove --no-depmod -m tofutex -v "$version" --all >"$tmp/remove.log" 2>&1 ||
		{ cat "$tmp/remove.log" >&2; die "dkms remove failed"; }
	if [ $# -eq 0 ]; then
		trixie=$(check_trixie) || fails=$((fails + 1))
		list="$list $trixie"
	fi
	if [ "$fails" != 0 ]; then
		echo "dkms-check: $fails kernel(s) failed"
		exit 1
	fi
	echo "dkms-check: tofutex/$version builds and installs with DKMS for: $(tr '\n' ' ' <<<"$list")"
	;;
install)
	src=/usr/src/tofutex-$version
	if [ $# -eq 0 ]; then
		set -- "$(uname -r)"
	fi
	# Every kernel's headers first: a failure must leave nothing behind.
	for k in "$@"; do
		[ -d "/lib/modules/$k/build" ] || die "no headers for kernel $k (/lib/modules/$k/build).
  Install them (Debian/Ubuntu: apt-get install linux-headers-$k; Fedora:
  dnf install kernel-devel-$k), then run make dkms-install again. Until
  then programs using libtofutex or tofutex-run work on futex(2)."
	done
	if dkms status -m tofutex -v "$version" | grep -q .; then
		dkms remove -m tofutex -v "$version" --all
	fi
	rm -rf "$src"
	copy_sources "$src"
	undo() {
		dkms remove -m tofutex -v "$version" --all >/dev/null 2>&1 || true
		rm -rf "$src"
		echo "dkms.sh: install failed; removed tofutex/$version from DKMS and $src again" >&2
	}
	trap undo ERR
	dkms add -m tofutex -v "$version"
	for k in "$@"; do
		dkms install -m tofutex -v "$version" -k "$k"
	done
	trap - ERR
	# Loaded at boot by the Debian package's unit, which skips a kernel
	# without the module quietly (a modules-load.d entry would log
	# "Failed to find module" at each such boot); without systemd,
	# /etc/modules (README.md).
	if [ -d /run/systemd/system ]; then
		install -m 644 "$top/debian/tofutex-dkms.tofutex.service" \
			/etc/systemd/system/tofutex.service
		systemctl daemon-reload
		systemctl enable tofutex.service
		echo "installed; loaded at boot from now on (tofutex.service); load it now with: modprobe tofutex"
	else
		echo "installed; load it with: modprobe tofutex (at boot: add tofutex to /etc/modules)"
	fi
	if command -v mokutil >/dev/null && mokutil --sb-state 2>/dev/null | grep -q 'enabled'; then
		echo "Secure Boot is on: if modprobe says \"Key was rejected by service\", enrol DKMS's key"
		echo "  (mokutil --import /var/lib/dkms/mok.pub, reboot, \"Enroll MOK\"); see README.md."
	fi
	;;
uninstall)
	if dkms status -m tofutex -v "$version" | grep -q .; then
		dkms remove -m tofutex -v "$version" --all
	fi
	if [ -e /etc/systemd/system/tofutex.service ]; then
		systemctl disable tofutex.service 2>/dev/null || true
		rm -f /etc/systemd/system/tofutex.service
		systemctl daemon-reload 2>/dev/null || true
	fi
	rm -rf "/usr/src/tofutex-$version" /etc/modules-load.d/tofutex.conf
	;;
*)
	echo "usage: $0 check [KVER...] | install [KVER...] | uninstall" >&2
	exit 2
	;;
esac
