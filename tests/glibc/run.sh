#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# tests/glibc/run.sh [-j JOBS] DIR BACKEND... - glibc's own tests, stock
# and under tofutex-run.
#
# DIR is what tests/glibc/build.sh made (build/glibc, or its copy in a
# guest): bin/<test>, expect/<test>.expect, tests.list, known-failures.
# Every test of tests.list that is not "skip" runs once stock and once
# under tofutex-run per BACKEND (TOFUTEX_BACKEND=BACKEND: futex, module),
# JOBS at a time (default 4: most of them sleep). A test passes when it
# exits 0 (and, where glibc has a .expect file, prints exactly that).
#
# Prints one summary line per group set and backend, e.g.
#   glibc tests: 58 run, 58 pass stock, 58 pass under tofutex-run (futex)
# then every stock failure (reported, not failed on), every known failure
# (known-failures: NAME BACKEND|* REASON) and every other test that passes
# stock and fails under tofutex-run, with the end of its output. Exits 1
# when there is one of the last kind. A run under tofutex-run that fails
# among the parallel ones is run again alone, as stock's check of it was,
# and judged by that run (both are shown).
#
# Environment: GLIBC_STOCK (all, the default: every test stock too; lazy:
# stock only the tests that fail under tofutex-run, to tell whether the
# failure is tofutex's), TOFUTEX_RUN (default: tofutex-run from PATH), GLIBC_TESTS_OUT
# (logs, default DIR/out), GLIBC_TEST_TIMEOUT (seconds a run may take
# before it is killed from outside, default 300; glibc's test driver has
# its own limit, scaled by TIMEOUTFACTOR), GLIBC_TESTS (only these tests),
# GLIBC_GROUPS (only the tests of these groups).
#
# POSIX sh: it runs under busybox in the guests as well.
set -u

jobs=4
if [ "${1-}" = -j ]; then
	jobs=$2
	shift 2
fi

# test_line DIR NAME: its line in tests.list, with runs of blanks squeezed.
test_line() {
	awk -v n="$2" '$1 == n { $1 = $1; print; exit }' "$1/tests.list"
}

# one DIR NAME MODE: run a test stock (MODE "stock") or under tofutex-run
# on backend MODE; its output in $out/NAME.MODE.log, status in .rc.
if [ "${1-}" = --one ]; then
	dir=$2 name=$3 mode=$4
	out=${GLIBC_TESTS_OUT:-$dir/out}
	bin=$dir/bin/$name
	# Fields 4 on: the test's arguments, quoted as in a shell.
	args=$(test_line "$dir" "$name" | cut -d' ' -f4- -s | sed "s|@SELF@|$bin|g")
	eval "set -- $args"
	log=$out/$name.$mode.log
	cd "$out" || exit 1
	t0=$(cut -d' ' -f1 /proc/uptime)
	if [ "$mode" = stock ]; then
		timeout "${GLIBC_TEST_TIMEOUT:-300}" "$bin" "$@" >"$log" 2>&1
	else
		TOFUTEX_BACKEND=$mode timeout "${GLIBC_TEST_TIMEOUT:-300}" \
			"${TOFUTEX_RUN:-tofutex-run}" "$bin" "$@" >"$log" 2>&1
	fi
	rc=$?
	if [ "$rc" = 0 ] && [ -r "$dir/expect/$name.expect" ] &&
	   ! cmp -s "$dir/expect/$name.expect" "$log"; then
		echo "run.sh: output differs from $name.expect" >>"$log"
		rc=output
	fi
	echo "$rc" >"$out/$name.$mode.rc"
	awk -v a="$t0" -v n="$name" -v m="$mode" '{ printf "%s %s %.1f\n", n, m, $1 - a }' \
		/proc/uptime >>"$out/times"
	exit 0
fi

[ $# -ge 2 ] || { echo "usage: run.sh [-j JOBS] DIR BACKEND..." >&2; exit 2; }
dir=$(cd "$1" && pwd)
shift
backends=$*
out=${GLIBC_TESTS_OUT:-$dir/out}
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
mkdir -p "$out"
rm -f "$out"/*.log "$out"/*.rc "$out/missing" "$out/selected" "$out/times"

# The tests to run: "NAME GROUP" for each one built.
awk -v g=" ${GLIBC_GROUPS-} " '!/^#/ && NF >= 3 && $3 != "skip" &&
	(g == "  " || index(g, " " $3 " ")) { print $1, $3 }' "$dir/tests.list" |
while read -r name group; do
	if [ -n "${GLIBC_TESTS-}" ] && ! echo " $GLIBC_TESTS " | grep -q " $name "; then
		continue
	fi
	if [ ! -x "$dir/bin/$name" ]; then
		echo "glibc tests: $name is listed but not built (tests/glibc/build.sh)"
		echo "$name missing" >>"$out/missing"
		continue
	fi
	echo "$name $group"
done >"$out/selected"

# rc NAME MODE: the recorded status ("none" when the run left nothing).
rc() {
	cat "$out/$1.$2.rc" 2>/dev/null || echo none
}

# Longest first would be better for the pool; the list order is close
# enough, and each run is short. GLIBC_STOCK=lazy: stock only the tests
# that failed under tofutex-run, to tell their failures apart.
stock_first=stock
[ "${GLIBC_STOCK:-all}" = lazy ] && stock_first=
for mode in $stock_first $backends; do
	awk -v m="$mode" '{ print $1, m }' "$out/selected"
done | xargs -P "$jobs" -n 2 sh "$self" --one "$dir"
if [ -z "$stock_first" ]; then
	while read -r name group; do
		for b in $backends; do
			if [ "$(rc "$name" "$b")" != 0 ]; then
				echo "$name stock"
				break
			fi
		done
	done <"$out/selected" | xargs -r -P "$jobs" -n 2 sh "$self" --one "$dir"
fi

# A run under tofutex-run that failed among JOBS parallel runs, of a test
# that passes stock, runs again alone: stock's verdict came from a run
# alone too (GLIBC_STOCK=lazy) or could have, and glibc's tests time
# themselves (tst-mutex5 wants a lock of a free mutex within 0.1 s) on a
# loaded, emulated machine. Like for like: the verdict is the lone run's,
# and the parallel run's failure is shown all the same.
while read -r name group; do
	[ "$(rc "$name" stock)" = 0 ] || continue
	for b in $backends; do
		[ "$(rc "$name" "$b")" != 0 ] || continue
		mv "$out/$name.$b.log" "$out/$name.$b.parallel.log"
		sh "$self" --one "$dir" "$name" "$b" </dev/null
		[ "$(rc "$name" "$b")" = 0 ] || continue
		echo "glibc tests: $name failed under tofutex-run ($b) among $jobs parallel runs, passed alone; that run's end:"
		tail -n 3 "$out/$name.$b.parallel.log" | sed "s/^/    /"
	done
done <"$out/selected"

# known NAME BACKEND: the reason it is a known failure, or nothing.
known() {
	[ -r "$dir/known-failures" ] || return 0
	awk -v n="$1" -v b="$2" '!/^#/ && $1 == n && ($2 == b || $2 == "*") {
		$1 = ""; $2 = ""; sub(/^ +/, ""); print; exit }' "$dir/known-failures"
}

# summary TITLE GROUPS: one line per backend for the tests of GROUPS.
summary() {
	title=$1 groups=" $2 "
	for b in $backends; do
		run=0 stock=0 pre=0
		while read -r name group; do
			case $groups in *" $group "*) ;; *) continue ;; esac
			run=$((run + 1))
			[ "$(rc "$name" stock)" = 0 ] && stock=$((stock + 1))
			[ "$(rc "$name" "$b")" = 0 ] && pre=$((pre + 1))
		done <"$out/selected"
		[ "$run" = 0 ] && continue
		if [ -n "$stock_first" ]; then
			echo "$title: $run run, $stock pass stock, $pre pass under tofutex-run ($b)"
		else
			echo "$title: $run run, $pre pass under tofutex-run ($b); stock runs only where it failed"
		fi
	done
}

summary "glibc tests" "cond mutex cancel slow"
summary "glibc tests, rwlock" "rwlock"
summary "glibc tests, glibc's mutex types" "glibc"

fail=0
while read -r name group; do
	s=0
	for b in $backends; do
		[ "$(rc "$name" "$b")" = 0 ] || s=$(rc "$name" stock)
	done
	[ -n "$stock_first" ] && s=$(rc "$name" stock)
	if [ "$s" != 0 ]; then
		echo "glibc tests: $name fails stock (status $s), not counted against tofutex-run"
		tail -n 3 "$out/$name.stock.log" 2>/dev/null | sed "s/^/    /"
		continue
	fi
	for b in $backends; do
		p=$(rc "$name" "$b")
		why=$(known "$name" "$b")
		if [ "$p" = 0 ]; then
			[ -z "$why" ] ||
				echo "glibc tests: $name passes under tofutex-run ($b): remove it from tests/glibc/known-failures"
			continue
		fi
		if [ -n "$why" ]; then
			echo "glibc tests: known failure: $name under tofutex-run ($b), status $p: $why"
			continue
		fi
		fail=$((fail + 1))
		echo "glibc tests: FAIL: $name passes stock, fails under tofutex-run ($b): status $p"
		tail -n 5 "$out/$name.$b.log" 2>/dev/null | sed "s/^/    /"
	done
done <"$out/selected"
[ ! -e "$out/missing" ] || fail=$((fail + $(wc -l <"$out/missing")))
# The slowest runs, for whoever tunes GLIBC_GROUPS and the timeouts.
echo "glibc tests: slowest runs (s): $(sort -k3 -n -r "$out/times" | head -n 5 |
	awk '{ printf "%s%s %s %s", (NR > 1 ? ", " : ""), $1, $2, $3 }')"
[ "$fail" = 0 ]
