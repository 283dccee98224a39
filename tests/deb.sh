#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/deb.sh build           (make deb)
# tests/deb.sh check [KVER...]  (make deb-check)
#
# build: the Debian packages, with Debian's tooling (debian/,
# dpkg-buildpackage, dh-dkms): tofutex-dkms, libtofutex0, libtofutex-dev,
# tofutex-run and the source package, in build/deb/. dpkg-buildpackage writes its results
# next to the source directory, so it runs on a copy of the tree in
# build/deb/src/ (the files git knows, tracked or not ignored; everything
# but build/ outside a git checkout). Then lintian on the result: any
# error, warning or info tag fails (overrides in debian/*.lintian-overrides
# say why each is there).
#
# check: build, then, as root on this host (it needs a Debian 12 host with
# no tofutex package installed), and then again as a Debian 13 system
# installs them (check_root below):
#   1. install the four binary packages with apt-get;
#   2. `dkms status` must show tofutex installed for every kernel of
#      tests/qemu/kernels.sh list (default; or the KVERs given), and each
#      installed .ko must carry that kernel's vermagic;
#   3. compile and link programs against the installed files only, with
#      `pkg-config --cflags --libs tofutex`: tofutex(3)'s example
#      (dynamically; it must resolve libtofutex.so.0 from the package) and
#      the test programs of guest_tests (statically, for the guest);
#   4. boot each kernel in QEMU (tests/qemu/run.sh) with the module DKMS
#      built and installed there, running those programs;
#   5. purge the packages and show that nothing is left: no file any of them
#      installed, no DKMS tree, no module under /lib/modules, no dpkg record.
# The packages are purged also when a step fails.
# As a Debian 13 system: the same packages installed with trixie's apt and
# DKMS in the trixie build root (tests/qemu/debian-kernels.sh), which holds
# the headers of Debian's newer kernels: DKMS must build the module for
# each of them, tofutex(3)'s example must build with trixie's gcc and run
# on the packaged library, tofutex-run must preload, a guest must boot the
# newest of those kernels with the DKMS-built module, and the purge must
# leave nothing in the root.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
out=$top/build/deb
cmd=${1-}
shift || true
packages=(tofutex-dkms libtofutex0 libtofutex-dev tofutex-run)
# What the guests run with the package-built module: test_device (open,
# every ioctl's argument checks, fork, unload and reload of the installed
# .ko) and test_lock (the library's contended locks), scaled down to keep
# deb-check short.
guest_tests=(test_device test_lock)
guest_scale=0.2
tmp=
progs=
root_list=
dk=$top/tests/qemu/debian-kernels.sh
# in_root: "" on this host; the trixie build root's path in check_root,
# where the commands below run through "$dk" exec.
in_root=

die() {
	echo "deb.sh: $*" >&2
	exit 1
}

version=$(sed -n 's/^#define[[:space:]]*TOFUTEX_MODULE_VERSION[[:space:]]*"\(.*\)".*/\1/p' \
	"$top/module/tofutex.h")
deb_version=$(dpkg-parsechangelog -l "$top/debian/changelog" -S Version)
[ "$version" = "$deb_version" ] ||
	die "debian/changelog is at $deb_version but module/tofutex.h says $version"
arch=$(dpkg --print-architecture)
# ARCH=arm64 on an amd64 host (build only): cross-built into
# build/deb/arm64/ (see build()).
cross=
if [ "${ARCH:-$arch}" != "$arch" ]; then
	[ "$ARCH" = arm64 ] ||
		die "ARCH=$ARCH: only arm64 is cross-built"
	cross=$ARCH
	arch=$ARCH
	out=$top/build/deb/$arch
fi

# copy_tree DIR: the sources as a source package should hold them.
copy_tree() {
	rm -rf "$1"
	mkdir -p "$1"
	# A tree that is not a checkout's top (an unpacked release tarball,
	# even one unpacked under a checkout's ignored build/) is copied whole.
	if [ "$(git -C "$top" rev-parse --show-toplevel 2>/dev/null)" = "$top" ]; then
		# Files deleted but not committed are listed and not there.
		git -C "$top" ls-files -z -co --exclude-standard |
			(cd "$top" && while IFS= read -r -d '' f; do
				[ -e "$f" ] && printf '%s\0' "$f"
			done | xargs -0 cp --parents -a -t "$1")
	else
		(cd "$top" && tar -c --exclude=./build .) | tar -x -C "$1"
	fi
}

# lint CHANGES: lintian, as an unprivileged user when run as root (lintian
# unpacks what it checks, and says so itself).
lint() {
	# shellcheck disable=SC2054 # --fail-on takes one comma-separated list
	local l=(lintian --info --display-info --fail-on error,warning,info "$1")

	if [ "$(id -u)" = 0 ]; then
		setpriv --reuid=nobody --regid=nogroup --clear-groups env HOME=/tmp "${l[@]}"
	else
		"${l[@]}"
	fi
}

build() {
	local src=$out/src/tofutex-$version log=$out/build.log f

	mkdir -p "$out"
	rm -f "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo "$out"/*.dsc \
		"$out"/*.tar.*
	copy_tree "$src"
	echo "== dpkg-buildpackage in ${src#"$top"/} (log: ${log#"$top"/})"
	# Our own make's variables must not reach the package's make. A
	# cross build makes the architecture-dependent packages (tofutex-dkms
	# is the amd64 build's, architecture "all") with the cross compiler;
	# the one build dependency for the host architecture,
	# systemtap-sdt-dev:arm64 (<sys/sdt.h> for the preload's probes), is
	# not installed, which would put a second architecture of it beside
	# amd64's in dpkg's database: its header comes from the arm64 sysroot
	# (tests/qemu/arm64-kernels.sh), and the dependency check is skipped.
	local flags=(-us -uc) cppflags=
	if [ -n "$cross" ]; then
		cppflags="-I$("$top/tests/qemu/arm64-kernels.sh" sysroot)/usr/include/aarch64-linux-gnu"
		flags+=(-a "$cross" -B -d)
	fi
	if ! (cd "$src" && env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u ARCH \
		DEB_CPPFLAGS_APPEND="$cppflags" \
		dpkg-buildpackage "${flags[@]}" >"$log" 2>&1); then
		tail -n 40 "$log" >&2
		die "dpkg-buildpackage failed (log: $log)"
	fi
	# Its results are in build/deb/src/; move them up one level.
	find "$out/src" -maxdepth 1 -type f -exec mv -f -t "$out" {} +
	echo "== lintian"
	lint "$out/tofutex_${version}_$arch.changes" || die "lintian found problems (above)"
	echo "lintian: clean"
	echo "packages:"
	for f in "$out"/*.deb; do
		echo "  ${f#"$top"/}"
	done
}

kernels() {
	if [ $# -gt 0 ]; then
		for k in "$@"; do "$top/tests/qemu/kernels.sh" resolve "$k"; done
	else
		"$top/tests/qemu/kernels.sh" list
	fi
}

# installed_ko KVER: the module DKMS installed for KVER.
installed_ko() {
	find "/lib/modules/$1/updates/dkms" -name 'tofutex.ko*' 2>/dev/null | head -n 1
}

# sys CMD...: CMD on the system being checked (this host, or the root).
sys() {
	if [ -n "$in_root" ]; then
		"$dk" exec "$@"
	else
		"$@"
	fi
}

# leftovers: print what the packages left behind; nothing when purged.
leftovers() {
	local p f r=$in_root

	for p in "${packages[@]}"; do
		if sys dpkg-query -W -f='${db:Status-Status}\n' "$p" 2>/dev/null |
			grep -qv '^not-installed$'; then
			echo "dpkg: $p is $(sys dpkg-query -W -f='${db:Status-Status}' "$p")"
		fi
	done
	# Directories count only when they are the packages' own (/usr and
	# the like are shared; so is /lib, a link to usr/lib on a merged-/usr
	# system, which the unit's /lib/systemd/system names).
	if [ -n "$tmp" ] && [ -s "$tmp/files" ]; then
		while IFS= read -r f; do
			if { [ -L "$r$f" ] && [ ! -d "$r$f" ]; } || [ -f "$r$f" ] ||
			   { [ -d "$r$f" ] && [[ $f == *tofutex* ]]; }; then
				echo "left: $r$f"
			fi
		done <"$tmp/files"
	fi
	[ ! -e "$r/var/lib/dkms/tofutex" ] || echo "dkms tree: $r/var/lib/dkms/tofutex"
	[ ! -e "$r/usr/src/tofutex-$version" ] || echo "sources: $r/usr/src/tofutex-$version"
	find "$r/lib/modules" -name 'tofutex.ko*' -printf 'module: %p\n' 2>/dev/null
	find "$r/etc/systemd/system" "$r/var/lib/systemd/deb-systemd-helper-enabled" \
		-name 'tofutex.service*' -printf 'systemd: %p\n' 2>/dev/null
	sys dkms status -m tofutex 2>/dev/null | sed 's/^/dkms status: /'
}

apt() {
	DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -y \
		--no-install-recommends "$@"
}

purge() {
	sys env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -y \
		purge "${packages[@]}" >"$tmp/purge.log" 2>&1 ||
		{ cat "$tmp/purge.log" >&2; return 1; }
}

# step TITLE: a heading with the seconds since deb-check started.
step() {
	echo "== [$((SECONDS - start)) s] $*"
}

# build_test NAME: tests/NAME.c as a static program in $tmp, from the
# installed <tofutex.h>, <tofutex/uapi.h> and libtofutex.a; fails if the
# compiler read any tofutex header from the tree, or none from /usr/include.
build_test() {
	local t=$1 used

	# shellcheck disable=SC2046 # pkg-config prints a word list
	(cd "$tmp" && cc -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -pthread -O2 -static \
		-I"$top/tests" -MD -MF "$t.d" -o "$t" "$top/tests/$t.c" \
		$(find "$top/tests" -maxdepth 1 -name '*.c' ! -name 'test_*.c') \
		$(pkg-config --static --cflags --libs tofutex) -lcheck -lsubunit -lm -lrt)
	used=$(sed 's/[[:space:]\\]\{1,\}/\n/g' "$tmp/$t.d" | grep -E '/tofutex(/uapi)?\.h$' | sort -u)
	if [ -z "$used" ] || grep -qv '^/usr/include/' <<<"$used"; then
		die "$t was not compiled against the installed headers only: $(tr '\n' ' ' <<<"$used")"
	fi
}

# example_source: the first program of the installed tofutex(3)'s EXAMPLES.
example_source() {
	zcat "$in_root/usr/share/man/man3/tofutex.3.gz" |
		awk '/^\.SH EXAMPLES/ { ex = 1 } ex && /^\.EX/ { on = 1; next }
		     on && /^\.EE/ { exit } on { print }' |
		sed 's/\\e/\\/g; s/\\-/-/g'
}

check() {
	local list k ko vermagic fails=0 pc so
	local multiarch start=$SECONDS

	multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)

	[ "$(id -u)" = 0 ] || die "deb-check installs packages: run it as root"
	[ -z "$(leftovers 2>/dev/null)" ] ||
		die "tofutex is already installed here (purge it first):$(printf '\n%s' "$(leftovers)")"
	list=$(kernels "$@")
	[ -n "$list" ] || die "no kernels to check"
	step "make deb"
	build

	tmp=$(mktemp -d /tmp/tofutex-deb.XXXXXX)
	trap 'echo "== purging after a failure"; purge || true; rm -rf "$tmp"' EXIT
	step "apt-get install ${packages[*]}"
	apt install "$out/tofutex-dkms_${version}_all.deb" \
		"$out/libtofutex0_${version}_$arch.deb" \
		"$out/libtofutex-dev_${version}_$arch.deb" \
		"$out/tofutex-run_${version}_$arch.deb" >"$tmp/install.log" 2>&1 ||
		{ cat "$tmp/install.log" >&2; die "installing the packages failed"; }
	grep -E '^(Building|Done|Module build|tofutex-dkms)' "$tmp/install.log" || true
	dpkg -L "${packages[@]}" | sort -u >"$tmp/files"

	step "dkms status"
	dkms status -m tofutex -v "$version" 2>"$tmp/status.err" | tee "$tmp/status"
	for k in $list; do
		ko=$(installed_ko "$k")
		vermagic=$(modinfo -F vermagic "$ko" 2>/dev/null | cut -d' ' -f1)
		if grep -qF "tofutex/$version, $k, $(uname -m): installed" "$tmp/status" &&
		   [ -n "$ko" ] && [ "$vermagic" = "$k" ]; then
			echo "ok: $k: $ko (vermagic $vermagic)"
		else
			echo "FAILED: $k: not installed by DKMS (module '${ko:-none}', vermagic '$vermagic')"
			fails=$((fails + 1))
		fi
	done

	step "tofutex.service enabled (loads the module at boot where one was built)"
	if [ -L /etc/systemd/system/sysinit.target.wants/tofutex.service ]; then
		echo "ok: /etc/systemd/system/sysinit.target.wants/tofutex.service"
	else
		echo "FAILED: tofutex.service is not enabled"
		fails=$((fails + 1))
	fi

	step "pkg-config build against the installed files"
	pc=$(pkg-config --modversion tofutex)
	[ "$pc" = "$version" ] || die "pkg-config says tofutex $pc, not $version"
	example_source >"$tmp/example.c"
	[ -s "$tmp/example.c" ] || die "no example in the installed tofutex(3)"
	# The compile line of tofutex(3), run outside the tree.
	# shellcheck disable=SC2046 # pkg-config prints a word list
	(cd "$tmp" && cc -Wall -Wextra -Werror -o example example.c \
		$(pkg-config --cflags --libs tofutex))
	# (/lib is /usr/lib on a merged-/usr system: compare real paths.)
	so=$(ldd "$tmp/example" | sed -n 's/^[[:space:]]*libtofutex\.so\.0 => \([^ ]*\) .*/\1/p')
	if [ -z "$so" ] ||
	   [ "$(readlink -f "$so")" != "$(readlink -f "/usr/lib/$multiarch/libtofutex.so.0")" ]; then
		die "the example does not load the packaged libtofutex.so.0: $(ldd "$tmp/example")"
	fi
	echo "ok: tofutex(3)'s example: cc -o example example.c \$(pkg-config --cflags --libs tofutex); it loads $so -> $(readlink -f "$so")"
	# The guest's programs, static, from the installed headers and
	# library; only tests/ (common.h, helpers) comes from the tree.
	for t in "${guest_tests[@]}"; do
		build_test "$t"
	done
	echo "ok: ${guest_tests[*]} from tests/: cc -static ... \$(pkg-config --static --cflags --libs tofutex)"

	step "tofutex-run from the package"
	# A dynamically linked program from the system, with the packaged
	# preload library mapped into it.
	maps=$(tofutex-run grep -c libtofutex-pthread /proc/self/maps) ||
		die "tofutex-run grep ... failed"
	[ "$maps" -ge 1 ] || die "tofutex-run did not preload libtofutex-pthread.so"
	echo "ok: tofutex-run grep: libtofutex-pthread.so mapped ($maps mappings)"

	step "guests with the DKMS-built module"
	for k in $list; do
		ko=$(installed_ko "$k")
		[ -n "$ko" ] || continue
		GUEST_KO=$ko PREEMPT_MODES=default GUEST_TESTS="${guest_tests[*]/#/$tmp/}" \
			TEST_ENV="TOFUTEX_TEST_SCALE=$guest_scale ${TEST_ENV-}" \
			"$top/tests/qemu/run.sh" check "$k" || fails=$((fails + 1))
	done

	step "apt-get purge"
	purge || die "purging the packages failed"
	trap 'rm -rf "$tmp"' EXIT
	step "left after the purge"
	if [ -n "$(leftovers)" ]; then
		leftovers
		fails=$((fails + 1))
	else
		echo "nothing: none of the $(wc -l <"$tmp/files") paths the packages installed, no /var/lib/dkms/tofutex, no /usr/src/tofutex-$version, no tofutex.ko under /lib/modules, no dpkg record"
	fi
	# The guest programs (static, built from the installed files) serve
	# the Debian 13 guest too.
	progs=$tmp
	trap 'rm -rf "$progs"' EXIT
	check_root || fails=$((fails + 1))
	rm -rf "$progs"
	trap - EXIT
	if [ "$fails" != 0 ]; then
		echo "deb-check: $fails failure(s)"
		exit 1
	fi
	echo "deb-check: in $((SECONDS - start)) s: the packages install, DKMS builds tofutex/$version for $(tr '\n' ' ' <<<"$list")and, as Debian 13 installs them, for $(tr '\n' ' ' <<<"$root_list")the guests pass with it, and the purges leave nothing"
}

# check_root: the packages as a Debian 13 system installs them, in the
# trixie build root (its kernels' headers are there: tests/qemu/run.sh
# fetched them for make check, or this fetches the default set).
check_root() {
	local k ko vermagic so d fails=0 newest

	step "Debian 13: the trixie build root"
	# The packages go into a root other runs build in: hold its lock
	# alone from the install to the purge, so that no build sees the
	# packages half installed and two deb-checks take turns.
	mkdir -p "$(dirname "$("$dk" lockfile)")"
	exec {root_lock}>"$("$dk" lockfile)"
	flock "$root_lock"
	export TOFUTEX_ROOT_LOCKED
	TOFUTEX_ROOT_LOCKED=$("$dk" lockfile)
	"$dk" install dkms kmod pkgconf || die "no trixie build root"
	in_root=$("$dk" root)
	root_list=$(cd "$in_root/usr/src" && find . -maxdepth 1 -name 'linux-headers-*-amd64' |
		    sed 's|^./linux-headers-||' | sort -V)
	if [ -z "$root_list" ]; then
		# shellcheck disable=SC2046 # one release per word
		"$dk" fetch $("$dk" find default) >/dev/null || die "fetching Debian 13's kernels failed"
		root_list=$(cd "$in_root/usr/src" && find . -maxdepth 1 -name 'linux-headers-*-amd64' |
			    sed 's|^./linux-headers-||' | sort -V)
	fi
	[ -z "$(leftovers 2>/dev/null)" ] ||
		die "tofutex is already installed in $in_root:$(printf '\n%s' "$(leftovers)")"
	tmp=$(mktemp -d "$in_root/tmp/tofutex-deb.XXXXXX")
	d=${tmp#"$in_root"}
	trap 'echo "== purging the root after a failure"; purge || true; rm -rf "$tmp" "$progs"' EXIT
	cp "$out/tofutex-dkms_${version}_all.deb" "$out/libtofutex0_${version}_$arch.deb" \
		"$out/libtofutex-dev_${version}_$arch.deb" "$out/tofutex-run_${version}_$arch.deb" "$tmp/"
	step "Debian 13: apt-get install ${packages[*]} (trixie's apt and dkms)"
	sys env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 -y \
		--no-install-recommends install "$d/tofutex-dkms_${version}_all.deb" \
		"$d/libtofutex0_${version}_$arch.deb" "$d/libtofutex-dev_${version}_$arch.deb" \
		"$d/tofutex-run_${version}_$arch.deb" >"$tmp/install.log" 2>&1 ||
		{ cat "$tmp/install.log" >&2; die "installing the packages in the root failed"; }
	sys dpkg -L "${packages[@]}" | sort -u >"$tmp/files"
	sys dkms status -m tofutex -v "$version" | tee "$tmp/status"
	for k in $root_list; do
		ko=$(find "$in_root/lib/modules/$k/updates/dkms" -name 'tofutex.ko*' 2>/dev/null | head -n 1)
		vermagic=$(sys modinfo -F vermagic "${ko#"$in_root"}" 2>/dev/null | cut -d' ' -f1)
		if grep -qF "tofutex/$version, $k, $(uname -m): installed" "$tmp/status" &&
		   [ "$vermagic" = "$k" ]; then
			echo "ok: $k: ${ko#"$in_root"} (vermagic $vermagic)"
		else
			echo "FAILED: $k: not installed by trixie's DKMS (module '${ko:-none}', vermagic '$vermagic')"
			fails=$((fails + 1))
		fi
	done

	step "Debian 13: tofutex(3)'s example with trixie's gcc, tofutex-run"
	example_source >"$tmp/example.c"
	# shellcheck disable=SC2016 # expanded in the root's shell
	sys sh -c 'cd "$1" && cc -Wall -Wextra -Werror -o example example.c \
		$(pkg-config --cflags --libs tofutex) && ./example' sh "$d" >"$tmp/example.log" 2>&1 ||
		{ cat "$tmp/example.log" >&2; die "tofutex(3)'s example failed in the root"; }
	so=$(sys ldd "$d/example" | sed -n 's/^[[:space:]]*libtofutex\.so\.0 => \([^ ]*\) .*/\1/p')
	[ -n "$so" ] || die "the root's example does not load libtofutex.so.0"
	echo "ok: the example builds with $(sys cc -dumpfullversion 2>/dev/null || echo '?') (gcc), runs, loads $so"
	[ "$(sys tofutex-run grep -c libtofutex-pthread /proc/self/maps)" -ge 1 ] ||
		die "tofutex-run did not preload libtofutex-pthread.so in the root"
	echo "ok: tofutex-run grep: libtofutex-pthread.so mapped"

	newest=$(tail -n 1 <<<"$root_list")
	step "Debian 13: a guest on $newest with trixie's DKMS-built module"
	ko=$(find "$in_root/lib/modules/$newest/updates/dkms" -name 'tofutex.ko*' 2>/dev/null | head -n 1)
	if [ -n "$ko" ]; then
		GUEST_KO=$ko PREEMPT_MODES=default GUEST_TESTS="${guest_tests[*]/#/$progs/}" \
			TEST_ENV="TOFUTEX_TEST_SCALE=$guest_scale ${TEST_ENV-}" \
			"$top/tests/qemu/run.sh" check "$newest" || fails=$((fails + 1))
	fi

	step "Debian 13: apt-get purge"
	purge || die "purging the packages in the root failed"
	trap 'rm -rf "$tmp" "$progs"' EXIT
	if [ -n "$(leftovers)" ]; then
		leftovers
		fails=$((fails + 1))
	else
		echo "nothing left in the root: none of the $(wc -l <"$tmp/files") paths, no DKMS tree, no module, no dpkg record"
	fi
	rm -rf "$tmp"
	trap 'rm -rf "$progs"' EXIT
	in_root=
	unset TOFUTEX_ROOT_LOCKED
	exec {root_lock}>&-
	return $((fails > 0))
}

# check_cross [WORD...]: ARCH=arm64 deb-check. The packages cross-built
# (build), then DKMS builds the module from tofutex-dkms (the amd64
# build's, architecture "all") for each arm64 kernel (default 6.12, words
# as tests/qemu/arm64-kernels.sh takes them) on this host, with the cross
# compiler (ARCH and CROSS_COMPILE in its environment; its private trees
# in a temporary directory, nothing installed: the host's strip does not
# read arm64 objects, so the module stays unstripped), and an arm64 guest
# boots each kernel with that module and runs the module's tests on it.
# An arm64 machine's DKMS makes the same build natively; the cross build
# here is the same Kbuild, dkms.conf and sources, without an arm64 root.
check_cross() {
	local w rel kdir kimage ko fails=0 pkgdir

	build
	(unset ARCH && "$0" build) || die "the amd64 packages (tofutex-dkms) do not build"
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	pkgdir=$tmp/pkg
	dpkg-deb -x "$top/build/deb/tofutex-dkms_${version}_all.deb" "$pkgdir"
	mkdir -p "$tmp/dkms"
	dkms add -m tofutex -v "$version" --sourcetree "$pkgdir/usr/src" \
		--dkmstree "$tmp/dkms" >/dev/null || die "dkms add failed"
	for w in "${@:-6.12}"; do
		read -r rel kdir kimage < <("$top/tests/qemu/arm64-kernels.sh" fetch "$w" | tail -n 1) ||
			die "no arm64 kernel $w"
		echo "== dkms build for $rel (cross)"
		if ! ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu- dkms build -m tofutex \
			-v "$version" -k "$rel" --kernelsourcedir "$kdir" \
			--sourcetree "$pkgdir/usr/src" --dkmstree "$tmp/dkms" \
			>"$tmp/dkms-$rel.log" 2>&1; then
			tail -n 30 "$tmp/dkms-$rel.log" >&2
			fails=$((fails + 1))
			continue
		fi
		ko=$(find "$tmp/dkms/tofutex/$version/$rel" -name 'tofutex.ko*' | head -n 1)
		[ -n "$ko" ] || { echo "deb.sh: dkms built no module for $rel" >&2; fails=$((fails + 1)); continue; }
		echo "ok: dkms built ${ko#"$tmp"/} ($(file -b "$ko" | cut -d, -f2))"
		ARCH=arm64 GUEST_KO=$ko GUEST_SCOPE=module PREEMPT_MODES=default \
			TESTS="${guest_tests[*]} test_tagged_addr" \
			TEST_ENV="TOFUTEX_TEST_SCALE=$guest_scale ${TEST_ENV-}" \
			"$top/tests/qemu/run.sh" check "$w" || fails=$((fails + 1))
		: "$kimage"
	done
	[ "$fails" -eq 0 ] || die "$fails arm64 kernel(s) failed (above)"
	echo "deb-check ARCH=arm64: passed"
}

case $cmd in
build)
	build
	;;
check)
	if [ -n "$cross" ]; then
		check_cross "$@"
	else
		check "$@"
	fi
	;;
*)
	echo "usage: $0 build | check [KVER...]" >&2
	exit 2
	;;
esac
