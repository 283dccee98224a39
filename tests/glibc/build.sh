#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/glibc/build.sh OUTDIR - build glibc's own tests about mutexes,
# condition variables and their cancellation (tests.list) against the
# installed glibc, dynamically linked, into OUTDIR/bin.
#
# The sources come from Debian's glibc-source package (the glibc this
# machine and the guests run): only glibc's support/ library, the tests and
# the few self-contained headers they include are unpacked, into
# OUTDIR/src; nothing of glibc's is kept in this tree. support/ is compiled
# from that source as glibc's build would (its test driver, check.h, the
# xpthread_* wrappers ...), with config.h from here standing in for
# configure's. Tests are compiled with the flags glibc's Makefiles give
# them (-fexceptions for the tst-*x* variants, -std= for
# tst-initializers1-*). A test of tests.list that does not build is an
# error: the list says why the others are left out.
#
# OUTDIR also gets what tests/glibc/run.sh needs: tests.list,
# known-failures, run.sh and glibc's .expect files. A test is rebuilt when
# the source package, config.h or this script changed.
#
# Environment: CC (default cc), GLIBC_SOURCE (the glibc-*.tar.xz).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build.sh OUTDIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cc=${CC:-cc}

die() {
	echo "tests/glibc/build.sh: $*" >&2
	exit 1
}

tarball=${GLIBC_SOURCE:-$(printf '%s\n' /usr/src/glibc/glibc-*.tar.xz | sort -V | tail -n 1)}
if [ ! -r "$tarball" ]; then
	die "no glibc source: install Debian's glibc-source (tests/deps.sh glibc)"
fi
ver=$(basename "$tarball" .tar.xz)
ver=${ver#glibc-}
have=$(getconf GNU_LIBC_VERSION | awk '{ print $2 }')
[ "$ver" = "$have" ] || die "$tarball is glibc $ver; this system runs glibc $have"
top=glibc-$ver
src=$out/src/$top

# support/ sources the chosen tests link with (what their link pulls in
# from glibc's libsupport.a), and the headers of glibc's include/ they
# need, each self-contained.
support=(check delayed_exit oom_error support_mutex_pi_monotonic
	support_paths support_record_failure support_test_compare_failure
	support_test_main support_test_verify_impl temp_file timespec
	timespec-add timespec-sub write_message xasprintf xcalloc xchdir
	xclock_gettime xclose xfclose xfopen xfork xftruncate xmalloc xmmap
	xmunmap xpthread_attr_destroy xpthread_attr_init
	xpthread_attr_setstacksize xpthread_barrier_destroy
	xpthread_barrier_init xpthread_barrier_wait xpthread_cancel
	xpthread_check_return xpthread_cond_wait xpthread_create
	xpthread_detach xpthread_join xpthread_mutex_consistent
	xpthread_mutex_destroy xpthread_mutex_init xpthread_mutex_lock
	xpthread_mutex_unlock xpthread_mutexattr_destroy
	xpthread_mutexattr_init xpthread_mutexattr_setprotocol
	xpthread_mutexattr_setpshared xpthread_mutexattr_setrobust
	xpthread_mutexattr_settype xpthread_rwlock_destroy
	xpthread_rwlock_init xpthread_rwlock_rdlock xpthread_rwlock_unlock
	xpthread_rwlock_wrlock xpthread_rwlockattr_init
	xpthread_rwlockattr_setkind_np xpthread_sigmask xsignal xwaitpid
	xwrite)
headers=(array_length.h intprops.h libc-diag.h)

# --- unpack -----------------------------------------------------------------
stamp=$out/src/.unpacked
if [ ! -e "$stamp" ] || [ "$tarball" -nt "$stamp" ] || [ "$here/build.sh" -nt "$stamp" ]; then
	echo "glibc tests: unpacking $tarball"
	rm -rf "$out/src"
	mkdir -p "$out/src"
	members=("$top/support/*" "$top/test-skeleton.c" "$top/sysdeps/pthread/tst-*"
		 "$top/nptl/tst-*")
	for h in "${headers[@]}"; do members+=("$top/include/$h"); done
	tar -xJf "$tarball" -C "$out/src" --wildcards "${members[@]}"
	touch "$stamp"
fi

# The newest of what every object depends on.
newer_than() {
	local f=$1 dep
	shift
	[ -e "$f" ] || return 1
	for dep in "$stamp" "$here/config.h" "$here/build.sh" "$@"; do
		[ "$f" -nt "$dep" ] || return 1
	done
}

# glibc's headers shadow the system's in its own build (include/): here
# only the self-contained ones the sources need are on the path.
compat=$out/include
mkdir -p "$compat"
for h in "${headers[@]}"; do ln -sfn "$src/include/$h" "$compat/$h"; done
ln -sfn "$here/config.h" "$compat/config.h"
cppflags=(-D_GNU_SOURCE -include config.h -I"$src" -I"$src/support" -I"$compat")
cflags=(-std=gnu11 -O2 -pthread)

# --- support/ ---------------------------------------------------------------
# support_paths.c's paths serve glibc's own build tree and test container,
# which these tests do not use.
paths=(-DSRCDIR_PATH="\"$src\"" -DOBJDIR_PATH="\"$out\""
       -DOBJDIR_ELF_LDSO_PATH="\"/lib64/ld-linux-x86-64.so.2\""
       -DINSTDIR_PATH='"/usr"' -DLIBDIR_PATH='"/usr/lib"'
       -DBINDIR_PATH='"/usr/bin"' -DSBINDIR_PATH='"/usr/sbin"'
       -DSLIBDIR_PATH='"/lib"' -DROOTSBINDIR_PATH='"/sbin"'
       -DCOMPLOCALEDIR_PATH='"/usr/lib/locale"')
mkdir -p "$out/support"
objs=()
for s in "${support[@]}"; do
	o=$out/support/$s.o
	objs+=("$o")
	newer_than "$o" && continue
	extra=()
	[ "$s" = support_paths ] && extra=("${paths[@]}")
	"$cc" "${cppflags[@]}" "${cflags[@]}" "${extra[@]}" -c -o "$o" "$src/support/$s.c"
done
lib=$out/libsupport.a
if ! newer_than "$lib" "${objs[@]}"; then
	rm -f "$lib"
	ar rcs "$lib" "${objs[@]}"
fi

# --- the tests --------------------------------------------------------------
# build_one NAME DIR: one test, with glibc's per-test flags; on failure
# its compiler output is in OUTDIR/bin/NAME.err.
build_one() {
	local name=$1 d=$2 bin=$out/bin/$1 flags=()

	newer_than "$bin" && return 0
	case $name in
	tst-cancelx*|tst-cleanupx*) flags+=(-fexceptions -fasynchronous-unwind-tables) ;;
	esac
	case $name in
	tst-cleanup2|tst-cleanupx2) flags+=(-fno-builtin) ;;
	tst-initializers1-*) flags+=(-W -Wall -Werror "-std=${name#tst-initializers1-}") ;;
	tst-initializers1) flags+=(-W -Wall -Werror) ;;
	esac
	if "$cc" "${cppflags[@]}" -I"$src/$d" -I"$src/sysdeps/pthread" "${cflags[@]}" \
		"${flags[@]}" -o "$bin" "$src/$d/$name.c" "$lib" -lrt 2>"$bin.err"; then
		rm -f "$bin.err"
	else
		rm -f "$bin"
		echo "glibc tests: $name does not build:" >&2
		head -n 5 "$bin.err" >&2
		return 1
	fi
}
export -f build_one newer_than
export out src lib stamp here cc
export cppflags_s="${cppflags[*]}" cflags_s="${cflags[*]}"

mkdir -p "$out/bin" "$out/expect"
list=$(awk '!/^#/ && NF >= 3 && $3 != "skip" { print $1, $2 }' "$here/tests.list")
n=$(wc -l <<<"$list")
echo "glibc tests: building $n tests in ${out#"$PWD"/}/bin"
# Arrays do not cross into the xargs children: rebuild them there.
status=0
# shellcheck disable=SC2016 # the child shell expands them
xargs -P "$(nproc)" -n 2 bash -c '
	read -r -a cppflags <<<"$cppflags_s"
	read -r -a cflags <<<"$cflags_s"
	build_one "$@"' _ <<<"$list" || status=1
while read -r name d; do
	[ -r "$src/$d/$name.expect" ] && cp "$src/$d/$name.expect" "$out/expect/"
done <<<"$list"
cp "$here/tests.list" "$here/known-failures" "$here/run.sh" "$out/"
[ "$status" = 0 ] || die "some tests did not build (above)"
