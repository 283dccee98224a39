#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Each acquire and release point of the lock words, weakened on purpose
# to relaxed, must make a library suite fail under ThreadSanitizer (a
# data race on what the lock protects, or a failed check): proof that
# the suites, run as `make check-native` runs them (build/tsan/), would
# catch its loss (HACKING.md, "Memory ordering"). Builds each weakened
# copy of lib/ in a scratch directory; the tree itself is not touched.
#
# usage: tests/tsan/weaken.sh [top] [name...]   (default: every point)
set -u
top=$(cd "${1:-.}" && pwd)
shift || true
cc=${CC:-gcc}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

# name | file | a line just before the point (fixed string) | order | suite
points='
mutex-lock-fast|lib/mutex.h|tofutex__mutex_lock_fast(|ACQUIRE|test_lib_mutex
mutex-take-free|lib/mutex.c|tofutex_mutex_take_free(|ACQUIRE|test_lib_mutex
mutex-unlock-fast|lib/mutex.h|tofutex__mutex_unlock_fast(|RELEASE|test_lib_mutex
mutex-lock-futex|lib/backend_futex.c|static int tofutex_futex_lock(|ACQUIRE|test_lib_mutex
mutex-unlock-futex|lib/backend_futex.c|static int tofutex_futex_unlock(|RELEASE|test_lib_mutex
cond-relock-futex|lib/backend_futex.c|static int tofutex_futex_lock(|ACQUIRE|test_lib_cond
cond-unlock-futex|lib/backend_futex.c|static int tofutex_futex_unlock(|RELEASE|test_lib_cond
rwlock-read-join|lib/rwlock.h|A join past RW_HANDOFF keeps it|ACQUIRE|test_lib_rwlock
rwlock-unlock-fast|lib/rwlock.h|tofutex_rw_readers(*w) > 1|RELEASE|test_lib_rwlock
rwlock-write-fast|lib/rwlock.c|if (write) {|ACQUIRE|test_lib_rwlock
preload-rwlock-write-fast|lib/pthread/rwlock.c|tfx_rw_write_fast(|ACQUIRE|test_pthread_rwlock
preload-mutex-lock-fast|lib/mutex.h|tofutex__mutex_lock_fast(|ACQUIRE|test_pthread_mutex
rwlock-write-futex|lib/backend_futex.c|int tofutex__futex_wrlock(|ACQUIRE|test_pthread_rwlock
'

# Copy lib/ to $4 with the first __ATOMIC_$3 at or after the line holding
# $2 in $1 made __ATOMIC_RELAXED; fails when there is no such point.
weaken() {
	local file=$1 anchor=$2 order=$3 dst=$4
	rm -rf "$dst" && mkdir -p "$dst" && cp -r "$top/lib" "$dst/"
	awk -v a="$anchor" -v o="__ATOMIC_$order" '
		!done && index($0, a) { armed = 1 }
		armed && !done && index($0, o) {
			i = index($0, o)
			$0 = substr($0, 1, i - 1) "__ATOMIC_RELAXED" \
			     substr($0, i + length(o))
			done = 1
		}
		{ print }
		END { exit !done }' "$top/$file" >"$dst/$file"
}

# A library suite with the weakened library in it; a preload suite
# (test_pthread_*) with the weakened preload beside it, which run()
# preloads as make check-native does (tests/tsan/build-preload.sh).
build() {
	local libdir=$1 suite=$2 out=$3 src=$top/tests/$2.c

	if [ "${suite#test_pthread_}" != "$suite" ]; then
		src=$top/tests/preload/$suite.c
		CC=$cc "$top/tests/tsan/build-preload.sh" "$libdir/lib" \
			"$top/build/lib/pthread-gen" "$top/build/include" \
			"$(dirname "$out")/preload/libtofutex-pthread.so.0" || return 1
	fi
	"$cc" -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -pthread \
		-I"$top/build/include" -I"$libdir/lib" -O1 -g -rdynamic \
		-fsanitize=thread -o "$out" "$src" \
		"$libdir"/lib/*.c -lcheck -lsubunit -lm -lrt -lpthread
}

run() {
	local dir so=

	dir=$(dirname "$1")
	[ ! -d "$dir/preload" ] || so=$(echo "$dir"/preload/libtofutex-pthread.so.*)
	(cd "$dir" && TOFUTEX_BACKEND=futex CK_FORK=yes LD_PRELOAD=$so \
		TSAN_OPTIONS="exitcode=66 halt_on_error=1 report_mutex_bugs=0 suppressions=$top/tests/tsan/preload.supp" \
		timeout 600 "$1" >"$1.log" 2>&1)
}

# One point: 0 when its weakening was caught. The lines that say why
# not are in Check's failure format, for the harness (tests/qemu/run.sh).
point() {
	local name=$1 file=$2 anchor=$3 order=$4 suite=$5 d=$scratch/$1 how
	local where="tests/tsan/weaken.sh:0:F:weaken:$name"

	if ! weaken "$file" "$anchor" "$order" "$d"; then
		echo "$where: no __ATOMIC_$order after \"$anchor\" in $file"
		return 1
	fi
	if ! build "$d" "$suite" "$d/$suite"; then
		echo "$where: the weakened $suite does not build"
		return 1
	fi
	# A race is seen when the threads interleave so: on a busy machine
	# one run may not show it. Three runs that all pass say it is lost.
	if run "$d/$suite" && run "$d/$suite" && run "$d/$suite"; then
		echo "$where: $file, $order made RELAXED: $suite passed three times"
		return 1
	fi
	how=$(grep -m1 -o 'WARNING: ThreadSanitizer: [a-z -]*' "$d/$suite.log" ||
	      grep -m1 -E ':[FE]:' "$d/$suite.log")
	echo "$name ($file, $order -> RELAXED): caught by $suite: $how"
}

total=0 failed=0
while IFS='|' read -r name file anchor order suite; do
	[ -n "$name" ] || continue
	if [ $# -gt 0 ] && ! printf '%s\n' "$@" | grep -qx -- "$name"; then
		continue
	fi
	total=$((total + 1))
	point "$name" "$file" "$anchor" "$order" "$suite" ||
		failed=$((failed + 1))
done <<<"$points"
echo "$(( total ? (total - failed) * 100 / total : 100 ))%: Checks: $total, Failures: $failed, Errors: 0"
[ "$failed" -eq 0 ]
