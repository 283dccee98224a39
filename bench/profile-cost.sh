#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench/profile-cost.sh [-r ROUNDS] [-n PAIRS] [-o DIR] - what the
# contention report (TOFUTEX_PROFILE, tofutex-run --profile) costs, off
# and on, on this machine's own cores (futex backend): a pthread mutex
# locked and unlocked PAIRS times (bench/profile/loop.c, default
# 10,000,000) stock (glibc), under tofutex-run, and under tofutex-run with
# the report on. Two measures:
#
# - instructions per lock/unlock pair, one thread (the uncontended fast
#   path): valgrind --tool=callgrind, counting only inside the loop's
#   worker() (--toggle-collect), over IPAIRS pairs (default 100,000),
#   divided by IPAIRS; the loop's own increment and branch are in all
#   three. A count, not a time: the same on a loaded machine;
# - nanoseconds per pair, 1 thread and 2 threads on one mutex (contended),
#   the median of ROUNDS runs (default 5), with the load average.
#
# Writes DIR/profile-cost.txt (default build/bench/native). `make
# bench-native NATIVE_BENCHES=profile` runs it.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
rounds=5
pairs=10000000
dir=$top/build/bench/native
while getopts "r:n:o:h" opt; do
	case $opt in
	r) rounds=$OPTARG ;;
	n) pairs=$OPTARG ;;
	o) dir=$OPTARG ;;
	*) echo "usage: ${0##*/} [-r ROUNDS] [-n PAIRS] [-o DIR]" >&2; exit 2 ;;
	esac
done
[[ $rounds =~ ^[1-9][0-9]*$ && $pairs =~ ^[1-9][0-9]*$ ]] ||
	{ echo "${0##*/}: -r and -n want counts" >&2; exit 2; }
loop=$top/build/bench/bin/profile-loop
for f in "$loop" "$top/build/lib/libtofutex-pthread.so.0"; do
	[ -e "$f" ] || { echo "${0##*/}: no $f (make lib build/bench/bin/profile-loop)" >&2; exit 1; }
done
mkdir -p "$dir"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tofutex-profile-cost.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
export TOFUTEX_BACKEND=futex

preload=$top/build/lib/libtofutex-pthread.so.0
ipairs=${IPAIRS:-100000}

# variant_env VARIANT: the environment of the loop for VARIANT (set
# LD_PRELOAD as tofutex-run does, so that valgrind runs the loop itself).
variant_env() {
	case $1 in
	glibc) echo TOFUTEX_PROFILE=0 ;;
	tofutex-run) echo TOFUTEX_PROFILE=0 LD_PRELOAD="$preload" ;;
	profile) echo TOFUTEX_PROFILE="$tmp/report.txt" LD_PRELOAD="$preload" ;;
	esac
}

# instr VARIANT: instructions per pair inside worker(), one thread.
instr() {
	# shellcheck disable=SC2046
	env $(variant_env "$1") valgrind --tool=callgrind \
		--callgrind-out-file=/dev/null --toggle-collect=worker \
		"$loop" 1 "$ipairs" 2>&1 >/dev/null |
		awk -v n="$ipairs" '/Collected :/ { printf "%.1f", $NF / n }'
}

# ns VARIANT THREADS: the median ns per pair of ROUNDS runs.
ns() {
	local i
	for ((i = 0; i < rounds; i++)); do
		# shellcheck disable=SC2046
		env $(variant_env "$1") "$loop" "$2" "$pairs" |
			sed -n 's/.*ns_per_pair=//p'
	done | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

have_valgrind=true
command -v valgrind >/dev/null || have_valgrind=false
{
	echo "== profile cost: $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg) =="
	echo "method: bench/profile/loop.c, one pthread mutex locked and unlocked, a counter incremented inside; futex backend; instr/pair: valgrind --tool=callgrind --toggle-collect=worker over $ipairs pairs, one thread; ns/pair: $pairs pairs, median of $rounds runs, 1 thread (uncontended) and 2 threads (contended); tofutex-run = LD_PRELOAD=libtofutex-pthread.so, TOFUTEX_PROFILE=0; profile = the same with TOFUTEX_PROFILE=FILE"
	$have_valgrind || echo "(valgrind is not installed: instr/pair is n/a)"
	printf '%-12s %10s %14s %14s\n' variant instr/pair 'ns/pair 1 thr' 'ns/pair 2 thr'
	for v in glibc tofutex-run profile; do
		ipp=n/a
		$have_valgrind && ipp=$(instr "$v")
		printf '%-12s %10s %14s %14s\n' "$v" "$ipp" "$(ns "$v" 1)" "$(ns "$v" 2)"
	done
	echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
} | tee "$dir/profile-cost.txt"
