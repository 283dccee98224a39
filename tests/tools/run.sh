#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tests/tools/run.sh TOP OUT - the drop-in among the tools programs are run
# with, natively (futex backend): each case runs a program stock and under
# TOP/build/bin/tofutex-run and compares what a user sees, its standard
# output and exit status (and, where it matters, that the preload's locks
# ran: TOFUTEX_RUN_STATS's line). Cases:
#
#   sanitizer-S   lockprog built with -fsanitize=S (thread, address,
#                 undefined, leak): the same output and status; for thread
#                 and address, the preload's locks ran
#   tsan-race     lockprog race under ThreadSanitizer: reported (status 66)
#                 both ways, so TSan still sees the lock calls
#   tsan-preload  LD_PRELOAD=<preload> without tofutex-run: no crash
#   valgrind-T    valgrind --tool=T (memcheck, helgrind, drd): the same
#                 output and status (helgrind and drd: tofutex-run says it
#                 runs them without the preload; started by a script it
#                 cannot see, the preload leaves every object to glibc)
#   wrap-before   LD_PRELOAD=libtfx-wrap.so tofutex-run lockprog: the
#                 interposer sees every lock and wait, the preload's locks
#                 run behind it
#   wrap-after    the interposer after the preload in LD_PRELOAD, and
#                 appended by a script tofutex-run started: glibc serves
#                 every object, the interposer sees every lock as stock,
#                 the preload says so
#   foreign-after a library after the preload with functions of glibc's
#                 names (pthread_mutex_lock, dlsym) at a version of its
#                 own (foreign.c): not taken for glibc's nor for an
#                 interposer; the same output and status as stock, the
#                 preload's locks ran, the library's functions did not
#   two-copies    tofutex-run nested with another copy of the preload:
#                 the same output, the preload's locks, no message
#   faketime-after  tofutex-run faketime -f +2d timedprog cond: the
#                 condition wait's deadline on faketime's clock, as stock
#   audit         LD_AUDIT=libtfx-audit.so: the same output and status
#   audit-wrap    an LD_AUDIT module that wraps the mutex functions
#                 (auditwrap.c), lazy and LD_BIND_NOW: the same output,
#                 status and count of locks, no interposer message
#   shim          an interposer whose open() and syscall() take a pthread
#                 mutex (tracers, path remappers), shimprog contending for
#                 them: the same output and status
#   ifunc-before  an interposer before the preload that defines strlen()
#                 as an IFUNC: lockprog runs as stock
#   frozen-clock  clock_gettime() standing still (frozen.c): a timed lock
#                 times out by the kernel's clock, as stock
#   clock-shim    a clock_gettime() interposer set up by its constructor
#                 and serialised by a mutex (clockshim.c), clockprog
#                 contending: the same output and status
#   loader-explicit  the dynamic linker run as the command (ld.so
#                 [--argv0 NAME] lockprog): the same output and status,
#                 the preload's locks ran, no word of a static program
#   library-relative  TOFUTEX_RUN_LIBRARY as a relative path, the
#                 program started from another directory by a shell: the
#                 preload's locks ran there, no word from the loader
#   elf32         a 32-bit program (hello32.s, x86-64 hosts): tofutex-run
#                 says it runs it without the preload; the same output and
#                 status, no error from the dynamic linker
#   setuid        a set-user-ID copy of lockprog: tofutex-run says the
#                 preload is dropped, the program runs as stock
#
# Writes TOP/build/tools/, and to OUT the harness's result lines
# ("@@CHECK tools ..." with a Check-style summary, "@@DETAIL tools ..." a
# failed case). Needs gcc with the sanitizer runtimes and valgrind
# (tests/deps.sh all and native install them).
set -uo pipefail

top=$1 out=$2
dir=$top/build/tools
run=$top/build/bin/tofutex-run
preload=$top/build/lib/libtofutex-pthread.so.0
src=$top/tests/tools
cflags=(-std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -O1 -g -pthread)
checks=0 failures=0 t0=$(date +%s.%N)

mkdir -p "$dir"
export TOFUTEX_BACKEND=futex

fail() {
	failures=$((failures + 1))
	echo "@@DETAIL tools tests/tools/run.sh:0:F:tools:$1:0: $2" >>"$out"
	echo "tools: FAIL $1: $2" >&2
}

# ran NAME CMD...: run CMD with a timeout; its stdout in $dir/NAME.out,
# stderr in $dir/NAME.err, status in $rc.
ran() {
	local name=$1
	shift
	rc=0
	timeout 120 "$@" >"$dir/$name.out" 2>"$dir/$name.err" || rc=$?
}

# same CASE STOCK RUN: the two runs gave the same output and status.
same() {
	local c=$1 a=$2 b=$3 ra=$4 rb=$5

	checks=$((checks + 1))
	if [ "$ra" != "$rb" ]; then
		fail "$c" "exit status $rb under tofutex-run, $ra stock ($(head -c 300 "$dir/$b.err" | tr '\n' ' '))"
	elif ! cmp -s "$dir/$a.out" "$dir/$b.out"; then
		fail "$c" "output differs from stock: $(head -c 200 "$dir/$b.out" | tr '\n' ' ')"
	fi
}

# check CASE CONDITION-TEXT CMD...: CMD succeeds.
check() {
	local c=$1 what=$2
	shift 2
	checks=$((checks + 1))
	"$@" || fail "$c" "$what"
}

cc -D_GNU_SOURCE -Wall -Wextra -Werror -O2 -shared -fPIC -o "$dir/libtfx-wrap.so" "$src/wrap.c" -ldl &&
	cc -D_GNU_SOURCE -Wall -Wextra -Werror -O2 -shared -fPIC -o "$dir/libtfx-audit.so" "$src/audit.c" &&
	cc -D_GNU_SOURCE -Wall -Wextra -Werror -O2 -shared -fPIC -o "$dir/libtfx-auditwrap.so" "$src/auditwrap.c" &&
	cc -D_GNU_SOURCE -Wall -Wextra -Werror -O2 -shared -fPIC -pthread -o "$dir/libtfx-shim.so" "$src/shim.c" -ldl &&
	cc -Wall -Wextra -Werror -O2 -shared -fPIC -o "$dir/libtfx-ifunc.so" "$src/ifunc.c" &&
	cc "${cflags[@]}" -o "$dir/shimprog" "$src/shimprog.c" &&
	cc -Wall -Wextra -Werror -O2 -shared -fPIC -o "$dir/libtfx-frozen.so" "$src/frozen.c" &&
	cc "${cflags[@]}" -o "$dir/timedprog" "$src/timedprog.c" &&
	cc -D_GNU_SOURCE -Wall -Wextra -Werror -O2 -shared -fPIC -pthread -o "$dir/libtfx-clockshim.so" "$src/clockshim.c" -ldl &&
	cc "${cflags[@]}" -o "$dir/clockprog" "$src/clockprog.c" &&
	printf 'TFX_FOREIGN_1 { global: pthread_*; dlsym; local: *; };\n' >"$dir/foreign.map" &&
	cc -Wall -Wextra -Werror -O2 -shared -fPIC -Wl,--version-script="$dir/foreign.map" \
		-o "$dir/libtfx-foreign.so" "$src/foreign.c" &&
	cc "${cflags[@]}" -o "$dir/lockprog" "$src/lockprog.c" ||
	{ fail build "the tools' test programs do not build"; }

# ---- sanitizers ----
for s in thread address undefined leak; do
	c=sanitizer-$s
	if ! cc "${cflags[@]}" -fsanitize=$s -o "$dir/lockprog-$s" "$src/lockprog.c"; then
		checks=$((checks + 1))
		fail "$c" "cc -fsanitize=$s failed (is gcc's runtime installed?)"
		continue
	fi
	ran "$c.stock" "$dir/lockprog-$s"
	r1=$rc
	ran "$c.run" env TOFUTEX_RUN_STATS=1 "$run" "$dir/lockprog-$s"
	same "$c" "$c.stock" "$c.run" "$r1" "$rc"
	case $s in thread | address)
		check "$c" "the preload's locks did not run (no TOFUTEX_RUN_STATS line)" \
			grep -q "backend=futex" "$dir/$c.run.err" ;;
	esac
done

c=tsan-race
ran "$c.stock" "$dir/lockprog-thread" race
r1=$rc
ran "$c.run" "$run" "$dir/lockprog-thread" race
same "$c" "$c.stock" "$c.run" "$r1" "$rc"
check "$c" "ThreadSanitizer reported no race under tofutex-run" \
	grep -q "data race" "$dir/$c.run.err"
check "$c" "ThreadSanitizer reported a race on a variable the locks protect" \
	bash -c "! grep 'Location is global' '$dir/$c.run.err' | grep -qv \"'racy'\""

c=tsan-preload
ran "$c" env LD_PRELOAD="$preload" "$dir/lockprog-thread"
checks=$((checks + 1))
[ "$rc" -lt 128 ] || fail "$c" "crashed with status $rc"

# ---- valgrind ----
for t in memcheck helgrind drd; do
	c=valgrind-$t
	ran "$c.stock" valgrind -q --tool=$t --error-exitcode=9 "$dir/lockprog"
	r1=$rc
	ran "$c.run" "$run" valgrind -q --tool=$t --error-exitcode=9 "$dir/lockprog"
	same "$c" "$c.stock" "$c.run" "$r1" "$rc"
	case $t in helgrind | drd)
		check "$c" "tofutex-run did not say it runs $t without the preload" \
			grep -q "running it without the preload" "$dir/$c.run.err"
		# Started by a script: the preload leaves every object to glibc,
		# also when the program clears LD_PRELOAD before it locks.
		ran "$c-indirect" "$run" sh -c \
			"exec valgrind -q --tool=$t --error-exitcode=9 '$dir/lockprog'"
		same "$c-indirect" "$c.stock" "$c-indirect" "$r1" "$rc"
		ran "$c-unsetenv.stock" valgrind -q --tool=$t --error-exitcode=9 "$dir/lockprog" unsetenv
		r1=$rc
		ran "$c-unsetenv" "$run" sh -c \
			"exec valgrind -q --tool=$t --error-exitcode=9 '$dir/lockprog' unsetenv"
		same "$c-unsetenv" "$c-unsetenv.stock" "$c-unsetenv" "$r1" "$rc" ;;
	esac
done

# ---- other interposers, the auditor ----
c=wrap-before
ran "$c.stock" env LD_PRELOAD="$dir/libtfx-wrap.so" "$dir/lockprog"
r1=$rc
ran "$c.run" env LD_PRELOAD="$dir/libtfx-wrap.so" TOFUTEX_RUN_STATS=1 "$run" "$dir/lockprog"
same "$c" "$c.stock" "$c.run" "$r1" "$rc"
check "$c" "the interposer saw no lock calls: $(grep wrap: "$dir/$c.run.err")" \
	grep -Eq "^wrap: [1-9][0-9]* locks, [1-9][0-9]* waits" "$dir/$c.run.err"
check "$c" "the preload's locks did not run behind the interposer" \
	grep -q "backend=futex" "$dir/$c.run.err"
# A condition wait's own relock of its mutex is not the interposer's to
# see (the number of waits varies from run to run, the locks do not).
locks() { grep -o 'wrap: [0-9]* locks' "$dir/$1.err"; }
check "$c" "the interposer counted other lock calls than stock: $(locks "$c.run") against $(locks "$c.stock")" \
	test "$(locks "$c.stock")" = "$(locks "$c.run")"

# After the preload, as a wrapper that appends its library to LD_PRELOAD
# (faketime, a script) puts it: glibc serves every object, through the
# interposer, which sees every lock as stock; the preload says so.
c=wrap-after
ran "$c" env LD_PRELOAD="$preload:$dir/libtfx-wrap.so" "$dir/lockprog"
same "$c" wrap-before.stock "$c" "$r1" "$rc"
check "$c" "the interposer after the preload counted other lock calls than stock: $(locks "$c") against $(locks wrap-before.stock)" \
	test "$(locks wrap-before.stock)" = "$(locks "$c")"
check "$c" "the preload did not say the program runs on glibc's locks" \
	grep -q "runs on glibc's locks" "$dir/$c.err"
ran "$c-script" "$run" sh -c \
	"LD_PRELOAD=\"\$LD_PRELOAD:$dir/libtfx-wrap.so\" exec '$dir/lockprog'"
same "$c-script" wrap-before.stock "$c-script" "$r1" "$rc"
check "$c-script" "the interposer a script appended counted other lock calls than stock: $(locks "$c-script")" \
	test "$(locks wrap-before.stock)" = "$(locks "$c-script")"

# A library after the preload whose functions have glibc's names at a
# version of its own: no reference of the program binds to them, stock or
# not, so they are neither glibc's functions nor an interposer's.
c=foreign-after
ran "$c.stock" env LD_PRELOAD="$dir/libtfx-foreign.so" "$dir/lockprog" dlsym
r1=$rc
ran "$c.run" env LD_PRELOAD="$preload:$dir/libtfx-foreign.so" TOFUTEX_RUN_STATS=1 \
	"$dir/lockprog" dlsym
same "$c" "$c.stock" "$c.run" "$r1" "$rc"
check "$c" "the preload's locks did not run: $(grep -m1 -e glibc -e foreign "$dir/$c.run.err")" \
	grep -q "backend=futex" "$dir/$c.run.err"
check "$c" "the library's own functions were called: $(grep -m1 foreign: "$dir/$c.run.err")" \
	bash -c '! grep -q foreign: "$1"' _ "$dir/$c.run.err"

# A second copy of the preload after the first (tofutex-run nested, two
# installs): not an interposer to give way to, nothing said.
c=two-copies
mkdir -p "$dir/copy"
cp -L "$preload" "$dir/copy/libtofutex-pthread.so.0"
ran "$c" "$run" env TOFUTEX_RUN_LIBRARY="$dir/copy/libtofutex-pthread.so.0" \
	TOFUTEX_RUN_STATS=1 "$run" "$dir/lockprog"
same "$c" wrap-before.stock "$c" "$r1" "$rc"
check "$c" "the preload gave way to its own copy: $(grep -m1 glibc "$dir/$c.err")" \
	bash -c "! grep -q \"runs on glibc's locks\" '$dir/$c.err'"
check "$c" "the preload's locks did not run" grep -q "backend=futex" "$dir/$c.err"

# faketime (Debian's), which appends libfaketime to LD_PRELOAD: a
# condition wait's deadline is read on its clock, as stock (timedprog's
# wait ends in about its 0.2 s either way, not in two days).
c=faketime-after
ran "$c.stock" faketime -f +2d "$dir/timedprog" cond
r1=$rc
ran "$c.run" "$run" faketime -f +2d "$dir/timedprog" cond
same "$c" "$c.stock" "$c.run" "$r1" "$rc"

c=audit
ran "$c.stock" env LD_AUDIT="$dir/libtfx-audit.so" "$dir/lockprog"
r1=$rc
ran "$c.run" env LD_AUDIT="$dir/libtfx-audit.so" "$run" "$dir/lockprog"
same "$c" "$c.stock" "$c.run" "$r1" "$rc"

for bind in lazy now; do
	c=audit-wrap-$bind
	env=(env LD_AUDIT="$dir/libtfx-auditwrap.so")
	[ "$bind" = lazy ] || env+=(LD_BIND_NOW=1)
	ran "$c.stock" "${env[@]}" "$dir/lockprog"
	r1=$rc
	ran "$c.run" "${env[@]}" "$run" "$dir/lockprog"
	same "$c" "$c.stock" "$c.run" "$r1" "$rc"
	check "$c" "the wrapper counted other locks than stock" \
		cmp -s <(grep auditwrap: "$dir/$c.stock.err") \
		<(grep auditwrap: "$dir/$c.run.err")
	check "$c" "the preload took the auditor for an interposer" \
		bash -c '! grep -q "comes after it" "$1"' _ "$dir/$c.run.err"
done

c=shim
ran "$c.stock" env LD_PRELOAD="$dir/libtfx-shim.so" "$dir/shimprog"
r1=$rc
# The backend chosen as a process would (TOFUTEX_BACKEND unset): the
# first contended lock opens the device then.
ran "$c.run" env -u TOFUTEX_BACKEND LD_PRELOAD="$dir/libtfx-shim.so" "$run" "$dir/shimprog"
same "$c" "$c.stock" "$c.run" "$r1" "$rc"

c=ifunc-before
ran "$c.stock" env LD_PRELOAD="$dir/libtfx-ifunc.so" "$dir/lockprog"
r1=$rc
ran "$c.run" env LD_PRELOAD="$dir/libtfx-ifunc.so" "$run" "$dir/lockprog"
same "$c" "$c.stock" "$c.run" "$r1" "$rc"

c=frozen-clock
ran "$c.stock" env LD_PRELOAD="$dir/libtfx-frozen.so" "$dir/timedprog"
r1=$rc
ran "$c.run" env LD_PRELOAD="$dir/libtfx-frozen.so" "$run" "$dir/timedprog"
same "$c" "$c.stock" "$c.run" "$r1" "$rc"

c=clock-shim
ran "$c.stock" env LD_PRELOAD="$dir/libtfx-clockshim.so" "$dir/clockprog"
r1=$rc
ran "$c.run" env LD_PRELOAD="$dir/libtfx-clockshim.so" "$run" "$dir/clockprog"
same "$c" "$c.stock" "$c.run" "$r1" "$rc"

# ---- the dynamic linker as the command ----
interp=$(readelf -lW "$dir/lockprog" | sed -n 's/.*interpreter: \(.*\)]$/\1/p')
for how in plain argv0; do
	c=loader-explicit-$how
	args=()
	[ "$how" = plain ] || args=(--argv0 lockprog)
	ran "$c.stock" "$interp" "${args[@]}" "$dir/lockprog"
	r1=$rc
	ran "$c.run" env TOFUTEX_RUN_STATS=1 "$run" "$interp" "${args[@]}" "$dir/lockprog"
	same "$c" "$c.stock" "$c.run" "$r1" "$rc"
	check "$c" "the preload's locks did not run" \
		grep -q "backend=futex" "$dir/$c.run.err"
	check "$c" "tofutex-run said something of the program: $(grep -m1 tofutex-run: "$dir/$c.run.err")" \
		bash -c '! grep -q "statically linked\|ignores LD_PRELOAD" "$1"' _ "$dir/$c.run.err"
done

# ---- TOFUTEX_RUN_LIBRARY relative to where tofutex-run starts ----
c=library-relative
rel=$(realpath --relative-to="$dir" "$preload")
ran "$c.stock" "$dir/lockprog"
r1=$rc
(cd "$dir" && ran "$c" env TOFUTEX_RUN_LIBRARY="$rel" TOFUTEX_RUN_STATS=1 \
	"$run" sh -c "cd / && exec '$dir/lockprog'"; echo "$rc" >"$dir/$c.rc")
same "$c" "$c.stock" "$c" "$r1" "$(cat "$dir/$c.rc")"
check "$c" "the preload's locks did not run: $(grep -m1 ld.so "$dir/$c.err")" \
	grep -q "backend=futex" "$dir/$c.err"

# ---- a program of another ELF class ----
if [ -e /usr/lib32/libc.so.6 ] && [ "$(uname -m)" = x86_64 ]; then
	c=elf32
	checks=$((checks + 1))
	if as --32 -o "$dir/hello32.o" "$src/hello32.s" &&
		ld -m elf_i386 -dynamic-linker /lib/ld-linux.so.2 \
			-o "$dir/hello32" "$dir/hello32.o" /usr/lib32/libc.so.6; then
		checks=$((checks - 1))
		ran "$c.stock" "$dir/hello32"
		r1=$rc
		ran "$c.run" "$run" "$dir/hello32"
		same "$c" "$c.stock" "$c.run" "$r1" "$rc"
		check "$c" "tofutex-run did not say it runs the 32-bit program without the preload" \
			grep -q "is a 32-bit program" "$dir/$c.run.err"
		check "$c" "the dynamic linker complained: $(grep -m1 ld.so "$dir/$c.run.err")" \
			bash -c '! grep -q "ERROR: ld.so" "$1"' _ "$dir/$c.run.err"
	else
		fail "$c" "hello32.s does not build (binutils, libc6-i386)"
	fi
fi

# ---- secure execution ----
c=setuid
if [ "$(id -u)" = 0 ] && id nobody >/dev/null 2>&1; then
	cp "$dir/lockprog" "$dir/lockprog-setuid"
	chown nobody "$dir/lockprog-setuid" && chmod 4755 "$dir/lockprog-setuid"
	ran "$c.stock" "$dir/lockprog-setuid"
	r1=$rc
	ran "$c.run" "$run" "$dir/lockprog-setuid"
	same "$c" "$c.stock" "$c.run" "$r1" "$rc"
	check "$c" "tofutex-run did not say the preload is dropped" \
		grep -q "is set-user-ID" "$dir/$c.run.err"
fi

secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
pct=$(( checks ? (checks - failures) * 100 / checks : 0 ))
echo "@@CHECK tools rc=$((failures ? 1 : 0)) secs=$secs $pct%: Checks: $checks, Failures: $failures, Errors: 0" >>"$out"
[ "$failures" = 0 ]
