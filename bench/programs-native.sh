#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench/programs-native.sh [-r ROUNDS] [-o DIR] [-l] [-b] - the real
# programs on the build host's own CPUs: stock against
# build/bin/tofutex-run on the library's futex(2) backend (no module, no
# QEMU). `make bench-native` runs it.
#
# -l: the lock-bound programs instead (RocksDB, Kyoto Cabinet, SQLite,
# memcached with more clients: tests/programs/run.sh, "the lock-bound
# programs"), into bench_lockbound.txt and lockbound-report.txt, with
# their own targets (bench/report-programs.sh). -b: with as many
# busy-looping processes as there are CPUs beside every run (a shared
# machine), into bench_lockbound_busy.txt / lockbound-busy-report.txt
# with -l, bench_programs_busy.txt / programs-busy-report.txt without.
#
# The workloads are the guest's (tests/programs/run.sh, bench_metric: the
# same commands and metrics), plus xz, zstd and plzip with two threads and
# a threaded Python program (tests/programs/py-threads.py) that the guest
# does not carry. Each round runs every point once stock and once under
# tofutex-run, in the order stock, tofutex-run in odd rounds and
# tofutex-run, stock in even ones (what runs first in a round - a warm
# page cache, a quieter moment - favours neither side over the rounds).
# Rounds run one after the other over all points, so that a burst of load
# from elsewhere hits one round of many points rather than every round of
# one. One line per run, the guest's format plus load=<1-minute load
# average at its end> and, for the programs whose output does not depend
# on timing (the compressors' output, py-threads' checksum), sum=<cksum>:
#
#   program=P threads=T variant=stock|futex run=R unit=U value=X secs=S rc=N load=L [sum=C] [p99=US]
#
# (p99: the 99th percentile of an operation's latency in microseconds,
# where the program reports it) into DIR/bench_programs.txt (default
# build/bench/native), then bench/report-programs.sh makes the table,
# with the spreads and the targets, into DIR/programs-report.txt.
#
# Environment: NATIVE_POINTS (PROGRAM:THREADS,...) replaces the points;
# NATIVE_SECS (default 1) is the length of the timed runs (sysbench
# threads, stress-ng); NATIVE_SPIN_NS, when set, is the tofutex-run
# side's TOFUTEX_SPIN_NS (lib/spin.c: 0 goes to the kernel at once), to
# tell what the user-space spin wins or loses.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
rounds=5
dir=$top/build/bench/native
set_name=programs
busy=0
while getopts "r:o:lbh" opt; do
	case $opt in
	r) rounds=$OPTARG ;;
	o) dir=$OPTARG ;;
	l) set_name=lockbound ;;
	b) busy=1 ;;
	*) echo "usage: ${0##*/} [-r ROUNDS] [-o DIR] [-l] [-b]" >&2; exit 2 ;;
	esac
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "${0##*/}: -r wants a count" >&2; exit 2; }
run_bin=$top/build/bin/tofutex-run
[ -x "$run_bin" ] || { echo "${0##*/}: no $run_bin (make lib)" >&2; exit 1; }

# Debian's programs (python3 included), not a shim earlier in PATH.
PATH=/usr/bin:/bin:$PATH
bench_tmp=$(mktemp -d "${TMPDIR:-/tmp}/tofutex-programs.XXXXXX")
trap 'rm -rf "$bench_tmp"' EXIT
bench_secs=${NATIVE_SECS:-1}
bench_py=$top/tests/programs/py-threads.py
bench_drivers=$top/build/bench/drivers
# shellcheck source=tests/programs/run.sh
. "$top/tests/programs/run.sh"
# On real cores a contended sysbench mutex run of the guest's 2,000,000
# locks ends in a fraction of a second; 20,000,000 take about a second.
bench_contended_locks=20000000

points="sysbench-threads:2 sysbench-threads:4 sysbench-threads:8
sysbench-threads:16 sysbench-mutex:4 sysbench-mutex-contended:2
sysbench-mutex-contended:4 sysbench-mutex-contended:8
sysbench-mutex-contended:16 stress-ng-mutex:4 stress-ng-pthread:8 pigz:2
xz:2 zstd:2 plzip:2 py-threads:4"
# The lock-bound programs: 2-16 threads, each program at the thread
# counts where its lock is busiest on two CPUs and at 16.
if [ "$set_name" = lockbound ]; then
	points="rocksdb-cache1:4 rocksdb-cache1:16 rocksdb-cache4:4 rocksdb-cache4:16
rocksdb-readrandom:8 rocksdb-readrandom:16 kc-cache-wicked:4 kc-cache-wicked:16
kc-cache-order:8 kc-hash-wicked:4 kc-hash-wicked:16 sqlite:2 sqlite:4 sqlite:16
memcached-clients:4 memcached-clients:8"
fi
[ -z "${NATIVE_POINTS-}" ] || points=$(echo "$NATIVE_POINTS" | tr , ' ')

for point in $points; do
	case ${point%:*} in
	sysbench*) p=sysbench ;;
	stress-ng*) p=stress-ng ;;
	py-threads) p=python3 ;;
	rocksdb-readrandom) p=db_bench ;;
	rocksdb-cache*) p=cache_bench ;;
	kc-cache*) p=kccachetest ;;
	kc-hash*) p=kchashtest ;;
	sqlite) p=$bench_drivers/sqlite-threads ;;
	memcached*) p=memcaslap ;;
	*) p=${point%:*} ;;
	esac
	command -v "$p" >/dev/null ||
		{ echo "${0##*/}: $p is missing (tests/deps.sh native installs it; make lockbound-bins)" >&2; exit 1; }
done

mkdir -p "$dir"
name=$set_name
[ "$busy" = 0 ] || name=${set_name}_busy
raw=$dir/bench_$name.txt
report=$dir/${name//_/-}-report.txt
# The compressors' input, about 12 MB, as in the guest.
bench_input 400000 "$(command -v pigz)" "$(command -v sysbench)"

load() {
	cut -d' ' -f1 /proc/loadavg
}

# The busy processes (-b): one pure user-space loop per CPU, ended by
# their process ids when the script ends.
busy_pids=()
stop_busy() {
	[ ${#busy_pids[@]} = 0 ] || kill "${busy_pids[@]}" 2>/dev/null || true
	rm -rf "$bench_tmp"
}
trap stop_busy EXIT
if [ "$busy" = 1 ]; then
	for _ in $(seq "$(nproc)"); do
		awk 'BEGIN { for (;;) n++ }' &
		busy_pids+=($!)
	done
fi
[ "$set_name" != lockbound ] || bench_lb_setup

# one PROGRAM THREADS VARIANT ROUND: one run, its line on stdout.
one() {
	local sum=
	RUNNER=
	if [ "$3" = futex ]; then
		RUNNER=$run_bin
		export TOFUTEX_BACKEND=futex
		[ -z "${NATIVE_SPIN_NS-}" ] || export TOFUTEX_SPIN_NS=$NATIVE_SPIN_NS
	fi
	bench_metric "$1" "$2"
	unset TOFUTEX_BACKEND TOFUTEX_SPIN_NS
	case $1 in
	pigz | xz | zstd | plzip)
		[ "$rc" != 0 ] || sum=$(cksum <"$bench_tmp"/bench.out | cut -d' ' -f1) ;;
	py-threads)
		sum=$(sed -n 's/^py-threads items=[0-9]* checksum=//p' "$bench_tmp"/bench.out) ;;
	esac
	[ -n "$metric" ] || metric="- FAILED"
	echo "program=$1 threads=$2 variant=$3 run=$4 unit=${metric% *} value=${metric#* } secs=$secs rc=$rc load=$(load)${sum:+ sum=$sum}${p99:+ p99=$p99}"
	if [ -z "${metric%%* FAILED}" ]; then
		tail -n 5 "$bench_tmp"/bench.out | sed "s/^/[programs] $1: /" >&2
	fi
}

{
	echo "method: host $(uname -r), $(nproc) CPUs online, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
	echo "method: stock vs $run_bin with TOFUTEX_BACKEND=futex (no module), $rounds round$([ "$rounds" = 1 ] || echo s), ABBA order, timed runs $bench_secs s"
	[ "$busy" = 0 ] || echo "method: busy: $(nproc) busy-looping processes (awk) beside every run"
	[ -z "${NATIVE_SPIN_NS-}" ] || echo "method: tofutex-run with TOFUTEX_SPIN_NS=$NATIVE_SPIN_NS"
	echo "targets: $set_name$([ "$busy" = 0 ] || echo -busy)"
	echo "method: load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
	t0=$(date +%s)
	for r in $(seq "$rounds"); do
		for point in $points; do
			if [ $((r % 2)) = 1 ]; then
				set -- stock futex
			else
				set -- futex stock
			fi
			for v; do
				one "${point%:*}" "${point#*:}" "$v" "$r"
			done
		done
		echo "[programs-native] round $r of $rounds done, $(($(date +%s) - t0)) s, load $(load)" >&2
	done
	echo "method: load average at the end: $(cut -d' ' -f1-3 /proc/loadavg), $(($(date +%s) - t0)) s in all"
} | tee "$raw"
# The method lines head the report file; the terminal has had them.
grep '^method: ' "$raw" >"$report"
"$top/bench/report-programs.sh" "$raw" | tee -a "$report"
