#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/qemu/run.sh MODE [KVER...] - run the tests or benchmarks.
#
#   check [KVER...]   for each kernel (default: tests/qemu/kernels.sh list):
#                     build the module, pack an initramfs with busybox, the
#                     module and the test programs, boot QEMU, collect the
#                     results; then print one line "N passed, N failed"
#   bench [KVER...]   the same with the benchmark programs, on one kernel
#                     by default (kernels.sh bench); raw output is saved in
#                     build/bench/<kernel>/<program>.txt, the summary
#                     tables are printed and written with the charts to
#                     build/bench/<kernel>/report.md (bench/report-page.sh)
#   check-host        the test programs on this machine (module loaded)
#   check-native      the library suites (tests/test_lib_*.c) on this
#                     machine with the futex backend: no module, no QEMU;
#                     `check` runs them first, with glibc's own tests
#   check-glibc       glibc's own tests (tests/glibc/) on this machine,
#                     stock and under tofutex-run, futex backend
#   bench-host        the benchmark programs on this machine
#
# KVER is an installed release or a prefix ("6.1", "6.12"). It builds the
# user-space programs itself (make userspace), holding build/.run.lock so
# that concurrent runs in one tree take turns.
#
# Environment:
#   KIMAGE, KDIR, KNAME  boot this kernel image with a module built against
#                        the build tree KDIR, instead of installed kernels;
#                        KNAME labels it in the output (default: its release)
#   KAPPEND              extra guest kernel command line; a preempt= in it
#                        is every boot's model, as PREEMPT_MODES=MODEL
#   PREEMPT_MODES        preemption models each check guest boots with:
#                        words "default" (the kernel's own, voluntary on
#                        Debian's PREEMPT_DYNAMIC kernels) or a preempt=
#                        value; unset: "default" for every kernel, and
#                        "none" as well for the first kernel of the list
#                        whose configuration has it (check); "default" for
#                        bench
#   GUEST_SCOPE          what a check guest's first boot runs: "all" (every
#                        suite on every backend, the no-module fallback,
#                        glibc's tests, the real programs), "backends" (the
#                        Check programs and the suites on the module and
#                        futex backends), "module" (those on the module
#                        backend only); unset: "all" for the first and the
#                        last kernel of the list (the oldest and the newest
#                        -rt of the default one) and for a single kernel,
#                        MIDDLE_SCOPE between them
#   MIDDLE_SCOPE         what the kernels between the list's ends run when
#                        GUEST_SCOPE is unset: "backends" (default) or
#                        "module" (make check: the futex backend's suites
#                        run at the ends and natively)
#   TESTS                only these test programs, e.g. "test_lock test_device";
#                        the word "glibc" for glibc's own tests (run when
#                        TESTS is unset)
#   GLIBC_TESTS          only these of glibc's tests, e.g. "tst-cond1 tst-mutex1"
#   PROGRAMS=0           leave out the real programs (tests/programs/run.sh)
#   LOCKBOUND=0          bench: leave out the lock-bound programs
#   GLIBC=0              leave out glibc's own tests (tests/glibc/) in the guests;
#                        GLIBC=every runs them on the module of every kernel,
#                        GLIBC=newest on the last kernel of the list only
#                        (default: the guests of scope "all", the ends of
#                        the list)
#   BENCHES              only these benchmark programs ("none": only the
#                        real programs), e.g. "bench_lock"
#   QEMU_ACCEL           QEMU -accel (default tcg,thread=multi)
#   QEMU_TIMEOUT         seconds a guest may run (default 600 check, 1500 with glibc's
#                        tests, 3600 bench)
#   TEST_TIMEOUT         seconds one program may run (default QEMU_TIMEOUT - 30
#                        in a guest, 600 on the host)
#   TEST_ENV             "VAR=value ..." exported to the programs in the guest
#   GUEST_KO             boot with this prebuilt module (.ko, .ko.xz or .ko.zst,
#                        e.g. one DKMS installed) instead of building one;
#                        give one kernel with it
#   GUEST_TESTS          these test programs instead of build/tests/test_*
#   VERBOSE=1            guest console on the terminal as well
#   ARCH=arm64           check only: arm64 guests (qemu-system-aarch64 -M
#                        virt, QEMU_CPU, default neoverse-n1) of Debian's
#                        arm64 kernels (tests/qemu/arm64-kernels.sh; default
#                        6.1, 6.12 and "default" of Debian 13's), the module,
#                        the static Check programs and the pthread preload
#                        with its suites cross-built (build/arm64/user); no
#                        native run, glibc tests or real programs
#
# How results get out: the guest's /init (tests/qemu/init) writes "@@" lines
# to its second serial port, which QEMU writes to a host file, and leaves
# through the isa-debug-exit port, which makes QEMU's exit status odd. The
# host follows that file while QEMU runs and prints each test program's
# summary and each benchmark phase as the guest reports it. The console
# (first serial port) is saved in build/<kver>/<mode>/console.log and its
# tail is printed when a guest fails to report.
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
here=$top/tests/qemu
mode=${1-}
shift || true

die() {
	echo "run.sh: $*" >&2
	exit 1
}

# The guests' architecture (ARCH). Kbuild and make read ARCH from the
# environment: it goes no further than here.
case ${ARCH-} in
"" | x86 | x86_64 | amd64) garch=x86_64 ;;
arm64 | aarch64) garch=arm64 ;;
*) die "ARCH=$ARCH: x86_64 (the default) or arm64" ;;
esac
unset ARCH
# Where the guests' static test programs are; the QEMU and busybox they
# run with.
ubuild=$top/build
qemu_bin="qemu-system-x86_64"
busybox=/bin/busybox
if [ "$garch" = arm64 ]; then
	ubuild=$top/build/arm64/user/build
	qemu_bin="qemu-system-aarch64"
fi

# The programs built from the sources there are now (build/ may still hold
# programs whose sources are gone).
test_bins() {
	local src bin

	for src in "$top"/tests/test_*.c; do
		bin=$ubuild/tests/$(basename "$src" .c)
		if [ -n "${TESTS-}" ] && ! grep -qw -- "${bin##*/}" <<<"$TESTS"; then
			continue
		fi
		[ -x "$bin" ] && echo "$bin"
	done
	return 0
}

# The library suites built under ThreadSanitizer (Makefile, TSAN_BINS),
# and the preload's lock suites (TSAN_PRELOAD_BINS).
tsan_test_bins() {
	local src bin

	for src in "$top"/tests/test_lib_*.c "$top"/build/tsan/preload/test_*; do
		case $src in
		*.d) continue ;;
		*/test_lib_*) bin=$top/build/tsan/$(basename "$src" .c) ;;
		*) bin=$src ;;
		esac
		if [ -n "${TESTS-}" ] && ! grep -qw -- "${bin##*/}" <<<"$TESTS"; then
			continue
		fi
		[ -x "$bin" ] && echo "$bin"
	done
	return 0
}

# arm64_userspace: the static Check programs (TESTS: only those) for
# arm64 guests, built in build/arm64/user, a tree of links to the sources
# (the Makefile writes build/ where it runs), with the cross compiler and
# arm64 Check from arm64-kernels.sh's sysroot.
arm64_userspace() {
	local u=$top/build/arm64/user s f src b bins=()

	s=$("$here/arm64-kernels.sh" sysroot) || die "no arm64 Check (arm64-kernels.sh sysroot)"
	mkdir -p "$u"
	for f in Makefile lib tests bench uapi module; do
		ln -sfn "$top/$f" "$u/$f"
	done
	for src in "$top"/tests/test_*.c; do
		b=$(basename "$src" .c)
		if [ -n "${TESTS-}" ] && ! grep -qw -- "$b" <<<"$TESTS"; then
			continue
		fi
		bins+=("build/tests/$b")
	done
	[ ${#bins[@]} -gt 0 ] || die "TESTS names no test program"
	# The pthread preload, tofutex-run and the preload's conformance
	# programs (dynamically linked against Debian's arm64 cross glibc,
	# the same release as the host's), unless only the kernel's tests run.
	if [ "$guest_scope" != kernel ]; then
		for src in "$top"/tests/preload/test_*.c; do
			b=$(basename "$src" .c)
			if [ -n "${TESTS-}" ] && ! grep -qw -- "$b" <<<"$TESTS"; then
				continue
			fi
			bins+=("build/tests/preload/$b")
		done
		bins+=(build/lib/libtofutex-pthread.so.0.1.0 build/bin/tofutex-run)
		for src in "$top"/tests/preload/plugin_*.c; do
			b=$(basename "$src" .c)
			bins+=("build/tests/preload/libtfx-plugin-${b#plugin_}.so")
		done
		bins+=(build/tests/preload/locale/tfx_comma/LC_NUMERIC)
	fi
	"${MAKE:-make}" -C "$u" --no-print-directory CC=aarch64-linux-gnu-gcc \
		AR=aarch64-linux-gnu-ar \
		CPPFLAGS="-I$s/usr/include -I$s/usr/include/aarch64-linux-gnu" \
		LDFLAGS="-L$s/usr/lib/aarch64-linux-gnu" "${bins[@]}"
}

# pack_preload_arm64 ROOT: what pack_preload packs, from the arm64 build
# (build/arm64/user), with Debian's arm64 cross glibc (libc6-arm64-cross:
# the loader, libc, libm, libgcc_s, which glibc loads to unwind a
# cancelled thread) where an arm64 Debian has them.
pack_preload_arm64() {
	local root=$1 b=$top/build/arm64/user/build g=/usr/aarch64-linux-gnu/lib
	local lib

	mkdir -p "$root/usr/local/bin" "$root/usr/local/lib" \
		"$root/lib/aarch64-linux-gnu" "$root/tests/preload"
	cp "$b/bin/tofutex-run" "$root/usr/local/bin/"
	cp -L "$b/lib/libtofutex-pthread.so.0" "$root/usr/local/lib/"
	for lib in ld-linux-aarch64.so.1 libc.so.6 libm.so.6 libgcc_s.so.1 \
		libpthread.so.0 librt.so.1 libdl.so.2; do
		cp -L "$g/$lib" "$root/lib/aarch64-linux-gnu/"
	done
	ln -sfn aarch64-linux-gnu/ld-linux-aarch64.so.1 \
		"$root/lib/ld-linux-aarch64.so.1"
	for bin in "$b"/tests/preload/test_*; do
		case $bin in *.d) continue ;; esac
		if [ -n "${TESTS-}" ] && ! grep -qw -- "${bin##*/}" <<<"$TESTS"; then
			continue
		fi
		cp "$bin" "$root/tests/preload/"
	done
	cp "$b"/tests/preload/*.so "$root/tests/preload/" 2>/dev/null || true
	cp -r "$b/tests/preload/locale" "$root/tests/preload/"
}

# The pthread preload's conformance programs (dynamically linked).
preload_test_bins() {
	local src bin

	for src in "$top"/tests/preload/test_*.c; do
		[ -e "$src" ] || continue
		bin=$top/build/tests/preload/$(basename "$src" .c)
		if [ -n "${TESTS-}" ] && ! grep -qw -- "${bin##*/}" <<<"$TESTS"; then
			continue
		fi
		[ -x "$bin" ] && echo "$bin"
	done
	return 0
}

# glibc_wanted: glibc's own tests are to run in the guests (GLIBC not 0,
# TESTS unset or naming "glibc") and are built (tests/glibc/build.sh, run
# below).
glibc_wanted() {
	[ "${GLIBC-1}" != 0 ] || return 1
	if [ -n "${TESTS-}" ] && ! grep -qw glibc <<<"$TESTS"; then
		return 1
	fi
	[ -x "$top/build/glibc/run.sh" ]
}

# pack_glibc ROOT: glibc's own tests, their lists and their libraries,
# into ROOT/glibc for tests/glibc/run.sh in the guest.
pack_glibc() {
	local root=$1 g=$top/build/glibc

	mkdir -p "$root/glibc"
	cp -r "$g/bin" "$g/expect" "$g/tests.list" "$g/known-failures" "$g/run.sh" "$root/glibc/"
	rm -f "$root"/glibc/bin/*.err
	pack_libs "$root" "$root"/glibc/bin/*
}

# glibc_run LABEL RESULTS BACKEND...: glibc's own tests on this machine,
# stock and under tofutex-run; their report as "@@GLIBC" lines and one
# harness step into RESULTS.
glibc_run() {
	local label=$1 results=$2 rc=0 log=$top/build/glibc/native.log
	shift 2

	echo "== $label: glibc's own tests, stock and under tofutex-run ($*)"
	TOFUTEX_RUN=$top/build/bin/tofutex-run TIMEOUTFACTOR=${TIMEOUTFACTOR:-3} \
		GLIBC_TESTS_OUT=$top/build/glibc/out \
		"$top/build/glibc/run.sh" -j "${GLIBC_JOBS:-4}" "$top/build/glibc" "$@" \
		>"$log" 2>&1 || rc=$?
	sed 's/^/@@GLIBC /' "$log" >>"$results"
	if [ "$rc" = 0 ]; then
		echo "@@STEP glibc-tests ok" >>"$results"
	else
		echo "@@STEP glibc-tests FAIL see build/glibc/native.log" >>"$results"
	fi
}

# pack_libs ROOT FILE...: copy the shared libraries each dynamically
# linked FILE needs (as ldd resolves them here), and the dynamic linker,
# into ROOT at the same paths.
pack_libs() {
	local root=$1 lib real
	shift

	for lib in $(ldd "$@" 2>/dev/null |
		     sed -n 's|.*=> \(/[^ ]*\) .*|\1|p; s|^[[:space:]]*\(/[^ ]*\) (0x.*|\1|p' |
		     sort -u); do
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
		# Also where a link leads (/lib64's loader is Debian's
		# /lib/<multiarch>/ld-linux-*.so.2), where the loader's own
		# search finds it: dlmopen() of a new namespace loads it so.
		real=$(readlink -f "$lib")
		[ "$real" = "$lib" ] || {
			mkdir -p "$root$(dirname "$real")"
			cp -L "$lib" "$root$real"
		}
	done
}

# pack_preload ROOT: tofutex-run and libtofutex-pthread.so where
# `make install` puts them, with the libraries they need, and libgcc_s,
# which glibc loads with dlopen() to unwind a cancelled thread.
pack_preload() {
	local root=$1 gcc_s

	mkdir -p "$root/usr/local/bin" "$root/usr/local/lib"
	cp "$top/build/bin/tofutex-run" "$root/usr/local/bin/"
	cp -L "$top/build/lib/libtofutex-pthread.so.0" "$root/usr/local/lib/"
	pack_libs "$root" "$top/build/bin/tofutex-run" \
		"$top/build/lib/libtofutex-pthread.so.0"
	# awk reads everything: an early exit would kill ldconfig with SIGPIPE.
	gcc_s=$(/sbin/ldconfig -p | awk '/libgcc_s\.so\.1 .*x86-64/ && !p { p = $NF } END { print p }')
	[ -n "$gcc_s" ] || die "libgcc_s.so.1 not found (ldconfig -p)"
	mkdir -p "$root$(dirname "$gcc_s")"
	cp -L "$gcc_s" "$root$gcc_s"
}

# pack_perf ROOT: perf(1) (Debian's linux-perf) and its libraries, for
# test_trace's perf record/perf script run; TOFUTEX_TEST_PERF tells the
# test that perf is there, so that it fails rather than skips.
pack_perf() {
	local root=$1 perf

	perf=$(command -v perf) || die "perf is missing (run tests/deps.sh)"
	mkdir -p "$root/usr/bin"
	cp -L "$perf" "$root/usr/bin/perf"
	pack_libs "$root" "$perf"
	echo "TOFUTEX_TEST_PERF=/usr/bin/perf" >>"$root/etc/tofutex-test.env"
}

# The real programs tests/programs/run.sh runs under tofutex-run in the
# guests (Debian packages, tests/deps.sh), and the tools it needs; a path
# for one that is not on PATH (packed into /usr/bin all the same).
program_bins=(sysbench stress-ng pigz memcached memcaslap memccapable memcping
	      /usr/libexec/installed-tests/glib/rwlock)

# pack_programs ROOT: those programs, their libraries, the guest script.
pack_programs() {
	local root=$1 p path paths=()

	mkdir -p "$root/usr/bin" "$root/programs"
	for p in "${program_bins[@]}"; do
		path=$(command -v "$p") || die "$p is missing (run tests/deps.sh)"
		cp -L "$path" "$root/usr/bin/"
		paths+=("$path")
	done
	pack_libs "$root" "${paths[@]}"
	cp "$top/tests/programs/run.sh" "$root/programs/run.sh"
	cp "$top/build/tests/programs/tofutex-stats" "$root/programs/"
}

# The lock-bound programs `make bench` runs (tests/programs/run.sh,
# lockbound_bench; Debian packages, tests/deps.sh), and the SQLite driver.
lockbound_bins=(db_bench cache_bench kccachetest kchashtest)

# pack_lockbound ROOT: those programs and their libraries, the driver.
pack_lockbound() {
	local root=$1 p path paths=()

	for p in "${lockbound_bins[@]}"; do
		path=$(command -v "$p") || die "$p is missing (run tests/deps.sh all)"
		cp -L "$path" "$root/usr/bin/"
		paths+=("$path")
	done
	path=$top/build/bench/drivers/sqlite-threads
	[ -x "$path" ] || die "no $path (make lockbound-bins)"
	cp "$path" "$root/programs/"
	pack_libs "$root" "${paths[@]}" "$path"
}

bench_bins() {
	local src bin

	for src in "$top"/bench/*.c; do
		bin=$top/build/bench/bin/$(basename "$src" .c)
		if [ -n "${BENCHES-}" ] && ! grep -qw -- "${bin##*/}" <<<"$BENCHES"; then
			continue
		fi
		[ -x "$bin" ] && echo "$bin"
	done
	return 0
}

# mawk, Debian's awk, reads a pipe in blocks: -W interactive makes it read
# line by line, so that a streamed result shows up as it arrives.
line_awk=(awk)
if awk -W version 2>/dev/null | grep -q mawk; then
	line_awk+=(-W interactive)
fi

# parse LABEL [COUNTS] < results: print the guest's Check summaries,
# benchmark progress and harness failures, each line as soon as its record
# arrives (results may be a stream that the guest is still writing); then
# "COUNTS <passed> <failed> <ended>", as the last line or into the file
# COUNTS.
parse() {
	# shellcheck disable=SC2016 # the program is awk
	"${line_awk[@]}" -v k="$1" -v counts="${2-}" '
	function out(s) {
		print s
		fflush()
	}
	function rest(n,   s, i) {	# fields n.. of the current line
		s = $0
		for (i = 1; i < n; i++)
			sub(/^[^ ]+ /, "", s)
		return s
	}
	/^@@CHECK / {
		name = $2; rc = $3; sub(/^rc=/, "", rc)
		secs = $4; sub(/^secs=/, "", secs)
		summary = rest(5)
		if (match(summary, /Checks: [0-9]+, Failures: [0-9]+, Errors: [0-9]+/)) {
			split(substr(summary, RSTART, RLENGTH), a, /[^0-9]+/)
			pass += a[2] - a[3] - a[4]
			fail += a[3] + a[4]
			out(sprintf("[%s] %s: %s (%s s)", k, name, summary, secs))
			if (rc != 0 && a[3] + a[4] == 0) {
				fail++
				out(sprintf("[%s] %s: FAIL: exit status %s although no Check test failed", k, name, rc))
			}
		} else {
			fail++
			out(sprintf("[%s] %s: FAIL: no Check summary (exit status %s%s)", k, name, rc,
				rc == 124 || rc == 143 ? ": timed out" : ""))
		}
		next
	}
	/^@@DETAIL / { out(sprintf("[%s]     %s: %s", k, $2, rest(3))); next }
	/^@@GLIBC / { out(sprintf("[%s] %s", k, rest(2))); next }
	/^@@STEP / {
		if ($3 != "ok") {
			fail++
			out(sprintf("[%s] harness: %s FAILED: %s", k, $2, rest(4)))
		} else {
			ok = ok (ok == "" ? "" : ", ") $2 " ok"
		}
		next
	}
	/^@@BENCH-BEGIN / { out(sprintf("[%s] %s: started", k, $2)); next }
	/^@@PROGRESS / {
		secs = $3; sub(/^secs=/, "", secs)
		out(sprintf("[%s] %s: %s s: %s", k, $2, secs, rest(4)))
		next
	}
	/^@@BENCH-END / {
		rc = $3; sub(/^rc=/, "", rc)
		secs = $4; sub(/^secs=/, "", secs)
		if (rc != 0) {
			fail++
			out(sprintf("[%s] %s: FAIL: exit status %s%s", k, $2, rc,
				rc == 124 || rc == 143 ? " (timed out)" : ""))
		} else {
			out(sprintf("[%s] %s: done in %.0f s", k, $2, secs))
		}
		next
	}
	/^@@BEGIN / {
		for (i = 3; i <= NF; i++) {
			if ($i ~ /^uptime=/)
				boot = substr($i, 8)
			if ($i ~ /^preempt=/)
				model = substr($i, 9)
			if ($i ~ /^cpus=/)
				cpus = substr($i, 6)
			if ($i == "rt=1")
				rt = " (PREEMPT_RT)"
		}
		# Name the model the guest reports; one booted with preempt=X
		# that runs another did not test what its label says.
		if (k !~ / preempt=/ && model != "" && model != "fixed")
			k = k " preempt=" model
		else if (match(k, / preempt=[a-z]+/) && substr(k, RSTART + 9, RLENGTH - 9) != model) {
			fail++
			out(sprintf("[%s] harness: FAILED: the guest runs preemption model \"%s\"", k, model))
		}
		next
	}
	/^@@END / {
		ended = 1
		for (i = 2; i <= NF; i++)
			if ($i ~ /^uptime=/)
				end_up = substr($i, 8)
	}
	END {
		if (ok != "")
			out(sprintf("[%s] harness: %s", k, ok))
		if (boot != "" && end_up != "")
			out(sprintf("[%s] guest: %s vCPUs, preemption %s%s; user space up %.1f s after boot, done at %.1f s",
				k, cpus, model, rt, boot, end_up))
		if (counts == "")
			printf "COUNTS %d %d %d\n", pass, fail, ended
		else
			printf "COUNTS %d %d %d\n", pass, fail, ended > counts
	}'
}

# split_bench RESULTS DIR: each program's raw output to DIR/<program>.txt;
# bench/report-NAME.sh, where there is one, makes the tables and charts of
# bench_NAME's into DIR/NAME-report.txt; bench/report-page.sh prints the
# summary tables and writes DIR/report.md. The files are named at the end.
split_bench() {
	local results=$1 dir=$2 f name report rel=${2#"$top"/}

	mkdir -p "$dir"
	rm -f "$dir"/*.txt "$dir"/*.csv "$dir"/*.png "$dir"/report.md
	awk -v dir="$dir" '
	/^@@BENCH-BEGIN / { out = dir "/" $2 ".txt"; printf "" > out; next }
	/^@@BENCH-END / { close(out); out = ""; next }
	/^@@/ { next }
	out != "" { print > out }' "$results"
	for f in "$dir"/bench_*.txt; do
		[ -e "$f" ] || continue
		name=$(basename "$f" .txt)
		name=${name#bench_}
		report=$top/bench/report-$name.sh
		[ -x "$report" ] || continue
		if ! "$report" "$f" >"$dir/$name-report.txt" 2>&1; then
			total_fail=$((total_fail + 1))
			echo "${report#"$top"/}: FAILED:"
			tail -n 20 "$dir/$name-report.txt"
		fi
	done
	if ! "$top/bench/report-page.sh" "$dir"; then
		total_fail=$((total_fail + 1))
		echo "bench/report-page.sh: FAILED"
	fi
	echo
	echo "==== report with charts and tables: $rel/report.md"
	echo "==== raw output, CSV and full reports in $rel/:"
	for f in "$dir"/*.txt "$dir"/*.csv "$dir"/*.md "$dir"/*.png; do
		[ -e "$f" ] && echo "${f##*/}"
	done | paste -sd' ' | fold -s -w 76 | sed 's/^/  /'
	return 0
}

total_pass=0
total_fail=0

# account LABEL PARSED_OUTPUT: print it and add its counts to the totals.
account() {
	sed '$d' <<<"$2"
	tally "$1" "$(tail -n 1 <<<"$2")"
}

# tally LABEL "COUNTS <passed> <failed> <ended>": add to the totals.
tally() {
	local label=$1

	# shellcheck disable=SC2086 # one count per word
	set -- $2
	total_pass=$((total_pass + $2))
	total_fail=$((total_fail + $3))
	if [ "$4" != 1 ]; then
		total_fail=$((total_fail + 1))
		echo "[$label] harness: FAILED: the guest did not finish its run"
	fi
}

# guest NAME KDIR KIMAGE PREEMPT: one QEMU run of $mode, with the kernel's
# own preemption model (PREEMPT "default") or preempt=PREEMPT; in check
# mode $guest_scope (the init's tofutex_scope) says what it packs: "all"
# everything, "backends" and "module" no glibc tests and no real
# programs, "kernel" the Check programs only (a second boot of a kernel,
# where only the preemption model differs).
guest_scope=all
guest_last=yes
guest() {
	local name=$1 kdir=$2 kimage=$3 preempt=$4 kver ko dir root results console
	local timeout test_timeout status start secs qemu append bin accel qpid fpid

	kver=$("$here/kernels.sh" kver "$kdir")
	if [ -n "${GUEST_KO-}" ]; then
		ko=$GUEST_KO
		echo "== $name: module $ko"
	else
		echo "== $name: building the module against $kdir"
		# Checks get the race windows that tests widen; benchmarks do not.
		ko=$(TOFUTEX_DEBUG=$([ "$mode" = check ] && echo y) \
			"$here/build-module.sh" "$kdir") || {
			total_fail=$((total_fail + 1))
			echo "[$name] harness: FAILED: module build"
			return 0
		}
	fi

	dir=$top/build/$kver/$mode
	if [ "$preempt" != default ]; then
		dir=$dir-preempt-$preempt
		name="$name preempt=$preempt"
	fi
	root=$dir/root
	results=$dir/results.txt
	console=$dir/console.log
	rm -rf "$root"
	mkdir -p "$root/bin" "$root/tests" "$root/bench" "$root/etc"
	cp "$busybox" "$root/bin/busybox"
	cp "$here/init" "$root/init"
	chmod 755 "$root/init"
	# busybox insmod takes an uncompressed module.
	case $ko in
	*.xz) xz -dc "$ko" ;;
	*.zst) zstd -dc "$ko" ;;
	*) cat "$ko" ;;
	esac >"$root/tofutex.ko"
	if [ "$mode" = check ] && [ -n "${GUEST_TESTS-}" ]; then
		# Chosen programs only, against a module from elsewhere.
		for bin in $GUEST_TESTS; do cp "$bin" "$root/tests/"; done
	elif [ "$mode" = check ] && [ "$guest_scope" = kernel ]; then
		# A second preemption model: only the module's own tests (the
		# init's scope "kernel"); user space is the same.
		for bin in $(test_bins); do cp "$bin" "$root/tests/"; done
	elif [ "$mode" = check ] && [ "$garch" != x86_64 ]; then
		for bin in $(test_bins); do cp "$bin" "$root/tests/"; done
		pack_preload_arm64 "$root"
	elif [ "$mode" = check ]; then
		pack_preload "$root"
		for bin in $(test_bins); do cp "$bin" "$root/tests/"; done
		mkdir -p "$root/tests/preload"
		for bin in $(preload_test_bins); do
			cp "$bin" "$root/tests/preload/"
			pack_libs "$root" "$bin"
		done
		# Plugins the preload's programs load from their own directory.
		cp "$top"/build/tests/preload/*.so "$root/tests/preload/" 2>/dev/null || true
		cp -r "$top"/build/tests/preload/locale "$root/tests/preload/"
		# The real programs only decide user space: the ends of the
		# list. glibc's tests under tofutex-run meet the module built
		# for this kernel, but through the same ioctls the module's
		# own suites drive on every kernel: the ends too, unless
		# GLIBC=every (make check-matrix).
		[ "$guest_scope" != all ] || [ "${PROGRAMS-1}" = 0 ] ||
			pack_programs "$root"
		case $guest_scope/${GLIBC-1}/$guest_last in
		all/newest/no) ;;
		all/* | backends/every/*)
			! glibc_wanted || pack_glibc "$root" ;;
		esac
	else
		pack_preload "$root"
		for bin in $(bench_bins); do cp "$bin" "$root/bench/"; done
		[ "${PROGRAMS-1}" = 0 ] || pack_programs "$root"
		[ "${PROGRAMS-1}" = 0 ] || [ "${LOCKBOUND-1}" = 0 ] || pack_lockbound "$root"
	fi
	: >"$root/etc/tofutex-test.env"
	for bin in ${TEST_ENV-}; do
		printf '%s\n' "$bin" >>"$root/etc/tofutex-test.env"
	done
	[ -z "${GLIBC_TESTS-}" ] ||
		printf "GLIBC_TESTS='%s'\n" "$GLIBC_TESTS" >>"$root/etc/tofutex-test.env"
	# PERF=0: not perf (11 MB of gzip): a debug kernel unpacks it slowly.
	[ "${PERF-1}" = 0 ] || [ "$mode" != check ] || [ ! -x "$root/tests/test_trace" ] ||
		[ "$garch" != x86_64 ] || pack_perf "$root"
	(cd "$root" && find . -print0 | cpio --null -o -H newc -R 0:0 --quiet) |
		gzip -1 >"$dir/initramfs.gz"

	# Boot the unpacked vmlinux where possible: seconds faster under TCG.
	# (Debian's arm64 images are uncompressed already.)
	[ "$garch" != x86_64 ] ||
		kimage=$("$here/vmlinux.sh" "$kimage" "$top/build/$kver/vmlinux")

	if [ "$mode" = check ]; then
		# glibc's own tests take a few minutes more (the -rt guest about
		# 500 s in all, twice that beside another guest).
		timeout=${QEMU_TIMEOUT:-$([ -d "$root/glibc" ] && echo 1500 || echo 600)}
	else
		timeout=${QEMU_TIMEOUT:-3600}
	fi
	# A program that hangs is killed in the guest first, so that the
	# guest still reports everything else.
	test_timeout=${TEST_TIMEOUT:-$((timeout > 60 ? timeout - 30 : timeout))}
	if [ "$garch" = x86_64 ]; then
		append="console=ttyS0 panic=-1 oops=panic quiet tofutex_mode=$mode"
	else
		# The virt board's second PL011 (QEMU 10 adds it for a second
		# -serial); no exit port: PSCI power-off, QEMU exits 0.
		append="console=ttyAMA0 panic=-1 oops=panic quiet tofutex_mode=$mode"
		append="$append tofutex_port=ttyAMA1 tofutex_exit=poweroff"
	fi
	append="$append tofutex_test_timeout=$test_timeout"
	[ "$preempt" = default ] || append="$append preempt=$preempt"
	[ "$guest_scope" = all ] || append="$append tofutex_scope=$guest_scope"
	append="$append ${KAPPEND-}"
	accel=${QEMU_ACCEL:-tcg,thread=multi}
	if [ "$garch" = x86_64 ]; then
		qemu=(qemu-system-x86_64 -accel "$accel" -m 1G -smp 2 -nic none -nographic -no-reboot
		      -monitor none -bios /usr/share/qemu/qboot.rom)
	else
		qemu=(qemu-system-aarch64 -M virt -cpu "${QEMU_CPU:-neoverse-n1}" -accel "$accel"
		      -m 1G -smp 2 -nic none -nographic -no-reboot -monitor none)
	fi
	if [ "${VERBOSE-}" = 1 ]; then
		qemu+=(-chardev "stdio,id=con,logfile=$console" -serial chardev:con)
	else
		qemu+=(-serial "file:$console")
	fi
	qemu+=(-serial "file:$results")
	[ "$garch" != x86_64 ] || qemu+=(-device "isa-debug-exit,iobase=0xf4,iosize=0x04")
	qemu+=(-kernel "$kimage" -initrd "$dir/initramfs.gz" -append "$append")

	echo "== $name: booting $kimage ($mode, timeout ${timeout} s)"
	echo "== $name: ${qemu[0]} -accel $accel -smp 2; kernel command line: $append"
	rm -f "$console" "$dir/counts"
	: >"$results"
	start=$(date +%s.%N)
	status=0
	# The results are parsed while the guest writes them, so that each
	# test's summary and each benchmark phase shows up as it ends. QEMU
	# runs in the background for that, under timeout, in a process group
	# of its own that the terminal's SIGINT does not reach: the trap
	# passes an interrupt on (timeout sends QEMU SIGTERM). tail --pid
	# reads to the end once QEMU is gone.
	timeout -k 10 "$timeout" "${qemu[@]}" </dev/null &
	qpid=$!
	trap 'kill "$qpid" 2>/dev/null; exit 130' INT TERM
	tail --pid="$qpid" -s 0.5 -n +1 -F "$results" 2>/dev/null |
		parse "$name" "$dir/counts" &
	fpid=$!
	wait "$qpid" || status=$?
	trap - INT TERM
	wait "$fpid" || true
	secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	touch "$console"

	tally "$name" "$(cat "$dir/counts" 2>/dev/null || echo "COUNTS 0 1 0")"
	if [ "$garch" != x86_64 ] && [ "$status" = 0 ] && grep -q '^@@END ' "$results"; then
		echo "[$name] guest finished in $secs s (powered off after @@END)"
	elif [ "$garch" = x86_64 ] && [ $((status % 2)) = 1 ]; then
		echo "[$name] guest finished in $secs s (exit port: $((status >> 1)))"
	else
		total_fail=$((total_fail + 1))
		if [ "$status" = 124 ] || [ "$status" = 137 ]; then
			echo "[$name] harness: FAILED: timeout after $timeout s"
		else
			echo "[$name] harness: FAILED: the guest did not report" \
			     "(QEMU status $status: kernel panic, reboot or QEMU error)"
		fi
		echo "[$name] last 40 console lines ($console):"
		tail -n 40 "$console" | tr -d '\r' | sed "s/^/[$name] | /"
	fi
	if [ "$mode" = bench ]; then
		split_bench "$results" "$top/build/bench/$name"
	fi
}

# native_one NAME CMD...: run one Check program natively, futex backend,
# recording its summary in $results.
native_one() {
	local name=$1 rc=0 t0 secs summary
	shift

	t0=$(date +%s.%N)
	TOFUTEX_BACKEND=futex CK_FORK=yes CK_VERBOSITY=normal \
		timeout "${TEST_TIMEOUT:-600}" "$@" \
		>"$top/build/native/$name.log" 2>&1 || rc=$?
	secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
	summary=$(grep -E '^[0-9]+%: Checks: [0-9]+' "$top/build/native/$name.log" | tail -n 1 || true)
	echo "@@CHECK $name rc=$rc secs=$secs ${summary:-no summary}" >>"$results"
	grep -E '^[^:]+:[0-9]+:[FE]:' "$top/build/native/$name.log" | head -n 50 |
		sed "s/^/@@DETAIL $name /" >>"$results" || true
}

# tsan_preload BIN: one of the preload's suites under ThreadSanitizer
# (tests/tsan/preload.supp says what it does not report, and why).
tsan_preload() {
	local so=("$top"/build/tsan/lib/libtofutex-pthread.so.*)

	native_one "${1##*/}@tsan" env LD_PRELOAD="${so[0]}" \
		TSAN_OPTIONS="exitcode=66 halt_on_error=1 report_mutex_bugs=0 suppressions=$top/tests/tsan/preload.supp" \
		"$1"
}

# native: the library suites, and the pthread preload's under tofutex-run
# (its mutex, condition variable and rwlock suites again with
# TOFUTEX_PROFILE on: @profile), on this machine's real CPUs, futex
# backend; then (check, check-glibc) glibc's own tests.
native() {
	local label results=$top/build/native/results.txt
	local bin parsed

	label="native $(uname -r)"
	mkdir -p "$top/build/native"
	: >"$results"
	if [ "$mode" != check-glibc ] && [ -n "$(test_bins)$(preload_test_bins)" ]; then
		echo "== $label: library suites, futex backend"
		for bin in $(test_bins); do
			case ${bin##*/} in test_lib_*) ;; *) continue ;; esac
			native_one "${bin##*/}@futex" "$bin"
		done
		for bin in $(preload_test_bins); do
			native_one "${bin##*/}@futex" "$top/build/bin/tofutex-run" "$bin"
		done
		# The library suites under ThreadSanitizer, and the preload's
		# with its TSan build ahead of TSan's runtime: any report fails.
		for bin in $(tsan_test_bins); do
			case $bin in
			*/preload/*) tsan_preload "$bin" ;;
			*) native_one "${bin##*/}@tsan" env \
				TSAN_OPTIONS="exitcode=66 halt_on_error=1" "$bin" ;;
			esac
		done
		# ...and they would see each acquire or release lost.
		if [ -z "${TESTS-}" ] || grep -qw tsan-weaken <<<"$TESTS"; then
			native_one tsan-weaken "$top/tests/tsan/weaken.sh" "$top"
		fi
		# The locks' semantics with the contention report on.
		for bin in $(preload_test_bins); do
			case ${bin##*/} in
			test_pthread_mutex | test_pthread_cond | test_pthread_rwlock*) ;;
			*) continue ;;
			esac
			native_one "${bin##*/}@profile" env \
				TOFUTEX_PROFILE="$top/build/native/profile.txt" \
				"$top/build/bin/tofutex-run" "$bin"
		done
		# The drop-in under sanitizers, valgrind, other interposers.
		"$top/tests/tools/run.sh" "$top" "$results" || true
	fi
	if [ "$mode" != check-native ] && glibc_wanted; then
		glibc_run "$label" "$results" futex
	fi
	echo "@@END native" >>"$results"
	parsed=$(parse "$label" <"$results")
	account "$label" "$parsed"
}

# host: the same programs on this machine.
host() {
	local label results=$top/build/host/results.txt
	local bin name rc t0 secs summary parsed

	label="host $(uname -r)"

	if [ ! -c /dev/tofutex ]; then
		die "/dev/tofutex is missing: load the module first (dkms install, then modprobe tofutex; see README.md)"
	fi
	mkdir -p "$top/build/host"
	: >"$results"
	if [ "$mode" = check-host ]; then
		[ -n "$(test_bins)" ] || die "no test programs in build/tests"
		for bin in $(test_bins); do
			name=${bin##*/}
			echo "---- $name"
			t0=$(date +%s.%N)
			rc=0
			CK_FORK=yes CK_VERBOSITY=${CK_VERBOSITY:-normal} \
				timeout "${TEST_TIMEOUT:-600}" "$bin" 2>&1 |
				tee "$top/build/host/$name.log" || rc=$?
			secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
			summary=$(grep -E '^[0-9]+%: Checks: [0-9]+' "$top/build/host/$name.log" | tail -n 1 || true)
			echo "@@CHECK $name rc=$rc secs=$secs ${summary:-no summary}" >>"$results"
			grep -E '^[^:]+:[0-9]+:[FE]:' "$top/build/host/$name.log" | head -n 50 |
				sed "s/^/@@DETAIL $name /" >>"$results" || true
		done
	else
		[ -n "$(bench_bins)" ] || die "no benchmark programs in build/bench/bin"
		for bin in $(bench_bins); do
			name=${bin##*/}
			rc=0
			t0=$(date +%s.%N)
			echo "@@BENCH-BEGIN $name" >>"$results"
			"$bin" >>"$results" 2>&1 || rc=$?
			secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
			echo "@@BENCH-END $name rc=$rc secs=$secs" >>"$results"
		done
	fi
	echo "@@END host" >>"$results"
	parsed=$(parse "$label" <"$results")
	echo "==== summary"
	account "$label" "$parsed"
	if [ "$mode" = bench-host ]; then
		split_bench "$results" "$top/build/bench/host"
	fi
}

# kernel_list WORD...: "RELEASE KDIR KIMAGE" for each kernel the words
# name: an installed kernel (a release, or a prefix such as 6.1), or one of
# Debian's newer kernels (tests/qemu/debian-kernels.sh: "default", "all",
# a release, a series such as 7.3 or 7.3-rt), fetched into the cache.
# False when a word names nothing.
kernel_list() {
	local k kver out rc=0 rels=()

	if [ "$garch" = arm64 ]; then
		"$here/arm64-kernels.sh" fetch "$@"
		return
	fi
	for k in "$@"; do
		if kver=$("$here/kernels.sh" resolve "$k" 2>/dev/null); then
			echo "$kver /lib/modules/$kver/build /boot/vmlinuz-$kver"
		else
			rels+=("$k")
		fi
	done
	[ ${#rels[@]} -gt 0 ] || return 0
	out=$("$here/debian-kernels.sh" find "${rels[@]}") || rc=1
	# shellcheck disable=SC2086 # one release per word
	set -- $out
	[ $# -gt 0 ] || return 1
	"$here/debian-kernels.sh" fetch "$@" || return 1
	return $rc
}

# has_preempt_model KDIR MODEL: a kernel built from KDIR's .config can be
# booted with preempt=MODEL ("default" always): PREEMPT_DYNAMIC and the
# model's option present in the configuration (from 7.0 x86 has no
# "none" or "voluntary"; PREEMPT_RT kernels have neither).
has_preempt_model() {
	local config=$1/.config opt

	case $2 in
	default) return 0 ;;
	full) opt=CONFIG_PREEMPT ;;
	*) opt=CONFIG_PREEMPT_$(tr '[:lower:]' '[:upper:]' <<<"$2") ;;
	esac
	[ -r "$config" ] || return 0
	grep -q '^CONFIG_PREEMPT_DYNAMIC=y' "$config" &&
		grep -qE "^($opt=y|# $opt is not set)" "$config"
}

# guests LIST: boot each kernel of LIST (lines "kver kdir kimage") with
# each of $preempt_modes it has. Every kernel runs what meets the kernel:
# the Check programs and the suites on both backends (the module built
# for it, its futex(2)). What user space decides, or what reaches the
# module only through the ioctls those suites already drive, runs at the
# ends of the list (the oldest kernel and the newest -rt one of the
# default list): the no-module fallback, the real programs and glibc's
# tests (GUEST_SCOPE and GLIBC=every override this). Unless PREEMPT_MODES is set, one kernel, the first with the
# model, also boots preempt=none (what only the model changes: a loop
# without a scheduling point as a soft lockup).
guests() {
	local n i=0 kver kdir kimage p modes booted none=

	n=$(wc -l <"$1")
	[ -n "${PREEMPT_MODES-}" ] || [ "$mode" != check ] || none=want
	while read -r kver kdir kimage; do
		i=$((i + 1))
		guest_scope=${GUEST_SCOPE:-${MIDDLE_SCOPE:-backends}}
		[ -n "${GUEST_SCOPE-}" ] || { [ "$i" != 1 ] && [ "$i" != "$n" ]; } ||
			guest_scope=all
		guest_last=no
		[ "$i" != "$n" ] || guest_last=yes
		modes=$preempt_modes
		if [ "$none" = want ] && has_preempt_model "$kdir" none; then
			modes="$modes none"
			none=booted
		fi
		booted=
		for p in $modes; do
			if has_preempt_model "$kdir" "$p"; then
				guest "$kver" "$kdir" "$kimage" "$p"
				booted=yes
				# Further models: only the module's own tests.
				guest_scope=kernel
			else
				echo "== $kver: no preempt=$p in this kernel (its .config), not booted with it"
			fi
		done
		# A kernel asked for and never booted was not tested: say so
		# as a failure, not as a line among the passes.
		if [ -z "$booted" ]; then
			echo "[$kver] harness: FAILED: not booted: it has none of the preemption models asked for ($modes)"
			total_fail=$((total_fail + 1))
		fi
	done <"$1"
}

# check_qemu: multi-threaded TCG needs QEMU 10. QEMU 7.2 (Debian 12's own)
# does not keep patched kernel text coherent between vCPUs: a guest that
# flips a scheduler static key (the module's preempt notifiers, switched on
# at load and off at unload) oopses with "int3" in __schedule.
check_qemu() {
	local v major

	case ${QEMU_ACCEL:-tcg,thread=multi} in
	*thread=multi*) ;;
	*) return 0 ;;
	esac
	v=$("$qemu_bin" --version | sed -n '1s/.*version \([0-9][0-9.]*\).*/\1/p')
	major=${v%%.*}
	if [ -z "$major" ] || [ "$major" -lt 10 ]; then
		die "QEMU ${v:-?} cannot run the guests' vCPUs in parallel (needs 10, from bookworm-backports: run tests/deps.sh as root)"
	fi
}

# kappend_model: the value of KAPPEND's last preempt= word (the kernel
# takes the last), "-" when it has none.
kappend_model() {
	local w m=- words=()

	# Split as the kernel splits its command line (quotes aside).
	IFS=$' \t\n\r\v\f' read -r -d '' -a words <<<"${KAPPEND-}" || true
	for w in "${words[@]}"; do
		case $w in preempt=*) m=${w#preempt=} ;; esac
	done
	echo "$m"
}

case $mode in
check|bench|check-host|bench-host|check-native|check-glibc) ;;
*) die "usage: run.sh check|bench [KVER...] | check-host | bench-host | check-native | check-glibc" ;;
esac
[ "$garch" = x86_64 ] || [ "$mode" = check ] || die "ARCH=$garch: only check"

# A preempt= in KAPPEND chooses every boot's model. It is booted as
# PREEMPT_MODES would boot it (the label and results directory name it,
# a kernel without it is not booted, the model the guest reports must be
# it, and no second model is booted); a second, different choice is
# refused before anything is built.
kmodel=$(kappend_model)
if [ "$kmodel" != - ]; then
	case $kmodel in
	none | voluntary | full | lazy) ;;
	*) die "KAPPEND's preempt=$kmodel is not a preemption model (none, voluntary, full or lazy)" ;;
	esac
	read -ra modes <<<"${PREEMPT_MODES:-default}"
	case "${modes[*]}" in
	default | "$kmodel") ;;
	*) die "KAPPEND has preempt=$kmodel and PREEMPT_MODES=$PREEMPT_MODES: choose the model with one of them" ;;
	esac
	PREEMPT_MODES=$kmodel
fi

# Two runs in one work tree (several people may share one) would overwrite
# each other's programs, modules, initramfs and results: one at a time.
mkdir -p "$top/build"
exec {lock}>"$top/build/.run.lock"
if ! flock -n "$lock"; then
	echo "run.sh: waiting for another make check/bench in this tree (build/.run.lock)"
	flock "$lock"
fi
# The programs are built under the lock, so that no other run relinks one
# while it is being copied into an initramfs. GUEST_TESTS brings its own.
# check-native and check-glibc build only what they run.
case $mode in
check-native) build=native-test-bins ;;
check-glibc) build=lib ;;
*) build=userspace ;;
esac
if [ "$garch" != x86_64 ]; then
	[ -n "${GUEST_TESTS-}" ] || arm64_userspace
elif [ "$mode" != check ] || [ -z "${GUEST_TESTS-}" ]; then
	"${MAKE:-make}" -C "$top" --no-print-directory "$build"
fi
# glibc's own tests, where they run and are wanted (x86-64 guests).
case $garch/$mode in
x86_64/check|x86_64/check-glibc)
	if [ -z "${GUEST_TESTS-}" ] &&
	   { [ -z "${TESTS-}" ] || grep -qw glibc <<<"$TESTS"; }; then
		"${MAKE:-make}" -C "$top" --no-print-directory glibc-tests
	fi
	;;
esac

case $mode in
check|bench)
	if [ "$garch" = x86_64 ]; then
		tools=(qemu-system-x86_64 busybox cpio gzip timeout)
	else
		tools=(qemu-system-aarch64 aarch64-linux-gnu-gcc cpio gzip timeout curl)
	fi
	for tool in "${tools[@]}"; do
		command -v "$tool" >/dev/null || [ -x "/bin/$tool" ] ||
			die "$tool is missing (run tests/deps.sh)"
	done
	if [ "$garch" = x86_64 ]; then
		[ -f /usr/share/qemu/qboot.rom ] || die "qboot.rom is missing (qemu-system-data)"
	else
		busybox=$("$here/arm64-kernels.sh" busybox) || die "no arm64 busybox"
	fi
	check_qemu
	preempt_modes=${PREEMPT_MODES:-default}
	if [ "$mode" = check ]; then
		[ -n "${GUEST_TESTS-}$(test_bins)" ] || glibc_wanted ||
			die "no test programs in build/tests (run make first)"
		# A chosen set of programs (GUEST_TESTS) runs in the guests only;
		# the native run is this host's, not the guests' architecture's.
		[ -n "${GUEST_TESTS-}" ] || [ "$garch" != x86_64 ] || native
	else
		[ -n "$(bench_bins)" ] || [ -n "${BENCHES-}" ] ||
			die "no benchmark programs in build/bench/bin (run make first)"
	fi

	if [ -n "${KIMAGE-}" ]; then
		[ -r "$KIMAGE" ] || die "KIMAGE=$KIMAGE is not readable"
		[ -n "${KDIR-}" ] || die "KIMAGE needs KDIR (the tree to build the module against)"
		kver=$("$here/kernels.sh" kver "$KDIR")
		[ -n "${PREEMPT_MODES-}" ] || [ "$mode" != check ] ||
			! has_preempt_model "$KDIR" none || preempt_modes="default none"
		guest_scope=${GUEST_SCOPE:-all}
		for p in $preempt_modes; do
			guest "${KNAME:-$kver}" "$KDIR" "$KIMAGE" "$p"
			guest_scope=kernel
		done
	else
		if [ $# -eq 0 ] && [ "$garch" = arm64 ]; then
			set -- 6.1 6.12 default
		elif [ $# -eq 0 ]; then
			# shellcheck disable=SC2046 # one release per word
			if [ "$mode" = check ]; then
				set -- $("$here/kernels.sh" list)
			else
				set -- $("$here/kernels.sh" bench)
			fi
			# The oldest kernel of the list runs what only the
			# ends run: without Debian 12's two, make check would
			# pass having tested less than it says.
			[ "$mode" != check ] || [ $# -ge 2 ] ||
				die "make check boots Debian 12's 6.1 and 6.12 kernels; installed with headers: ${*:-none} (run tests/deps.sh)"
			[ $# -gt 0 ] || die "no installed Debian 6.1 or 6.12 kernel with headers (run tests/deps.sh)"
			[ "$mode" != check ] || set -- "$@" default
		fi
		kernel_list "$@" >"$top/build/.kernels" || total_fail=$((total_fail + 1))
		guests "$top/build/.kernels"
	fi
	;;
check-host|bench-host)
	host
	;;
check-native|check-glibc)
	native
	;;
*)
	die "usage: run.sh check|bench [KVER...] | check-host | bench-host"
	;;
esac

case $mode in
check|check-host|check-native|check-glibc)
	echo "$total_pass passed, $total_fail failed"
	;;
*)
	if [ "$total_fail" = 0 ]; then
		echo "benchmarks finished"
	else
		echo "benchmarks: $total_fail failures (see above)"
	fi
	;;
esac
[ "$total_fail" = 0 ]
