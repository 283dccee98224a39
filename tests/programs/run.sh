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
	# A stock run that fails says the guest, not tofutex, upset the program
	# (seen: stress-ng's pthread stressor on a loaded host): once more, and
	# the comparison is with that run. A failing tofutex-run is never
	# repeated.
	if [ "$rc_stock" != 0 ]; then
		cat /tmp/prog-"$name".stock
		echo "[harness] $name: the stock run failed (exit status $rc_stock); once more"
		rc_stock=0
		RUNNER= PROG_SIDE=stock "$@" >/tmp/prog-"$name".stock 2>&1 || rc_stock=$?
	fi
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
	bench_input 30000 /usr/bin/pigz
	prog_run pigz pigz_one
	prog_common
	cmp /tmp/pigz.out.stock /tmp/pigz.out.tfx >/dev/null 2>&1 ||
		problem="$problem; compressed output differs from the stock run's"
}

# memcached_setup: what memcached needs in the guest: the loopback up,
# and a passwd entry for its -u root.
memcached_setup() {
	ip link set lo up
	grep -q '^root:' /etc/passwd 2>/dev/null ||
		echo 'root:x:0:0:root:/tmp:/bin/sh' >>/etc/passwd
}

# memcached_start LIMIT THREADS: memcached with THREADS worker threads
# under $RUNNER and `timeout LIMIT`, in the background, serving on
# 127.0.0.1:11211; $mpid is memcached's own process. It is started as a
# simple command, not through a shell function: the background job of a
# function is a subshell, and killing that would leave memcached running
# (holding the port, and the output pipe of whoever called this).
# Prints "memcached: ... exit status" when it is not serving.
memcached_start() {
	# shellcheck disable=SC2086 # $RUNNER is one word or none
	timeout "$1" $RUNNER memcached -u root -t "$2" -l 127.0.0.1 -p 11211 -U 0 &
	mpid=$!
	i=0
	until memcping --servers=127.0.0.1:11211 >/dev/null 2>&1; do
		i=$((i + 1))
		[ $i -lt 100 ] || break
		sleep 0.2
	done
	kill -0 "$mpid" 2>/dev/null ||
		echo "memcached: not running (exit status $(wait "$mpid"; echo $?))"
}

# memcached_stop: end the memcached memcached_start started.
memcached_stop() {
	kill "$mpid" 2>/dev/null
	# memcached's own status after SIGTERM says nothing about the run.
	wait "$mpid" || true
}

# memcached on the loopback, with memcaslap's load (10% sets, 90% gets,
# a fifth of the gets verified against what was set) and memccapable's
# protocol checks, both from libmemcached-tools.
memcached_one() {
	memcached_start "$test_timeout" 2
	memcaslap -s 127.0.0.1:11211 -T 2 -c 8 -x 2000 -v 0.2 || echo "memcaslap: exit status $?"
	memccapable -h 127.0.0.1 -p 11211 || echo "memccapable: exit status $?"
	memcached_stop
}

prog_memcached() {
	memcached_setup
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

# prog_glib_rwlock: GLib's own GRWLock tests (libglib2.0-tests'
# installed-tests/glib/rwlock), GTest's TAP verdict. GRWLock is a
# pthread_rwlock_t, so under tofutex-run its locks are TO reader/writer
# locks: /thread/rwlock8 has two writers keep a number even across two
# changes while ten readers assert they never see it odd, the others the
# try functions' answers and recursive reader trylocks. /thread/rwlock7
# (a hundred writer threads, 10^6 locks) is skipped: minutes in the
# emulated guest, and it has no readers.
prog_glib_rwlock() {
	prog_run glib-rwlock prog_exec rwlock -s /thread/rwlock7
	prog_common
	for f in stock tfx; do
		o=/tmp/prog-glib-rwlock.$f
		grep -q "^ok 8 /thread/rwlock8" $o ||
			problem="$problem; $f: /thread/rwlock8 did not pass"
		grep -q "^not ok" $o && problem="$problem; $f: a test failed"
	done
}

programs_check() {
	# Four threads that yield inside eight mutexes. Whether a lock's
	# contention outlasts the user-space spin and reaches the module
	# depends on the guest kernel's scheduler (a 7.3 guest, lazy
	# preemption, ran 400 events with no LOCK call at all): the module's
	# condition waits (sysbench's start barrier) show the run was on it.
	prog_sysbench sysbench-threads threads --threads=4 --time=0 --events=400 run
	prog_took_to lock steals wait
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
	prog_glib_rwlock
	prog_took_to lock steals
	prog_verdict "$name" "$problem"
}

# ---- make bench: the real programs' own metrics ----------------------

# Every run is bounded twice: by its own size (a time limit or a count of
# operations, chosen so that one run takes a few seconds in the -smp 2
# TCG guest, up to 10 s for memcached) and by bench_limit, a backstop
# several times the longest run seen on a loaded host, after which the
# run is killed and reported as timed out.
bench_limit=60

# bench_tmp: where the runs' input and output live (the guest's private
# /tmp; bench/programs-native.sh gives each run of its own a directory).
# bench_secs: the length of a timed run (sysbench threads, stress-ng).
bench_tmp=${bench_tmp:-/tmp}
bench_secs=${bench_secs:-2}
# py-threads: the script (tests/programs/py-threads.py) and its items.
bench_py=${bench_py:-/programs/py-threads.py}
bench_py_items=${bench_py_items:-100000}

# bench_time CMD...: run CMD (output in $bench_tmp/bench.out); $rc its exit
# status, $secs the seconds it took (to /proc/uptime's hundredths: the
# compressors' MB/s come from them). $lim, the backstop, goes before
# every program that CMD runs.
lim="timeout $bench_limit"
bench_time() {
	bench_t0=$(cut -d' ' -f1 /proc/uptime)
	rc=0
	"$@" >"$bench_tmp"/bench.out 2>&1 || rc=$?
	secs=$(awk -v a="$bench_t0" -v b="$(cut -d' ' -f1 /proc/uptime)" \
		'BEGIN { printf "%.2f", b - a }')
}

# bench_input LINES FILE...: the compressors' input, $bench_tmp/pigz.in:
# LINES lines of text, then the binaries FILE... (about 12 MB with
# 400,000 lines and pigz and sysbench).
bench_input() {
	n=$1
	shift
	awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++) print i, i * i, "tofutex", i % 7 }' \
		>"$bench_tmp"/pigz.in
	cat "$@" >>"$bench_tmp"/pigz.in
}

# bench_mbs: MB/s of $bench_tmp/pigz.in in $secs, empty when the run
# failed.
bench_mbs() {
	[ "$rc" != 0 ] || awk -v s="$secs" -v b="$(wc -c <"$bench_tmp"/pigz.in)" \
		'BEGIN { if (s > 0) printf "MB/s %.3f\n", b / s / 1e6 }'
}

# memcached_load THREADS: memcached with THREADS worker threads under
# $RUNNER, and memcaslap's load for 2 s (memcaslap itself stock).
memcached_load() {
	memcached_start "$bench_limit" "$1"
	$lim memcaslap -s 127.0.0.1:11211 -T 2 -c 8 -w 1k -t 2s
	mrc=$?
	memcached_stop
	return $mrc
}

# memcached_clients THREADS: memcached with 4 worker threads under
# $RUNNER, and memcaslap's load from THREADS client threads, 4 connections
# each, for $bench_secs s: the lock-bound table's memcached row, where the
# workers' item, LRU and statistics locks see more requests at once than
# memcached_load's 2 x 8.
memcached_clients() {
	memcached_start "$bench_limit" 4
	$lim memcaslap -s 127.0.0.1:11211 -T "$1" -c $(($1 * 4)) -w 1k -t "${bench_secs}s"
	mrc=$?
	memcached_stop
	return $mrc
}

# ---- the lock-bound programs: where a pthread mutex is the bottleneck --
#
# RocksDB's LRU block cache (one mutex per shard), Kyoto Cabinet's
# in-memory and file hash databases (their record and method locks),
# SQLite on one connection in serialized mode (the connection's mutex;
# bench/drivers/sqlite-threads.c) and memcached with more clients.
# bench_lb_ops: the operations of a count-bound run at native speed
# (about 1-2 s on the 2-core build host); the guest divides them by
# bench_lb_div. bench_drivers: where sqlite-threads is.
bench_lb_ops=${bench_lb_ops:-800000}
bench_lb_div=${bench_lb_div:-1}
bench_drivers=${bench_drivers:-/programs}

# bench_lb_setup: what the count-bound runs read: RocksDB's database of
# 200,000 100-byte values in $bench_tmp/rdb (built stock, once).
bench_lb_setup() {
	[ ! -e "$bench_tmp"/rdb/CURRENT ] || return 0
	$lim db_bench --db="$bench_tmp"/rdb --benchmarks=fillseq \
		--num=$((200000 / bench_lb_div)) --value_size=100 --threads=1 \
		--compression_type=none >"$bench_tmp"/rdb.out 2>&1 ||
		{ cat "$bench_tmp"/rdb.out; return 1; }
}

# bench_kc_rate TOTAL: operations per second of a Kyoto Cabinet test run
# that did TOTAL operations in $secs, empty when it failed (its "ok").
# Its status is 0 either way: a failed run is an empty metric, not an
# error of the caller's (programs-native.sh runs under set -e).
bench_kc_rate() {
	if [ "$rc" = 0 ] && grep -q '^ok$' "$bench_out"; then
		awk -v n="$1" -v s="$secs" 'BEGIN { if (s > 0) printf "ops/s %.0f\n", n / s }'
	fi
}

# bench_p99 SCALE: the P99 of the "Percentiles:" line RocksDB's tools
# print, times SCALE: in microseconds. Empty when the run failed.
bench_p99() {
	[ "$rc" = 0 ] || return 0
	awk -v m="$1" '/Percentiles:/ { for (i = 1; i < NF; i++) if ($i == "P99:") v = $(i + 1) * m }
	     END { if (v != "") printf "%.1f\n", v }' "$bench_out"
}

# bench_metric PROGRAM THREADS: run PROGRAM once under $RUNNER (output
# in $bench_tmp/bench.out); $metric its own metric as "UNIT VALUE", empty
# when the run failed, and $p99 the 99th percentile of an operation's
# latency in microseconds where the program reports one. xz, zstd, plzip
# and py-threads run on the build host only (bench/programs-native.sh);
# the guest has none of them.
bench_metric() {
	bench_out=$bench_tmp/bench.out
	p99=
	# shellcheck disable=SC2086 # $lim and $RUNNER: words or none
	case $1 in
	sysbench-threads)
		bench_time $lim $RUNNER sysbench threads --threads="$2" \
			--thread-yields=100 --time="$bench_secs" run
		metric=$(awk '/total time:/ { t = $3 + 0 } /total number of events:/ { e = $5 }
		     END { if (t > 0 && e != "") printf "events/s %.2f\n", e / t }' "$bench_out") ;;
	sysbench-mutex)
		bench_time $lim $RUNNER sysbench mutex --threads="$2" \
			--mutex-locks="$bench_mutex_locks" run
		metric=$(awk -v n=$(($2 * bench_mutex_locks)) '/total time:/ { t = $3 + 0 }
		     END { if (t > 0) printf "locks/s %.0f\n", n / t }' "$bench_out") ;;
	sysbench-mutex-contended)
		bench_time $lim $RUNNER sysbench mutex --threads="$2" --mutex-num=1 \
			--mutex-locks=$((bench_contended_locks / $2)) --mutex-loops=10 run
		metric=$(awk -v n=$((bench_contended_locks / $2 * $2)) '/total time:/ { t = $3 + 0 }
		     END { if (t > 0) printf "locks/s %.0f\n", n / t }' "$bench_out") ;;
	stress-ng-mutex)
		bench_time $lim $RUNNER stress-ng --mutex 1 --mutex-procs "$2" -t "$bench_secs" \
			--metrics-brief
		metric=$(awk '$4 == "mutex" && $5 ~ /^[0-9]+$/ { print "bogo-ops/s", $(NF - 1) }' \
			"$bench_out") ;;
	stress-ng-pthread)
		bench_time $lim $RUNNER stress-ng --pthread 1 --pthread-max "$2" -t "$bench_secs" \
			--metrics-brief
		metric=$(awk '$4 == "pthread" && $5 ~ /^[0-9]+$/ { print "bogo-ops/s", $(NF - 1) }' \
			"$bench_out") ;;
	pigz)
		bench_time $lim $RUNNER pigz -p "$2" -b 32 -c "$bench_tmp"/pigz.in
		metric=$(bench_mbs) ;;
	xz)
		bench_time $lim $RUNNER xz -T"$2" -1 -c "$bench_tmp"/pigz.in
		metric=$(bench_mbs) ;;
	zstd)
		bench_time $lim $RUNNER zstd -T"$2" -3 -c "$bench_tmp"/pigz.in
		metric=$(bench_mbs) ;;
	plzip)
		bench_time $lim $RUNNER plzip -n "$2" -1 -c "$bench_tmp"/pigz.in
		metric=$(bench_mbs) ;;
	py-threads)
		bench_time $lim $RUNNER python3 "$bench_py" "$2" "$bench_py_items"
		metric=$(awk -v s="$secs" -v r="$rc" '/^py-threads items=/ {
			split($2, a, "="); if (r == 0 && s > 0) printf "items/s %.0f\n", a[2] / s }' "$bench_out") ;;
	memcached | memcached-clients)
		if [ "$1" = memcached ]; then
			bench_time memcached_load "$2"
		else
			bench_time memcached_clients "$2"
		fi
		metric=$(awk '/TPS:/ { for (i = 1; i < NF; i++) if ($i == "TPS:") v = $(i + 1) }
		     END { if (v != "") print "requests/s", v }' "$bench_out") ;;
	rocksdb-readrandom)
		# A 1 MB block cache: most reads miss it and insert, all
		# through its shards' mutexes.
		bench_time $lim $RUNNER db_bench --db="$bench_tmp"/rdb --use_existing_db=1 \
			--benchmarks=readrandom --num=$((200000 / bench_lb_div)) --threads="$2" \
			--cache_size=1048576 --duration="$bench_secs" --histogram=1 \
			--compression_type=none
		metric=$(awk '$1 == "readrandom" && $2 == ":" { print "ops/s", $5 }' "$bench_out")
		p99=$(bench_p99 1) ;;
	rocksdb-cache1 | rocksdb-cache4)
		# cache_bench: lookups, inserts and erases on one LRU cache
		# of 1 or 4 shards (each shard one mutex).
		bench_time $lim $RUNNER cache_bench -threads="$2" \
			-num_shard_bits="$([ "$1" = rocksdb-cache1 ] && echo 0 || echo 2)" \
			-ops_per_thread=$((bench_lb_ops / bench_lb_div / $2)) \
			-cache_size=$((67108864 / bench_lb_div)) -value_bytes=1024
		metric=$(awk '/Rough parallel ops\/sec/ { print "ops/s", $NF }' "$bench_out")
		p99=$(bench_p99 0.001) ;;
	kc-cache-wicked)
		bench_time $lim $RUNNER kccachetest wicked -th "$2" \
			$((bench_lb_ops * 2 / bench_lb_div / $2))
		metric=$(bench_kc_rate $((bench_lb_ops * 2 / bench_lb_div / $2 * $2))) ;;
	kc-cache-order)
		bench_time $lim $RUNNER kccachetest order -th "$2" \
			$((bench_lb_ops / bench_lb_div / $2))
		metric=$(bench_kc_rate $((bench_lb_ops / bench_lb_div / $2 * $2))) ;;
	kc-hash-wicked)
		rm -f "$bench_tmp"/kc.kch
		bench_time $lim $RUNNER kchashtest wicked -th "$2" "$bench_tmp"/kc.kch \
			$((bench_lb_ops / 2 / bench_lb_div / $2))
		metric=$(bench_kc_rate $((bench_lb_ops / 2 / bench_lb_div / $2 * $2))) ;;
	sqlite)
		bench_time $lim $RUNNER "$bench_drivers"/sqlite-threads "$2" "$bench_secs"
		[ "$rc" != 0 ] ||
		metric=$(awk '/^sqlite-threads / { for (i = 2; i <= NF; i++) if ($i ~ /^ops\/s=/) print "ops/s", substr($i, 7) }' "$bench_out")
		p99=$(awk '/^sqlite-threads / { for (i = 2; i <= NF; i++) if ($i ~ /^p99_us=/) print substr($i, 8) }' "$bench_out") ;;
	esac
}

# bench_one PROGRAM THREADS VARIANT RUN: one run, reported as it ends:
#   program=P threads=T variant=V run=R unit=U value=X secs=S rc=N
#   lock=.. unlock=.. spins=.. sleeps=.. steals=.. handoffs=.. wait=.. wake=..
# (the module's global statistics moved by the run: nothing else runs in
# the guest meanwhile, and worker processes that leave with _exit() print
# no TOFUTEX_RUN_STATS line of their own). value=FAILED when the run
# printed no metric, with rc=124 or 143 when the backstop killed it.
# VARIANT is stock, tofutex (tofutex-run on the module), futex
# (tofutex-run on futex(2)) or tofutex/NAME=VALUE: tofutex-run on the
# module with its parameter NAME set to VALUE for this run only.
bench_one() {
	RUNNER=tofutex-run
	[ "$3" != stock ] || RUNNER=
	bo_param=
	case $3 in
	tofutex/*=*)
		bo_param=${3#tofutex/}
		bo_param=${bo_param%%=*}
		# A parameter's name only: no path reaches outside the module's.
		case $bo_param in
		'' | *[!a-z0-9_]*) bo_param=/nonexistent ;;
		*) bo_param=/sys/module/tofutex/parameters/$bo_param ;;
		esac
		if ! bo_saved=$(cat "$bo_param" 2>/dev/null) ||
			! echo "${3#*=}" >"$bo_param"; then
			say "program=$1 threads=$2 variant=$3 run=$4 unit=- value=FAILED secs=0 rc=2"
			return
		fi
		;;
	esac
	before=$(prog_stats)
	[ "$3" != futex ] || export TOFUTEX_BACKEND=futex
	bench_metric "$1" "$2"
	unset TOFUTEX_BACKEND
	[ -z "$bo_param" ] || echo "$bo_saved" >"$bo_param"
	d=$(prog_delta "$before" "$(prog_stats)")
	[ -n "$metric" ] || metric="- FAILED"
	say "program=$1 threads=$2 variant=$3 run=$4 unit=${metric% *} value=${metric#* } secs=$secs rc=$rc $d${p99:+ p99=$p99}"
	if [ -z "${metric%%* FAILED}" ]; then
		tail -n 5 "$bench_tmp"/bench.out | sed "s/^/[programs] $1: /"
	fi
}

# The points: PROGRAM:THREADS (threads, or stress-ng's instances, or
# pigz's and memcached's worker threads). PROGRAMS_BENCH_POINTS (in the
# guest's environment: TEST_ENV) replaces them, separated by commas.
bench_points="sysbench-threads:2 sysbench-threads:4 sysbench-threads:8
sysbench-threads:16 sysbench-mutex:4 sysbench-mutex-contended:1
sysbench-mutex-contended:2 sysbench-mutex-contended:4
sysbench-mutex-contended:8 sysbench-mutex-contended:16 stress-ng-mutex:4
stress-ng-pthread:8 pigz:2 memcached:2"
[ -z "${PROGRAMS_BENCH_POINTS-}" ] || bench_points=$PROGRAMS_BENCH_POINTS
# sysbench mutex runs a fixed number of locks per thread: its defaults'
# 50,000 (each after 10,000 empty loops) take minutes under emulation;
# 10,000 take about a second. The contended runs share 2,000,000 locks
# among their threads (about a second stock at 1 to 3 million locks a
# second): with far fewer, each thread is done within its first time
# slices and the threads hardly overlap.
bench_mutex_locks=10000
bench_contended_locks=2000000

# programs_bench REPEATS: every point stock, under tofutex-run on the
# module and under tofutex-run on futex(2), REPEATS rounds with the three
# variants interleaved; one line per run (bench_one) on fd 3 (the host's
# results file) and the console.
programs_bench() {
	memcached_setup
	# pigz's input: about 12 MB, a second or more of pigz -p 2 in the
	# guest (several on a loaded host).
	bench_input 400000 /usr/bin/pigz /usr/bin/sysbench
	bench_rounds bench_programs "$1" "$bench_points"
}

# The lock-bound programs in the guest: each at one thread count where
# its lock is busy on two vCPUs, a tenth of the native operations.
# LOCKBOUND_BENCH_POINTS (TEST_ENV) replaces them, separated by commas.
lockbound_points="rocksdb-cache1:4 rocksdb-cache4:4 rocksdb-readrandom:8
kc-cache-wicked:4 kc-cache-order:8 kc-hash-wicked:4 sqlite:4 memcached-clients:4"
[ -z "${LOCKBOUND_BENCH_POINTS-}" ] || lockbound_points=$LOCKBOUND_BENCH_POINTS

# lockbound_bench REPEATS: the lock-bound programs as programs_bench runs
# its points; the "targets:" line tells bench/report-programs.sh which
# targets to print.
lockbound_bench() {
	memcached_setup
	bench_lb_div=10
	bench_lb_setup || return 0
	say "targets: lockbound"
	bench_rounds bench_lockbound "$1" "$lockbound_points"
}

# bench_rounds NAME REPEATS POINTS: programs_bench's loop over POINTS,
# its progress lines labelled NAME; in each round the variants of
# BENCH_VARIANTS (TEST_ENV; separated by commas, see bench_one) one
# after the other, by default stock, tofutex and futex.
bench_rounds() {
	pb_name=$1
	shift
	pb_t0=$(cut -d" " -f1 /proc/uptime)
	for point in $(echo "$2" | tr , ' '); do
		r=1
		while [ $r -le "$1" ]; do
			for v in $(echo "${BENCH_VARIANTS:-stock,tofutex,futex}" | tr , ' '); do
				bench_one "${point%:*}" "${point#*:}" "$v" $r
			done
			r=$((r + 1))
		done
		# A progress line for the host's terminal (tests/qemu/run.sh).
		echo "@@PROGRESS $pb_name secs=$(awk -v t0="$pb_t0" \
			'{ printf "%.0f", $1 - t0 }' /proc/uptime) $point: $1 rounds" >&3
	done
}
