#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench/programs-count.sh [-r RUNS] [-o DIR] POINT... - where a real
# program's time goes, stock against tofutex-run on the futex backend, on
# the build host (no module): system calls, futex waits and wakes (and
# which of them found nothing to do), sleeps, preemptions and wake-ups per
# operation, counted by the kernel's own tracepoints (perf), not by
# timing, so that a loaded host changes them far less than it changes
# throughput.
#
# POINT is PROGRAM:THREADS as bench/programs-native.sh takes it (the
# commands of tests/programs/run.sh, bench_metric), or cond-queue:T /
# cond-barrier:T (bench_cond's workloads: glibc's pthread against
# libtofutex forced to its futex backend, in one process each).
#
# Each variant runs RUNS times (default 1) under `perf stat` (counts; the
# table gives the median and, for RUNS > 1, the range of the runs) and
# once under `perf record` of futex(2) entries and exits (each call paired
# with its result); the table gives, per operation of the program's own
# metric (sysbench threads: an event, 100 lock-yield-unlock; sysbench
# mutex: a lock; the compressors: a MB of input; py-threads: an item;
# bench_cond: an item or a barrier round), the medians over the runs:
#
#   ops/s         throughput under perf stat (only to see the load's mark)
#   cpu-ms        task-clock, CPU time of all the program's threads (ms)
#   syscalls      system calls entered
#   futex         futex(2) calls; sched_yield: sched_yield(2) calls
#   wait          futex waits (FUTEX_WAIT, _WAIT_BITSET)
#   wait-EAGAIN   of those, returned at once: the word had changed
#   wait-timeout  of those, ended by their timeout
#   wake          futex wakes (FUTEX_WAKE, _WAKE_BITSET, _WAKE_OP)
#   wake-futile   of those, woke nobody
#   requeue       FUTEX_CMP_REQUEUE / _REQUEUE calls
#   sleeps        context switches out of a thread that blocked (state S)
#   cswitch       all context switches (sleeps, yields and preemptions)
#   wakeups       threads woken (sched:sched_wakeup)
#   migrations    CPU migrations
#
# Writes DIR/count-<point>.txt (default build/bench/native) and prints the
# tables with the load average at the start and end of each point. Needs
# perf (linux-perf) and the tracepoints (root, or perf_event_paranoid -1).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
runs=1
dir=$top/build/bench/native
while getopts "r:o:h" opt; do
	case $opt in
	r) runs=$OPTARG ;;
	o) dir=$OPTARG ;;
	*) echo "usage: ${0##*/} [-r RUNS] [-o DIR] POINT..." >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { echo "usage: ${0##*/} [-r RUNS] [-o DIR] POINT..." >&2; exit 2; }
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "${0##*/}: -r wants a count" >&2; exit 2; }
command -v perf >/dev/null || { echo "${0##*/}: no perf (tests/deps.sh native)" >&2; exit 1; }
# TOFUTEX_RUN: another tofutex-run (with its libraries beside it, as the
# build tree has them) in place of the build tree's, e.g. a copy of an
# older build/ to count against.
run_bin=${TOFUTEX_RUN:-$top/build/bin/tofutex-run}
# BENCH_COND: another bench_cond binary (its tofutex columns are the
# library it was built with) in place of the build tree's.
cond_bin=${BENCH_COND:-$top/build/bench/bin/bench_cond}
PATH=/usr/bin:/bin:$PATH

bench_tmp=$(mktemp -d "${TMPDIR:-/tmp}/tofutex-count.XXXXXX")
trap '[ -n "${KEEP_TMP-}" ] || rm -rf "$bench_tmp"' EXIT
bench_secs=${NATIVE_SECS:-1}
bench_py=$top/tests/programs/py-threads.py
bench_drivers=$top/build/bench/drivers
# shellcheck source=tests/programs/run.sh
. "$top/tests/programs/run.sh"
# As bench/programs-native.sh.
bench_contended_locks=20000000
bench_input 400000 "$(command -v pigz)" "$(command -v sysbench)"
mkdir -p "$dir"

events=task-clock,context-switches,cpu-migrations,raw_syscalls:sys_enter
events=$events,syscalls:sys_enter_futex,syscalls:sys_enter_sched_yield,sched:sched_wakeup

# measure PROGRAM THREADS VARIANT: one run of the point under $wrap (the
# perf command, words without blanks); $ops its operations, empty when it
# failed.
measure() {
	local prog=$1 t=$2

	case $prog in
	cond-*)
		local impl=pthread
		[ "$3" = stock ] || impl=tofutex-futex
		# shellcheck disable=SC2086 # $wrap: words
		$wrap "$cond_bin" -w "${prog#cond-}" -i "$impl" -t "$t" \
			-r 1 -n 20000 >"$bench_tmp"/bench.out 2>&1 || true
		ops=$(awk -F, '$2 == "run" && $8 > 0 { print $7 }' "$bench_tmp"/bench.out)
		secs=$(awk -F, '$2 == "run" && $8 > 0 { print $8 / 1e9 }' "$bench_tmp"/bench.out) ;;
	*)
		RUNNER=$wrap
		if [ "$3" != stock ]; then
			RUNNER="$wrap $run_bin"
			export TOFUTEX_BACKEND=futex
		fi
		bench_metric "$prog" "$t"
		unset TOFUTEX_BACKEND
		ops=
		# The metric's numerator: its value times the seconds the
		# run took (sysbench's own total time for sysbench).
		[ -z "$metric" ] || ops=$(awk -v m="${metric#* }" -v s="$secs" -v p="$prog" '
			/total time:/ { t = $3 + 0 }
			END { if (p ~ /^sysbench/ && t > 0) s = t; printf "%.0f\n", m * s }' "$bench_tmp"/bench.out) ;;
	esac
}

# stat_run POINT VARIANT N: counts of run N into $dir/.stat-VARIANT-N.
stat_run() {
	local f=$bench_tmp/stat
	wrap="perf stat -x, -o $f -e $events -e sched:sched_switch --filter prev_state==1"
	measure "${1%:*}" "${1#*:}" "$2"
	echo "$2 $3 ops/s $(awk -v o="$ops" -v s="$secs" 'BEGIN { if (s > 0) print o / s }')"
	awk -F, -v ops="$ops" -v v="$2" -v n="$3" '
		$3 ~ /./ && $1 ~ /^[0-9.]+$/ {
			name = $3
			if (name == "sched:sched_switch") name = "sleeps"
			printf "%s %s %s %s\n", v, n, name, $1 / ops
		}' "$f"
}

# futex_run POINT VARIANT: futex calls paired with their results.
futex_run() {
	local f=$bench_tmp/perf.data
	wrap="perf record -q -o $f -e syscalls:sys_enter_futex,syscalls:sys_exit_futex"
	measure "${1%:*}" "${1#*:}" "$2"
	perf script -F tid,event,trace -i "$f" 2>/dev/null | awk -v ops="$ops" -v v="$2" '
		function hex(x,   i, n, c) {
			sub(/^0x/, "", x)
			sub(/,$/, "", x)
			n = 0
			for (i = 1; i <= length(x); i++) {
				c = index("0123456789abcdef", substr(x, i, 1))
				n = n * 16 + c - 1
			}
			return n
		}
		# A return value: 64 bits, negative ones as small as -4095.
		function ret(x) {
			sub(/^0x/, "", x)
			if (length(x) == 16 && substr(x, 1, 8) == "ffffffff")
				return hex(substr(x, 13)) - 65536
			return hex(x)
		}
		/sys_enter_futex:/ {
			for (i = 1; i <= NF; i++)
				if ($i == "op:")
					op[$1] = hex($(i + 1)) % 128
			next
		}
		/sys_exit_futex:/ {
			if (!($1 in op))
				next
			o = op[$1]
			delete op[$1]
			r = ret($NF)
			if (o == 0 || o == 9) {
				wait++
				if (r == -11) eagain++
				if (r == -110) timeout++
			} else if (o == 1 || o == 10 || o == 5) {
				wake++
				if (r == 0) futile++
			} else if (o == 3 || o == 4)
				requeue++
		}
		END {
			printf "%s 1 wait %s\n", v, wait / ops
			printf "%s 1 wait-EAGAIN %s\n", v, eagain / ops
			printf "%s 1 wait-timeout %s\n", v, timeout / ops
			printf "%s 1 wake %s\n", v, wake / ops
			printf "%s 1 wake-futile %s\n", v, futile / ops
			printf "%s 1 requeue %s\n", v, requeue / ops
		}'
}

for point; do
	out=$dir/count-${point/:/-}.txt
	{
		echo "== $point: per operation, stock vs tofutex-run (futex backend); load average $(cut -d' ' -f1-3 /proc/loadavg) at the start =="
		for n in $(seq "$runs"); do
			for v in stock futex; do
				stat_run "$point" "$v" "$n"
			done
		done
		for v in stock futex; do
			futex_run "$point" "$v"
		done
	} >"$bench_tmp"/rows
	{
		head -n 1 "$bench_tmp"/rows
		tail -n +2 "$bench_tmp"/rows | awk -v load="$(cut -d' ' -f1-3 /proc/loadavg)" '
			function median(list,   n, i, j, t, a) {
				n = split(list, a, " ")
				for (i = 1; i <= n; i++)
					for (j = i + 1; j <= n; j++)
						if (a[j] + 0 < a[i] + 0) {
							t = a[i]; a[i] = a[j]; a[j] = t
						}
				return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
			}
			# "median (min-max)" of a list, the range only for more than one.
			function cell(list, m,   n, i, a, lo, hi) {
				n = split(list, a, " ")
				if (n < 2)
					return sprintf("%.4g", m)
				lo = hi = a[1] + 0
				for (i = 2; i <= n; i++) {
					lo = a[i] + 0 < lo ? a[i] + 0 : lo
					hi = a[i] + 0 > hi ? a[i] + 0 : hi
				}
				return sprintf("%.4g (%.3g-%.3g)", m, lo, hi)
			}
			{ v[$1, $3] = v[$1, $3] " " $4; seen[$3] = 1 }
			END {
				n = split("ops/s task-clock raw_syscalls:sys_enter syscalls:sys_enter_futex syscalls:sys_enter_sched_yield wait wait-EAGAIN wait-timeout wake wake-futile requeue sleeps context-switches sched:sched_wakeup cpu-migrations", order, " ")
				split("ops/s cpu-ms syscalls futex sched_yield wait wait-EAGAIN wait-timeout wake wake-futile requeue sleeps cswitch wakeups migrations", label, " ")
				printf "%-14s %22s %22s %8s\n", "per op", "stock (min-max)", "tofutex-run (min-max)", "ratio"
				for (i = 1; i <= n; i++) {
					k = order[i]
					if (!(k in seen))
						continue
					s = median(v["stock", k])
					t = median(v["futex", k])
					printf "%-14s %22s %22s %8s\n", label[i], cell(v["stock", k], s),
					       cell(v["futex", k], t), (s > 0 ? sprintf("%.2f", t / s) : "-")
				}
				print "load average at the end: " load
			}'
	} | tee "$out"
done
