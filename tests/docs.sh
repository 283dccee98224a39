#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/docs.sh docs        (make check-docs)
# tests/docs.sh examples    (make check-examples)
# tests/docs.sh dist-check  (make dist-check)
# tests/docs.sh dist-deb    (make dist-check-deb)
#
# What keeps the documentation and the release honest where a machine can
# check them; all of it runs on this host, without the module (the futex
# backend), before `make check` boots any guest.
#
# docs: the release version is one number everywhere (<tofutex.h>'s
#   TOFUTEX_VERSION_*, module/tofutex.h, dkms.conf, debian/changelog, the
#   first entry of NEWS.md); every fenced C block of README.md, and the
#   first example of tofutex(3), compiles against a staged install with
#   `pkg-config --cflags --libs tofutex` (the man page's example also
#   statically) and runs with exit status 0; every `make TARGET` that
#   README.md or HACKING.md shows exists in `make help`.
# examples: <tofutex.h> alone compiles under -std=c99 -pedantic and
#   -std=c++11 -Wzero-as-null-pointer-constant (with its initialisers),
#   -Werror; examples/*.c and the CMake project in examples/cmake build
#   against a staged install and run; the staged install, moved elsewhere,
#   still runs a program under its tofutex-run (the library found relative
#   to tofutex-run's own location, with a multiarch LIBDIR),
#   TOFUTEX_RUN_STATS=FILE names the program in FILE,
#   TOFUTEX_RUN_STATS=1 reaches stderr after sort(1) closed it, and prints
#   for the processes that locked something only (=all: for every one).
# dist-check: `make dist`, then, in the unpacked tarball (no git
#   checkout), `make lib` and `make check-examples`.
# dist-deb: `make dist`, then `make deb` in the unpacked tarball.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
cmd=${1-}
make=${MAKE:-make}
out=$top/build/docs
fails=0

die() {
	echo "docs.sh: $*" >&2
	exit 1
}

fail() {
	echo "FAILED: $*" >&2
	fails=$((fails + 1))
}

ok() {
	echo "ok: $*"
}

version=$(sed -n 's/^#define[[:space:]]*TOFUTEX_MODULE_VERSION[[:space:]]*"\(.*\)".*/\1/p' module/tofutex.h)
[ -n "$version" ] || die "no TOFUTEX_MODULE_VERSION in module/tofutex.h"

# stage DIR [LIBDIR]: `make install` of this tree into DIR, quietly.
stage() {
	local dir=$1 libdir=${2:-$1/lib}

	rm -rf "$dir"
	"$make" -C "$top" --no-print-directory install PREFIX="$dir" LIBDIR="$libdir" \
		>"$out/install.log" 2>&1 || { cat "$out/install.log" >&2; die "make install into $dir failed"; }
}

# build_run NAME SRC [CC-FLAGS...]: compile SRC against the staged
# install (PKG_CONFIG_PATH, LD_LIBRARY_PATH set by the caller) and run it
# on the futex backend.
build_run() {
	local name=$1 src=$2 bin=$out/bin/$1 log=$out/bin/$1.log

	shift 2
	mkdir -p "$out/bin"
	# shellcheck disable=SC2046 # pkg-config's output is words
	if ! ${CC:-cc} -std=c11 -Wall -Wextra -Werror -o "$bin" "$src" "$@" \
		$(pkg-config --cflags --libs ${static:+--static} tofutex) >"$log" 2>&1; then
		cat "$log" >&2
		fail "$name: does not compile"
		return
	fi
	if ! TOFUTEX_BACKEND=futex timeout 60 "$bin" >>"$log" 2>&1; then
		cat "$log" >&2
		fail "$name: exits with an error"
		return
	fi
	ok "$name: $(tail -n 1 "$log")"
}

# c_blocks FILE DIR: every ```c fenced block of FILE as DIR/block-N.c.
c_blocks() {
	awk -v dir="$2" '
		/^[[:space:]]*```c[[:space:]]*$/ { n++; f = dir "/block-" n ".c"; printf "" > f; inb = 1; next }
		inb && /^[[:space:]]*```/ { inb = 0; close(f); next }
		inb { print > f }
	' "$1"
}

# man_example PAGE OUT: the first .EX/.EE block after .SH EXAMPLES, with
# the roff escapes it uses turned back into C.
man_example() {
	awk '
		/^\.SH EXAMPLES/ { ex = 1; next }
		ex && /^\.EX/ { inb = 1; next }
		inb && /^\.EE/ { exit }
		inb { print }
	' "$1" | sed -e 's/\\e/\\/g' -e 's/\\-/-/g' -e "s/\\\\(aq/'/g" >"$2"
}

check_versions() {
	local h changelog dkms news

	h=$(awk '/^#define TOFUTEX_VERSION_(MAJOR|MINOR|PATCH)[[:space:]]/ { v = v sep $3; sep = "." } END { print v }' lib/tofutex.h)
	changelog=$(sed -n '1s/^[^(]*(\([^)]*\)).*/\1/p' debian/changelog)
	dkms=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' dkms.conf)
	news=$(sed -n 's/^## \([0-9][0-9.]*\).*/\1/p' NEWS.md | head -n 1)
	if [ "$h" = "$version" ] && [ "$changelog" = "$version" ] &&
	   [ "$dkms" = "$version" ] && [ "$news" = "$version" ] &&
	   grep -q "^#define TOFUTEX_VERSION_STRING[[:space:]]*\"$version\"" lib/tofutex.h; then
		ok "version $version in module/tofutex.h, lib/tofutex.h, dkms.conf, debian/changelog, NEWS.md"
	else
		fail "versions differ: module/tofutex.h $version, lib/tofutex.h $h, dkms.conf $dkms, debian/changelog $changelog, NEWS.md $news"
	fi
}

# The targets `make help` lists, one per line.
help_targets() {
	"$make" -C "$top" --no-print-directory help |
		sed -n 's/^ *make \([a-z][a-z0-9-]*\).*/\1/p' | sort -u
}

# The targets FILE shows in code (code blocks and `spans`): `make [VAR=x
# ...] TARGET`.
doc_targets() {
	{
		awk '/^[[:space:]]*```/ { inb = !inb; next } inb || /^    / { print }' "$1"
		# shellcheck disable=SC2016 # backticks, not an expansion
		grep -o '`[^`]*`' "$1" || true
	} | grep -oE '(^|[^a-z-])make( +[A-Za-z_]+=("[^"]*"|'"'[^']*'"'|[^ `]*))* +[a-z][a-z0-9-]*' |
		sed -E 's/.*make( +[A-Za-z_]+=("[^"]*"|'"'[^']*'"'|[^ `]*))* +//' | sort -u
}

check_targets() {
	local doc t known missing=()

	known=$(help_targets)
	for doc in README.md HACKING.md; do
		[ -f "$doc" ] || continue
		for t in $(doc_targets "$doc"); do
			grep -qx -- "$t" <<<"$known" || missing+=("$doc: make $t")
		done
	done
	if [ ${#missing[@]} -eq 0 ]; then
		ok "every make target README.md and HACKING.md show is in make help"
	else
		fail "not in make help: ${missing[*]}"
	fi
}

docs() {
	local st=$out/stage f n=0

	check_versions
	check_targets
	stage "$st"
	export PKG_CONFIG_PATH=$st/lib/pkgconfig LD_LIBRARY_PATH=$st/lib
	rm -rf "$out/readme" && mkdir -p "$out/readme"
	c_blocks README.md "$out/readme"
	for f in "$out"/readme/block-*.c; do
		[ -e "$f" ] || continue
		n=$((n + 1))
		build_run "README.md-C-block-$n" "$f" -pthread
	done
	[ "$n" -gt 0 ] || fail "README.md has no \`\`\`c block"
	man_example man/tofutex.3 "$out/tofutex.3-example.c"
	grep -q 'main(void)' "$out/tofutex.3-example.c" || fail "tofutex(3): no example program found"
	build_run tofutex.3-example "$out/tofutex.3-example.c" -pthread
	static=1 build_run tofutex.3-example-static "$out/tofutex.3-example.c" -static -pthread
}

check_header() {
	local inc=(-I"$top/build/include" -I"$top/lib") src=$out/header

	"$make" -C "$top" --no-print-directory build/include/tofutex/uapi.h >/dev/null
	mkdir -p "$src"
	cat >"$src/h.c" <<-'EOF'
	#include <tofutex.h>
	static tofutex_mutex_t m = TOFUTEX_MUTEX_INITIALIZER;
	static tofutex_cond_t c = TOFUTEX_COND_INITIALIZER;
	int main(void)
	{
		return tofutex_library_version() >= TOFUTEX_VERSION_NUMBER &&
		       m.word == 0 && c.mutex == 0 ? 0 : 1;
	}
	EOF
	sed 's/c.mutex == 0/c.mutex == nullptr/' "$src/h.c" >"$src/h.cc"
	if ${CC:-cc} -std=c99 -pedantic -Wall -Wextra -Werror "${inc[@]}" -c -o "$src/c99.o" "$src/h.c"; then
		ok "<tofutex.h>: cc -std=c99 -pedantic -Wall -Wextra -Werror"
	else
		fail "<tofutex.h> is not clean under -std=c99 -pedantic -Werror"
	fi
	if ${CXX:-g++} -std=c++11 -pedantic -Wall -Wextra -Wzero-as-null-pointer-constant \
		-Werror "${inc[@]}" -c -o "$src/cxx11.o" "$src/h.cc"; then
		ok "<tofutex.h>: g++ -std=c++11 -pedantic -Wzero-as-null-pointer-constant -Werror"
	else
		fail "<tofutex.h> is not clean under -std=c++11 -Wzero-as-null-pointer-constant -Werror"
	fi
}

# The staged install with a multiarch LIBDIR, moved: its tofutex-run must
# find its library relative to itself, and name the program in the
# statistics file.
check_relocated_run() {
	local ma st=$out/reloc moved=$out/reloc-moved stats=$out/stats.txt line

	ma=$(${CC:-cc} -print-multiarch 2>/dev/null || true)
	stage "$st" "$st/lib/${ma:-64}"
	rm -rf "$moved" "$stats"
	mv "$st" "$moved"
	# A pthread program: the preload runs its mutex and condition variable.
	cat >"$out/pthread-prog.c" <<-'EOF'
	#include <pthread.h>
	static pthread_mutex_t m;
	static pthread_cond_t c;
	static int n;
	static void *bump(void *arg)
	{
		(void)arg;
		pthread_mutex_lock(&m);
		n++;
		pthread_cond_signal(&c);
		pthread_mutex_unlock(&m);
		return NULL;
	}
	int main(void)
	{
		pthread_t t[4];
		pthread_mutex_init(&m, NULL);
		pthread_cond_init(&c, NULL);
		for (int i = 0; i < 4; i++)
			pthread_create(&t[i], NULL, bump, NULL);
		pthread_mutex_lock(&m);
		while (n < 4)
			pthread_cond_wait(&c, &m);
		pthread_mutex_unlock(&m);
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
		return 0;
	}
	EOF
	${CC:-cc} -std=c11 -Wall -Wextra -Werror -pthread -o "$out/bin/pthread-prog" \
		"$out/pthread-prog.c" || { fail "the pthread program does not compile"; return; }
	if ! TOFUTEX_RUN_STATS=$stats TOFUTEX_BACKEND=futex \
		"$moved/bin/tofutex-run" -- "$out/bin/pthread-prog" >"$out/reloc.log" 2>&1; then
		cat "$out/reloc.log" >&2
		fail "tofutex-run of a moved install (LIBDIR .../lib/${ma:-64}) fails"
		return
	fi
	line=$(grep '^tofutex-run: pthread-prog\[[0-9]*\] backend=futex ' "$stats" || true)
	if [ -n "$line" ] && grep -q 'mutex_inits=1 cond_inits=1 ' <<<"$line"; then
		ok "tofutex-run of a moved install finds lib/${ma:-64}; TOFUTEX_RUN_STATS=FILE: $line"
	else
		cat "$stats" >&2 || true
		fail "TOFUTEX_RUN_STATS=FILE: no line naming pthread-prog with backend=futex, one mutex and one condition variable"
	fi
	# sort(1) closes stderr before its exit handlers end: the line must
	# still reach the stderr it started with.
	# (With input enough for its threads: a sort that locks nothing
	# prints nothing.)
	if seq 200000 | TOFUTEX_RUN_STATS=1 TOFUTEX_BACKEND=futex \
		"$moved/bin/tofutex-run" sort -n --parallel=2 \
		2>"$out/sort.err" >/dev/null &&
	   grep -q '^tofutex-run: sort\[[0-9]*\] backend=futex ' "$out/sort.err"; then
		ok "TOFUTEX_RUN_STATS=1 reaches stderr after sort(1) closed it"
	else
		cat "$out/sort.err" >&2
		fail "TOFUTEX_RUN_STATS=1: no line from sort(1) on stderr"
	fi
	# A wrapper script's shell and the programs it runs that lock
	# nothing print no line; =all prints one for each that exits through
	# exit(3) (dash leaves with _exit(2)).
	for v in 1 all; do
		TOFUTEX_RUN_STATS=$v TOFUTEX_BACKEND=futex "$moved/bin/tofutex-run" \
			sh -c '/bin/true; "$1"; :' sh "$out/bin/pthread-prog" \
			2>"$out/wrapper-$v.err" >/dev/null || true
	done
	if [ "$(grep -c '^tofutex-run: ' "$out/wrapper-1.err")" = 1 ] &&
	   grep -q '^tofutex-run: pthread-prog\[' "$out/wrapper-1.err" &&
	   grep -q '^tofutex-run: true\[' "$out/wrapper-all.err" &&
	   grep -q '^tofutex-run: pthread-prog\[' "$out/wrapper-all.err"; then
		ok "TOFUTEX_RUN_STATS=1 prints for the process that locked only, =all for true(1) too"
	else
		cat "$out/wrapper-1.err" "$out/wrapper-all.err" >&2
		fail "TOFUTEX_RUN_STATS=1/all: not one line from pthread-prog alone, or none from true(1) with =all"
	fi
	# The tree's own tofutex-run goes back to the default LIBDIR.
	"$make" -C "$top" --no-print-directory lib >/dev/null
}

examples() {
	local st=$out/stage f name

	check_header
	stage "$st"
	export PKG_CONFIG_PATH=$st/lib/pkgconfig LD_LIBRARY_PATH=$st/lib
	for f in examples/*.c; do
		name=${f##*/}
		build_run "${name%.c}" "$f" -pthread
	done
	rm -rf "$out/cmake"
	if cmake -S examples/cmake -B "$out/cmake" >"$out/cmake.log" 2>&1 &&
	   cmake --build "$out/cmake" >>"$out/cmake.log" 2>&1 &&
	   TOFUTEX_BACKEND=futex timeout 60 "$out/cmake/prodcons" >>"$out/cmake.log" 2>&1; then
		ok "examples/cmake (pkg_check_modules): $(tail -n 1 "$out/cmake.log")"
	else
		cat "$out/cmake.log" >&2
		fail "examples/cmake does not build or run"
	fi
	check_relocated_run
}

# unpack: the tarball `make dist` made, unpacked in build/dist-check/.
unpack() {
	local tarball=build/tofutex-$version.tar.gz dir=$top/build/dist-check

	"$make" -C "$top" --no-print-directory dist >/dev/null
	rm -rf "$dir"
	mkdir -p "$dir"
	tar -xzf "$tarball" -C "$dir"
	[ -d "$dir/tofutex-$version" ] || die "$tarball does not unpack to tofutex-$version/"
	[ ! -e "$dir/tofutex-$version/.git" ] || die "$tarball holds .git"
	echo "$dir/tofutex-$version"
}

mkdir -p "$out"
case $cmd in
docs)
	docs
	;;
examples)
	examples
	;;
dist-check)
	src=$(unpack)
	# A clean environment: no MAKEFLAGS of this make, a fresh build/.
	if env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL "$make" -C "$src" lib >"$out/dist-lib.log" 2>&1; then
		ok "tarball: make lib"
	else
		cat "$out/dist-lib.log" >&2
		fail "tarball: make lib"
	fi
	if env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL "$make" -C "$src" check-examples >"$out/dist-examples.log" 2>&1; then
		ok "tarball: make check-examples"
	else
		cat "$out/dist-examples.log" >&2
		fail "tarball: make check-examples"
	fi
	;;
dist-deb)
	src=$(unpack)
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL "$make" -C "$src" deb ||
		fail "tarball: make deb"
	[ "$fails" != 0 ] || ok "tarball: make deb (packages in $src/build/deb/)"
	;;
*)
	echo "usage: $0 docs | examples | dist-check | dist-deb" >&2
	exit 2
	;;
esac
if [ "$fails" != 0 ]; then
	echo "docs.sh $cmd: $fails failed"
	exit 1
fi
echo "docs.sh $cmd: passed"
