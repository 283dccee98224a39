# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=dash
#
# tests/programs/run.sh - real programs from Debian's archive, none written
# here, on tofutex: sourced by the guest's /init (tests/qemu/init) in check
# mode with the module loaded; uses its step() and say().
#
# Each program runs stock, then under tofutex-run (its pthread mutexes and
# condition variables on TO locks, lib/pthread/). A run passes when both
# complete, the results are the same (byte-identical output, the same
# event counts, the program's own error counts zero) and the module's
# statistics moved during the tofutex-run: TOFUTEX_IOC_LOCK calls or
# steals, or, for a program whose lock is never contended long enough to
# enter the kernel, its condition waits (TOFUTEX_IOC_WAIT). The global
# statistics are read (programs/tofutex-stats) because worker processes
# that leave with _exit() print no TOFUTEX_RUN_STATS line of their own.
#
# Sizes are small: the guest is emulated.

# prog_stats: the global statistics line.
prog_stats() {
	/programs/tofutex-stats
}

# prog_delta BEFORE AFTER: "lock=N steals=N wait=N ..." differences.
prog_delta() {
	echo "$1 $2" | awk '{
		n = NF / 2
		for (i = 1; i <= n; i++) {
			split($i, a, "="); split($(i + n), b, "=")
			printf "%s%s=%d", (i > 1 ? " " : ""), a[1], b[2] - a[2]
		}
		print ""
	}'
}

# prog_field DELTA KEY: the number, 0 when missing.
prog_field() {
	v=$(echo "$1" | tr ' ' '\n' | sed -n "s/^$2=\([0-9]*\)$/\1/p")
	echo "${v:-0}"
}

# prog_exec CMD...: CMD under the run's $RUNNER (none, or tofutex-run)
# and the in-guest timeout.
prog_exec() {
	# shellcheck disable=SC2086 # $RUNNER is one word or none
	timeout "$test_timeout" $RUNNER "$@"
}

# prog_run NAME FUNCTION ARGS...: FUNCTION ARGS stock ($RUNNER empty,
# $PROG_SIDE stock), then with RUNNER=tofutex-run (PROG_SIDE=tfx);
# outputs in /tmp/prog-NAME.{stock,tfx}, exit statuses in $rc_stock and
# $rc_tfx, the statistics' movement in $delta.
prog_run() {
	name=$1
	shift
	echo "[harness] ---- program $name: $*"
	rc_stock=0
	RUNNER= PROG_SIDE=stock "$@" >/tmp/prog-"$name".stock 2>&1 || rc_stock=$?
	before=$(prog_stats)
	rc_tfx=0
	export TOFUTEX_RUN_STATS=1
	RUNNER=tofutex-run PROG_SIDE=tfx "$@" >/tmp/prog-"$name".tfx 2>&1 || rc_tfx=$?
	unset TOFUTEX_RUN_STATS
	delta=$(prog_delta "$before" "$(prog_stats)")
	cat /tmp/prog-"$name".stock /tmp/prog-"$name".tfx
	say "@@PROGRAM $name rc_stock=$rc_stock rc_tofutex=$rc_tfx $delta"
}

# prog_verdict NAME PROBLEM: one harness step per program.
prog_verdict() {
	if [ -z "$2" ]; then
		step "program:$1" ok
	else
		step "program:$1" FAIL "$2"
	fi
}

# prog_common: the checks every program gets; sets $problem.
prog_common() {
	problem=
	[ "$rc_stock" = 0 ] || problem="stock run: exit status $rc_stock"
	[ "$rc_tfx" = 0 ] || problem="$problem; tofutex-run: exit status $rc_tfx"
	if grep -q "statically linked" /tmp/prog-"$name".tfx; then
		problem="$problem; statically linked"
	fi
}

# prog_took_to MINIMUM_KEYS...: the statistics show the TO path.
prog_took_to() {
	sum=0
	for k in "$@"; do
		sum=$((sum + $(prog_field "$delta" "$k")))
	done
	[ "$sum" -gt 0 ] || problem="$problem; no $* in the module's statistics"
}

# prog_sysbench NAME ARGS...: sysbench's own count of events must be the
# same in both runs.
prog_sysbench() {
	n=$1
	shift
	prog_run "$n" prog_exec sysbench "$@"
	prog_common
	s=$(sed -n 's/.*total number of events: *//p' /tmp/prog-"$name".stock)
	t=$(sed -n 's/.*total number of events: *//p' /tmp/prog-"$name".tfx)
	[ -n "$s" ] && [ "$s" = "$t" ] ||
		problem="$problem; events stock ${s:-?} tofutex ${t:-?}"
}

# stress_one ARGS...: stress-ng ARGS, once more when a stressor gave up
# for lack of system resources (thread creation under emulation; its
# "aborted early" warning), which says nothing about the locks.
stress_one() {
	prog_exec stress-ng "$@" >/tmp/stress.out 2>&1
	rc=$?
	if grep -q "out of system resources" /tmp/stress.out; then
		cat /tmp/stress.out
		echo "[harness] stress-ng ran out of resources; once more"
		prog_exec stress-ng "$@" >/tmp/stress.out 2>&1
		rc=$?
	fi
	cat /tmp/stress.out
	return $rc
}

# prog_stress STRESSOR OPS ARGS...: stress-ng's own verdict, both runs.
prog_stress() {
	st=$1
	ops=$2
	shift 2
	prog_run "stress-ng-$st" stress_one --"$st" 1 --"$st"-ops "$ops" \
		--metrics-brief "$@"
	prog_common
	for f in stock tfx; do
		grep -q "successful run completed" /tmp/prog-"$name".$f ||
			problem="$problem; $f run not successful"
	done
}

# pigz_one: compress with two threads (32 KiB blocks: many of them, so
# many hand-overs between pigz's threads, all condition variables and
# mutexes), then decompress and compare with the input.
pigz_one() {
	prog_exec pigz -p 2 -b 32 -c /tmp/pigz.in >/tmp/pigz.out."$PROG_SIDE" &&
		prog_exec pigz -d -c /tmp/pigz.out."$PROG_SIDE" | cmp - /tmp/pigz.in
}

prog_pigz() {
	awk 'BEGIN { for (i = 0; i < 30000; i++) print i, i * i, "tofutex", i % 7 }' \
		>/tmp/pigz.in
	cat /usr/bin/pigz >>/tmp/pigz.in
	prog_run pigz pigz_one
	prog_common
	cmp /tmp/pigz.out.stock /tmp/pigz.out.tfx >/dev/null 2>&1 ||
		problem="$problem; compressed output differs from the stock run's"
}

# memcached on the loopback, with memcaslap's load (10% sets, 90% gets,
# a fifth of the gets verified against what was set) and memccapable's
# protocol checks, both from libmemcached-tools.
memcached_one() {
	prog_exec memcached -u root -t 2 -l 127.0.0.1 -p 11211 -U 0 &
	pid=$!
	i=0
	until memcping --servers=127.0.0.1:11211 >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 100 ] || break
		sleep 0.2
	done
	memcaslap -s 127.0.0.1:11211 -T 2 -c 8 -x 2000 -v 0.2 || echo "memcaslap: exit status $?"
	memccapable -h 127.0.0.1 -p 11211 || echo "memccapable: exit status $?"
	kill "$pid"
	# memcached's own status after SIGTERM says nothing about the run.
	wait "$pid" || true
}

prog_memcached() {
	ip link set lo up
	grep -q '^root:' /etc/passwd 2>/dev/null ||
		echo 'root:x:0:0:root:/tmp:/bin/sh' >>/etc/passwd
	prog_run memcached memcached_one
	prog_common
	for f in stock tfx; do
		o=/tmp/prog-memcached.$f
		grep -q "All tests passed" $o || problem="$problem; $f: memccapable failed"
		grep -q "exit status" $o && problem="$problem; $f: a tool failed"
		for k in get_misses verify_misses verify_failed; do
			v=$(sed -n "s/^$k: *//p" $o)
			[ "$v" = 0 ] || problem="$problem; $f: $k ${v:-?}"
		done
	done
}

programs_check() {
	prog_sysbench sysbench-threads threads --threads=4 --time=0 --events=400 run
	prog_took_to lock steals
	prog_verdict "$name" "$problem"
	# sysbench's defaults: 4096 mutexes, hardly ever contended; nothing
	# reaches the kernel, so only the results are compared.
	prog_sysbench sysbench-mutex mutex --threads=4 --mutex-locks=500 run
	prog_verdict "$name" "$problem"
	# One mutex, short loops, more threads than vCPUs: lockers reach the
	# kernel when a timer tick preempts an owner inside its short
	# critical section, so the run must span many ticks: 30,000 locks a
	# thread (with 3,000 a run sometimes never entered the kernel).
	prog_sysbench sysbench-mutex-contended mutex --threads=8 --mutex-num=1 \
		--mutex-locks=30000 --mutex-loops=10 run
	prog_took_to lock steals
	prog_verdict "$name" "$problem"
	# stress-ng's mutex stressor: plain pthread mutexes (no attributes),
	# eight threads on one.
	prog_stress mutex 10000 --mutex-procs 8
	prog_took_to lock steals
	prog_verdict "$name" "$problem"
	prog_stress pthread 100 --pthread-max 8
	prog_took_to lock steals wait
	prog_verdict "$name" "$problem"
	prog_pigz
	prog_took_to lock steals wait
	prog_verdict "$name" "$problem"
	prog_memcached
	prog_took_to lock steals wait
	prog_verdict "$name" "$problem"
}

# ---- make bench: the real programs' own metrics ----------------------

# bench_elapsed CMD...: run CMD, print the seconds it took (/proc/uptime).
bench_elapsed() {
	t0=$(cut -d' ' -f1 /proc/uptime)
	"$@" >/dev/null 2>&1 || return 1
	awk -v a="$t0" -v b="$(cut -d' ' -f1 /proc/uptime)" 'BEGIN { print b - a }'
}

# bench_metric PROGRAM THREADS: run PROGRAM once under $RUNNER, print its
# own metric as "UNIT VALUE" (nothing when the run failed).
bench_metric() {
	case $1 in
	sysbench-threads)
		prog_exec sysbench threads --threads="$2" --time=4 run |
			awk '/total time:/ { t = $3 + 0 } /total number of events:/ { e = $5 }
			     END { if (t > 0) print "events/s", e / t }' ;;
	sysbench-mutex)
		prog_exec sysbench mutex --threads="$2" --mutex-locks=2000 run |
			awk -v n="$2" '/total time:/ { t = $3 + 0 }
			     END { if (t > 0) print "locks/s", n * 2000 / t }' ;;
	sysbench-mutex-contended)
		prog_exec sysbench mutex --threads="$2" --mutex-num=1 \
			--mutex-locks=10000 --mutex-loops=10 run |
			awk -v n="$2" '/total time:/ { t = $3 + 0 }
			     END { if (t > 0) print "locks/s", n * 10000 / t }' ;;
	stress-ng-mutex)
		prog_exec stress-ng --mutex 1 --mutex-procs "$2" -t 4 --metrics-brief 2>&1 |
			awk '$4 == "mutex" && $5 ~ /^[0-9]+$/ { print "bogo-ops/s", $(NF - 1) }' ;;
	pigz)
		s=$(bench_elapsed prog_exec pigz -p "$2" -b 32 -c /tmp/pigz.in) &&
			awk -v s="$s" -v b="$(wc -c </tmp/pigz.in)" \
			    'BEGIN { if (s > 0) print "MB/s", b / s / 1e6 }' ;;
	memcached)
		prog_exec memcached -u root -t "$2" -l 127.0.0.1 -p 11211 -U 0 &
		pid=$!
		i=0
		until memcping --servers=127.0.0.1:11211 >/dev/null 2>&1; do
			i=$((i + 1))
			[ $i -lt 100 ] || break
			sleep 0.2
		done
		memcaslap -s 127.0.0.1:11211 -T 2 -c 8 -t 4s 2>&1 |
			awk '/TPS:/ { for (i = 1; i < NF; i++) if ($i == "TPS:") print "requests/s", $(i + 1) }'
		kill "$pid"
		wait "$pid" || true ;;
	esac
}

# programs_bench REPEATS: every (program, threads) point stock, under
# tofutex-run on the module and under tofutex-run on futex(2), REPEATS
# rounds with the three variants interleaved; one line per run:
#   program=P threads=T variant=V run=R unit=U value=X
programs_bench() {
	ip link set lo up
	grep -q '^root:' /etc/passwd 2>/dev/null ||
		echo 'root:x:0:0:root:/tmp:/bin/sh' >>/etc/passwd
	awk 'BEGIN { for (i = 0; i < 100000; i++) print i, i * i, "tofutex", i % 7 }' \
		>/tmp/pigz.in
	cat /usr/bin/pigz /usr/bin/sysbench >>/tmp/pigz.in
	for point in sysbench-threads:4 sysbench-threads:8 sysbench-mutex:4 \
		     sysbench-mutex-contended:4 sysbench-mutex-contended:8 \
		     stress-ng-mutex:4 pigz:2 memcached:2; do
		p=${point%:*}
		t=${point#*:}
		r=1
		while [ $r -le "$1" ]; do
			for v in stock tofutex futex; do
				case $v in
				stock) RUNNER= ;;
				*) RUNNER=tofutex-run ;;
				esac
				[ $v = futex ] && export TOFUTEX_BACKEND=futex
				m=$(bench_metric "$p" "$t")
				unset TOFUTEX_BACKEND
				echo "program=$p threads=$t variant=$v run=$r unit=${m% *} value=${m#* }"
			done
			r=$((r + 1))
		done
	done
}
