#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench/lockcost.sh [-n N] [-o DIR] - instructions per uncontended lock
# operation: glibc's pthread locks, the same calls under tofutex-run's
# preload (libtofutex-pthread.so) and libtofutex's own tofutex_mutex_* and
# tofutex_rwlock_*, counted by callgrind (valgrind --tool=callgrind), whose
# counts do not depend on what else the machine runs. `make bench-lockcost`
# runs it.
#
# Each cell is one run of bench/drivers/lockcost (N operations, default
# 100000, in one thread) with callgrind collecting only inside its loop
# (--toggle-collect=measure): the instructions counted / N. That includes
# the loop and the driver's call through its API switch, a few
# instructions that are the same in every column, so the columns compare
# like for like. The preload is put in LD_PRELOAD directly (what
# tofutex-run does) so that valgrind runs the program itself.
# The table goes to the terminal and DIR/lockcost.md (default
# build/bench/native), with the target: tofutex's count <= glibc's in
# every row, met or missed.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
n=100000
dir=$top/build/bench/native
while getopts "n:o:h" opt; do
	case $opt in
	n) n=$OPTARG ;;
	o) dir=$OPTARG ;;
	*) echo "usage: ${0##*/} [-n N] [-o DIR]" >&2; exit 2 ;;
	esac
done
[[ $n =~ ^[1-9][0-9]*$ ]] || { echo "${0##*/}: -n wants a count" >&2; exit 2; }
bin=$top/build/bench/drivers/lockcost
preload=$top/build/lib/libtofutex-pthread.so.0
for f in "$bin" "$preload"; do
	[ -e "$f" ] || { echo "${0##*/}: no $f (make lockbound-bins)" >&2; exit 1; }
done
command -v valgrind >/dev/null ||
	{ echo "${0##*/}: valgrind is missing (tests/deps.sh native)" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tofutex-lockcost.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# count PRELOAD ARGS...: instructions per operation of lockcost ARGS N.
count() {
	local pre=$1
	shift
	LD_PRELOAD=$pre TOFUTEX_BACKEND=futex valgrind --tool=callgrind \
		--toggle-collect=measure --callgrind-out-file="$tmp/out" \
		"$bin" "$@" "$n" 2>"$tmp/err" ||
		{ cat "$tmp/err" >&2; echo "${0##*/}: lockcost $* failed" >&2; exit 1; }
	awk -v n="$n" '/^totals:/ { printf "%.1f\n", $2 / n }' "$tmp/out"
}

# verdict OURS GLIBC
verdict() {
	awk -v a="$1" -v b="$2" 'BEGIN { print (a <= b ? "met" : "missed") }'
}

mkdir -p "$dir"
{
	echo "method: valgrind $(valgrind --version | sed 's/^valgrind-//'), callgrind instructions (Ir) inside lockcost's loop / $n operations, one thread, uncontended; $(ldd --version | head -n 1)"
	echo
	echo "| lock | operation | glibc | tofutex-run | tofutex_* | target (<= glibc) |"
	echo "|---|---|--:|--:|--:|---|"
	rows="normal:lock normal:trylock errorcheck:lock errorcheck:trylock
recursive:lock recursive:trylock recursive:relock adaptive:lock
adaptive:trylock rdlock:lock rdlock:trylock wrlock:lock wrlock:trylock"
	for row in $rows; do
		kind=${row%:*}
		op=${row#*:}
		g=$(count "" pthread "$kind" "$op")
		p=$(count "$preload" pthread "$kind" "$op")
		lib=-
		# The library has one mutex (error-checking, robust), set
		# against glibc's NORMAL one, and the rwlock.
		case $kind:$op in
		normal:lock | normal:trylock) lib=$(count "" tofutex mutex "$op") ;;
		rdlock:* | wrlock:*) lib=$(count "" tofutex "$kind" "$op") ;;
		esac
		pm=$(verdict "$p" "$g")
		lm=met
		[ "$lib" = - ] || lm=$(verdict "$lib" "$g")
		case $pm:$lm in
		met:met) v=met ;;
		missed:met) v="missed (tofutex-run)" ;;
		met:missed) v="missed (tofutex_*)" ;;
		*) v="missed (both)" ;;
		esac
		echo "| $kind | $op | $g | $p | $lib | $v |"
	done
	echo
	echo "Instructions per operation (lock or trylock, then unlock; relock: lock and"
	echo "unlock of a recursive mutex the thread already holds), counted by callgrind"
	echo "inside the driver's loop, the loop's own few instructions included in every"
	echo "column. tofutex-run: the same pthread calls with libtofutex-pthread.so"
	echo "preloaded; tofutex_*: tofutex_mutex_* (against glibc's NORMAL mutex) and"
	echo "tofutex_rwlock_*. adaptive: PTHREAD_MUTEX_ADAPTIVE_NP."
} | tee "$dir/lockcost.md"
