#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# Build (once per machine) the tofutex debug kernel: Debian's linux-source-6.12
# configured as tinyconfig + tests/debug-kernel/debug.config.
#
# Usage: tests/debug-kernel/build.sh [rt | packages]
#
# With "rt", the same debug kernel with PREEMPT_RT (debug.config, then
# rt.config's assignments over it): lockdep, sleeping-in-atomic checks and
# KASAN where spinlock_t is a sleeping lock and interrupts are threads.
# With "packages", only the packages the build needs are installed, so
# that a build started in the background afterwards (.ci/run) does not
# use apt beside other work.
#
# The result lives outside the checkout, in
#   ${TOFUTEX_CACHE:-/var/cache/tofutex}/debug-kernel-<hash>
# where <hash> covers the options in the config fragments (not comments),
# the linux-source-6.12 package version, the compiler version and
# BUILD_SCHEME below, so a changed input gives a new directory and an
# unchanged one is reused: a cached build is found and reported in a few
# milliseconds.
#
# The last line printed is always
#   KIMAGE=<bzImage> KDIR=<module build tree>
# Build an external module with `make -C <KDIR> M=<dir> modules`; boot
# <KIMAGE> with QEMU's -kernel. Progress goes to stderr, the kernel build's
# own output to <cache dir>/build.log (its tail is printed on failure).
#
# Environment:
#   TOFUTEX_CACHE  cache root (default /var/cache/tofutex)
#   TOFUTEX_JOBS   make -j value (default: nproc)
#   TOFUTEX_DEBUG_KERNEL_KEEP_SRC=1
#                  keep the whole built tree in <cache dir>/src (2+ GB; for
#                  working on the kernel itself) instead of deleting it
#
# Exit status: 0 with the paths printed, non-zero on any failure (missing
# packages that cannot be installed, an option of the fragment that Kconfig
# did not accept, a failed compile).
set -eu

# When run from a make recipe, the caller's flags and command-line
# variables (M=, O=, V=, ...) must not leak into the kernel's build.
unset MAKEFLAGS MFLAGS MAKELEVEL MAKEOVERRIDES

# Bump when the way the tree is built or laid out changes, so that caches
# made by an older version of this script are not reused.
BUILD_SCHEME=1

SRC_PKG=linux-source-6.12
SRC_TAR=/usr/src/linux-source-6.12.tar.xz
PKGS="$SRC_PKG build-essential bc bison flex libelf-dev libssl-dev dwarves cpio kmod"

here=$(cd "$(dirname "$0")" && pwd)
flavour=${1-}
case $flavour in
'' | packages) fragments=$here/debug.config ;;
rt) fragments="$here/debug.config $here/rt.config" ;;
*) echo "usage: $0 [rt | packages]" >&2; exit 2 ;;
esac
cache_root=${TOFUTEX_CACHE:-/var/cache/tofutex}
jobs=${TOFUTEX_JOBS:-$(nproc)}

say() { printf 'debug-kernel: %s\n' "$*" >&2; }
die() { say "error: $*"; exit 1; }

for f in $fragments; do
	[ -r "$f" ] || die "no config fragment at $f"
done
# The fragments' option lines, a later fragment's assignment replacing an
# earlier one's: what the kernel's .config must say in the end.
# shellcheck disable=SC2086 # one file per word
options=$(grep -hE '^(CONFIG_[A-Za-z0-9_]+=|# CONFIG_[A-Za-z0-9_]+ is not set)' $fragments |
	awk '{ o = $0; sub(/^# /, "", o); sub(/[= ].*/, "", o)
	       if (!(o in v)) order[n++] = o; v[o] = $0 }
	     END { for (i = 0; i < n; i++) print v[order[i]] }')

# --- Packages: install only what is missing -----------------------------
# One dpkg-query for all of them: the cached case must stay fast.
# shellcheck disable=SC2086 # word splitting of the package list is wanted
status=$(dpkg-query -W -f='${Package} ${db:Status-Status}\n' $PKGS 2>/dev/null) || true
missing=
for p in $PKGS; do
	case "
$status
" in
	*"
$p installed
"*) ;;
	*) missing="$missing $p" ;;
	esac
done
if [ -n "$missing" ]; then
	say "installing:$missing"
	sudo=
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	apt_install() {
		# shellcheck disable=SC2086 # word splitting of the list is wanted
		$sudo env DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -q --no-install-recommends $missing >&2
	}
	# A fresh machine may have no package lists yet: update once, retry.
	apt_install || { $sudo apt-get update -q >&2 && apt_install; } ||
		die "apt-get install failed for:$missing"
fi
[ -r "$SRC_TAR" ] || die "$SRC_TAR missing although $SRC_PKG is installed"
[ "$flavour" != packages ] || exit 0

# --- Cache key and fast path --------------------------------------------
src_ver=$(dpkg-query -W -f='${Version}' "$SRC_PKG")
cc_ver=$(gcc --version | head -n 1)
# Only the option lines count, so editing a comment does not cost a rebuild.
hash=$({
	printf 'scheme %s\nsource %s %s\ncc %s\n' \
		"$BUILD_SCHEME" "$SRC_PKG" "$src_ver" "$cc_ver"
	printf '%s\n' "$options"
} | sha256sum | cut -c 1-16)

dir=$cache_root/debug-kernel${flavour:+-$flavour}-$hash
kimage=$dir/bzImage
kdir=$dir/build
stamp=$dir/done

report() {
	say "kernel $src_ver, config $dir/config"
	echo "KIMAGE=$kimage KDIR=$kdir"
}

done_already() {
	[ -f "$stamp" ] && [ -f "$kimage" ] && [ -f "$kdir/Module.symvers" ]
}

if done_already; then
	report
	exit 0
fi

if ! mkdir -p "$cache_root" 2>/dev/null || [ ! -w "$cache_root" ]; then
	die "cannot write $cache_root; set TOFUTEX_CACHE to a writable directory"
fi

# Two concurrent runs (make check-debug in two shells) must not build into
# the same directory: the second waits for the first and then reuses it.
exec 9>"$cache_root/.debug-kernel-$hash.lock"
flock 9
if done_already; then
	report
	exit 0
fi

# No stamp: anything here is a leftover of an interrupted build.
rm -rf "$dir"
mkdir -p "$dir"
log=$dir/build.log
src=$dir/src
: >"$log"

fail() {
	say "error: $* (last lines of $log follow)"
	tail -n 40 "$log" >&2
	exit 1
}

# Runs make in the source tree, output to the log. ARCH=x86_64, not the
# default ARCH=x86: with ARCH=x86, 64BIT has a prompt and tinyconfig (an
# allnoconfig) turns it off, so every default is first computed for i386
# and kept after the fragment sets 64BIT=y (FRAME_WARN=1024, X86_5LEVEL,
# ...). With ARCH=x86_64, 64BIT is fixed from the start.
kmake() {
	make -C "$src" -j"$jobs" ARCH=x86_64 "$@" >>"$log" 2>&1
}

t0=$(date +%s)
say "building into $dir (log: $log)"

say "unpacking $SRC_TAR"
mkdir -p "$src"
tar -xJf "$SRC_TAR" -C "$src" --strip-components=1 ||
	fail "unpacking $SRC_TAR failed"

say "configuring: tinyconfig + $(for f in $fragments; do printf '%s ' "${f##*/}"; done)"
kmake tinyconfig || fail "make tinyconfig failed"
printf '%s\n' "$options" >"$dir/fragment"
(cd "$src" && ./scripts/kconfig/merge_config.sh -m .config "$dir/fragment") \
	>>"$log" 2>&1 || fail "merge_config.sh failed"
kmake olddefconfig || fail "make olddefconfig failed"

# Every assignment in the fragment, including "is not set", must have
# survived: Kconfig silently drops what it cannot satisfy.
bad=0
while IFS= read -r line; do
	case $line in
	CONFIG_*=*)
		opt=${line%%=*}
		want=$line
		;;
	"# CONFIG_"*" is not set")
		opt=${line#\# }
		opt=${opt%% *}
		want=
		;;
	*) continue ;;
	esac
	got=$(grep -E "^($opt=|# $opt is not set)" "$src/.config" || true)
	case $got in "# "*) got= ;; esac
	if [ "$got" != "$want" ]; then
		say "config mismatch: wanted '${want:-# $opt is not set}', got '${got:-# $opt is not set}'"
		bad=1
	fi
done <"$dir/fragment"
[ "$bad" -eq 0 ] || die "the fragments were not applied as written (see above); fix $fragments"
cp "$src/.config" "$dir/config"

t1=$(date +%s)
say "compiling with -j$jobs (about 20 CPU-minutes: some 10 minutes on 2 idle cores)"
# A full build, not just bzImage + modules_prepare: only a build that
# includes the modules step writes Module.symvers (bzImage alone writes
# vmlinux.symvers), and without Module.symvers modpost stops an external
# module build with '"<symbol>" undefined!' for every kernel symbol it uses.
# The extra cost is compiling kvm.ko and kvm-intel.ko, about 10 % of the
# total.
kmake || fail "kernel build failed"
[ -f "$src/Module.symvers" ] || fail "no Module.symvers after the build"
t2=$(date +%s)

# Keep only what building external modules needs (the same set Debian's
# linux-headers packages hold, made by the kernel's own script) plus the
# image, and drop the 2+ GB tree.
(cd "$src" && srctree=. SRCARCH=x86 CC=gcc HOSTCC=gcc MAKE=make \
	./scripts/package/install-extmod-build "$kdir") >>"$log" 2>&1 ||
	fail "install-extmod-build failed"
# Not needed by Kbuild, but some module Makefiles and people look for it.
cp "$src/.config" "$kdir/.config"
cp "$src/arch/x86/boot/bzImage" "$kimage"
cp "$src/System.map" "$dir/System.map"
[ "${TOFUTEX_DEBUG_KERNEL_KEEP_SRC:-0}" = 1 ] || rm -rf "$src"

echo "config $((t1 - t0)) s, compile $((t2 - t1)) s, total $(($(date +%s) - t0)) s" >"$stamp"
say "done: $(cat "$stamp")"
report
