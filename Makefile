# SPDX-License-Identifier: GPL-2.0
#
# tofutex - top-level Makefile. `make help` lists the targets.
#
# The module is built by Kbuild from the top-level Kbuild file (which DKMS
# uses directly); this file drives it once per kernel release, in
# build/<kver>/ (tests/qemu/build-module.sh), and builds the user-space
# parts: libtofutex, the Check tests and the benchmarks.

SHELL := /bin/bash
.SHELLFLAGS := -eo pipefail -c
.DEFAULT_GOAL := all
.DELETE_ON_ERROR:
.SUFFIXES:

TOP := $(patsubst %/,%,$(dir $(abspath $(lastword $(MAKEFILE_LIST)))))
# Recipes use paths relative to the top of the tree.
ifneq ($(abspath $(CURDIR)),$(TOP))
$(error run make from the top of the tree: make -C $(TOP))
endif

VERSION := $(shell sed -n 's/^\#define[[:space:]]*TOFUTEX_MODULE_VERSION[[:space:]]*"\(.*\)".*/\1/p' module/tofutex.h)
SOVERSION := 0

# --- kernels ---------------------------------------------------------------
# KDIR: the build tree `make` / `make module` builds against.
KDIR ?= $(shell tests/qemu/kernels.sh kdir)
# W=1 warnings are part of the module build by default; any warning fails.
MODULE_W ?= 1
# KVERS: kernels `make check` boots (default: every installed Debian 6.1 and
# 6.12 kernel); `make bench` boots the first one (default: newest 6.12).
# Full releases or prefixes such as "6.1".
KVERS ?=
# Extra kernel command line for the guests, e.g. KAPPEND="preempt=full".
KAPPEND ?=
# Seconds a guest may run before it counts as hung.
QEMU_TIMEOUT ?=
# QEMU -accel for the guests (default: tcg,thread=multi, parallel vCPUs).
# PREEMPT_MODES (environment): preemption models each check guest boots with
# (default "default none"); TESTS: only these test programs.
QEMU_ACCEL ?=

# --- user space ------------------------------------------------------------
CC ?= cc
AR ?= ar
CFLAGS ?= -O2
CPPFLAGS ?=
LDFLAGS ?=
TFX_CFLAGS := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -pthread \
	-Ibuild/include -Ilib -MMD -MP
CHECK_LIBS := -lcheck -lsubunit -lm -lrt -lpthread
SYS_LIBS := -lm -lrt -lpthread

LIB_SRCS := $(wildcard lib/*.c)
LIB_OBJS := $(LIB_SRCS:lib/%.c=build/lib/obj/%.o)
LIB_PICOBJS := $(LIB_SRCS:lib/%.c=build/lib/pic/%.o)
LIB_A := build/lib/libtofutex.a
LIB_SO := $(if $(LIB_SRCS),build/lib/libtofutex.so.$(VERSION))
LIB_MAP := $(wildcard lib/libtofutex.map)
comma := ,
LIB_MAP_FLAG := $(if $(LIB_MAP),-Wl$(comma)--version-script=$(LIB_MAP))

# libtofutex-pthread.so, the LD_PRELOAD library (lib/pthread/), is linked
# from its own objects and libtofutex's PIC objects; tofutex-run starts
# programs with it.
PRELOAD_SRCS := $(filter-out lib/pthread/tofutex-run.c,$(wildcard lib/pthread/*.c))
PRELOAD_OBJS := $(PRELOAD_SRCS:lib/pthread/%.c=build/lib/pthread-pic/%.o)
PRELOAD_MAP := lib/pthread/libtofutex-pthread.map
PRELOAD_SO := build/lib/libtofutex-pthread.so.$(VERSION)
RUN_BIN := build/bin/tofutex-run

# tests/test_*.c are Check programs; any other tests/*.c is a helper linked
# into every one of them. Every bench/*.c is a benchmark program.
TEST_SRCS := $(wildcard tests/test_*.c)
TEST_HELPER_SRCS := $(filter-out $(TEST_SRCS),$(wildcard tests/*.c))
TEST_HELPER_OBJS := $(TEST_HELPER_SRCS:tests/%.c=build/tests/obj/%.o)
TEST_BINS := $(TEST_SRCS:tests/%.c=build/tests/%)
# tests/preload/test_*.c: Check programs that call the pthread functions
# under tofutex-run; dynamically linked (LD_PRELOAD needs a dynamic
# linker), with Check and libtofutex (for its statistics) linked in.
PRELOAD_TEST_SRCS := $(wildcard tests/preload/test_*.c)
PRELOAD_TEST_BINS := $(PRELOAD_TEST_SRCS:tests/preload/%.c=build/tests/preload/%)
BENCH_SRCS := $(wildcard bench/*.c)
BENCH_BINS := $(BENCH_SRCS:bench/%.c=build/bench/bin/%)

UAPI_LINK := build/include/tofutex/uapi.h

# --- install ---------------------------------------------------------------
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
MANDIR ?= $(PREFIX)/share/man
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
BINDIR ?= $(PREFIX)/bin
DESTDIR ?=

RUN := MAKE='$(MAKE)' tests/qemu/run.sh
QEMU_ENV = KAPPEND='$(KAPPEND)' QEMU_TIMEOUT='$(QEMU_TIMEOUT)' QEMU_ACCEL='$(QEMU_ACCEL)'

.PHONY: all module userspace lib man test-bins bench-bins deps deps-build \
	lint-man lint-kernel deb deb-check check check-kernel check-debug bench check-host bench-host \
	check-native check-glibc glibc-tests bench-native \
	dkms-check dkms-install dkms-uninstall \
	install uninstall clean help

all: module userspace

# Packages: the whole list for anything that boots or packages, the compiler
# and Check for user space, plus headers when KDIR is the default.
deps:
	@tests/deps.sh all
deps-build:
	@tests/deps.sh build $(if $(filter command line environment,$(origin KDIR)),,headers)

module: deps-build
	@tests/qemu/build-module.sh '$(KDIR)' '$(MODULE_W)' | sed 's|^$(TOP)/|module: |'

userspace: lib test-bins bench-bins
lib: $(LIB_A) $(LIB_SO) $(PRELOAD_SO) $(RUN_BIN)
test-bins: $(TEST_BINS) $(PRELOAD_TEST_BINS) build/tests/programs/tofutex-stats
bench-bins: $(BENCH_BINS)
# The tests and benchmarks need the compiler and Check; with parallel make
# the dependency step must still run first. The libraries and tofutex-run
# need only a C compiler and make, on any distribution: no dependency step.
$(TEST_HELPER_OBJS) $(TEST_BINS) $(PRELOAD_TEST_BINS) $(BENCH_BINS): | deps-build

# <tofutex/uapi.h> is uapi/tofutex.h, as it is installed.
$(UAPI_LINK):
	@mkdir -p $(@D)
	ln -sfn ../../../uapi/tofutex.h $@

build/lib/obj/%.o: lib/%.c | $(UAPI_LINK)
	@mkdir -p $(@D)
	$(CC) $(TFX_CFLAGS) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

build/lib/pic/%.o: lib/%.c | $(UAPI_LINK)
	@mkdir -p $(@D)
	$(CC) $(TFX_CFLAGS) $(CPPFLAGS) $(CFLAGS) -fPIC -c -o $@ $<

$(LIB_A): $(LIB_OBJS)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

$(LIB_SO): $(LIB_PICOBJS) $(LIB_MAP)
	$(CC) -shared -pthread -Wl,-soname,libtofutex.so.$(SOVERSION) -Wl,-z,defs \
		$(LIB_MAP_FLAG) $(LDFLAGS) \
		-o $@ $(LIB_PICOBJS)
	ln -sfn $(@F) build/lib/libtofutex.so.$(SOVERSION)
	ln -sfn libtofutex.so.$(SOVERSION) build/lib/libtofutex.so

build/lib/pthread-pic/%.o: lib/pthread/%.c | $(UAPI_LINK)
	@mkdir -p $(@D)
	$(CC) $(TFX_CFLAGS) $(CPPFLAGS) $(CFLAGS) -fPIC -c -o $@ $<

$(PRELOAD_SO): $(PRELOAD_OBJS) $(LIB_PICOBJS) $(PRELOAD_MAP)
	$(CC) -shared -pthread -Wl,-soname,libtofutex-pthread.so.$(SOVERSION) \
		-Wl,-z,defs -Wl,--version-script=$(PRELOAD_MAP) $(LDFLAGS) \
		-o $@ $(PRELOAD_OBJS) $(LIB_PICOBJS)
	ln -sfn $(@F) build/lib/libtofutex-pthread.so.$(SOVERSION)

# Dynamic, as the programs it starts: it finds the library in ../lib.
$(RUN_BIN): lib/pthread/tofutex-run.c
	@mkdir -p $(@D)
	$(CC) $(TFX_CFLAGS) $(CPPFLAGS) $(CFLAGS) -DTOFUTEX_RUN_LIBDIR='"$(LIBDIR)"' \
		$(LDFLAGS) -o $@ $<

build/tests/obj/%.o: tests/%.c | $(UAPI_LINK)
	@mkdir -p $(@D)
	$(CC) $(TFX_CFLAGS) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

# Static, so that they run in the guest's busybox initramfs as they are.
build/tests/%: tests/%.c $(TEST_HELPER_OBJS) $(LIB_A) | $(UAPI_LINK)
	@mkdir -p $(@D)
	$(CC) $(TFX_CFLAGS) $(CPPFLAGS) $(CFLAGS) -static $(LDFLAGS) -o $@ $< \
		$(TEST_HELPER_OBJS) $(LIB_A) $(CHECK_LIBS)

build/tests/preload/%: tests/preload/%.c $(LIB_A) | $(UAPI_LINK)
	@mkdir -p $(@D)
	$(CC) $(TFX_CFLAGS) $(CFLAGS) -no-pie $(LDFLAGS) -o $@ $< $(LIB_A) \
		-Wl,-Bstatic -lcheck -lsubunit -Wl,-Bdynamic -lm -lrt -lpthread

# The real programs' guest helper (tests/programs/run.sh).
build/tests/programs/tofutex-stats: tests/programs/tofutex-stats.c $(LIB_A) | $(UAPI_LINK) deps-build
	@mkdir -p $(@D)
	$(CC) $(TFX_CFLAGS) $(CFLAGS) -static $(LDFLAGS) -o $@ $< $(LIB_A) $(SYS_LIBS)

# A benchmark that outgrew one file keeps its other parts in bench/<name>/
# (*.c compiled into it, *.h its own headers).
.SECONDEXPANSION:
build/bench/bin/%: bench/%.c $$(wildcard bench/$$*/*.c bench/$$*/*.h) $(LIB_A) | $(UAPI_LINK)
	@mkdir -p $(@D)
	$(CC) $(TFX_CFLAGS) $(CPPFLAGS) $(CFLAGS) -static $(LDFLAGS) -o $@ $< \
		$(wildcard bench/$*/*.c) $(LIB_A) $(SYS_LIBS)

-include $(wildcard build/lib/obj/*.d build/lib/pic/*.d build/lib/pthread-pic/*.d \
	build/bin/*.d build/tests/*.d build/tests/preload/*.d build/tests/programs/*.d \
	build/tests/obj/*.d build/bench/bin/*.d)

# --- running ---------------------------------------------------------------
# The full dependency step runs first and alone (two apt-gets at once would
# fight over the dpkg lock under make -j); run.sh then builds user space
# itself, under a lock that makes concurrent runs in one tree take turns.
check: lint-man
	@tests/lint-tree.sh
	@tests/deps.sh all
	+@$(QEMU_ENV) $(RUN) check $(KVERS)

# A kernel that is not an installed Debian one, e.g. a debug build:
#   make check-kernel KIMAGE=/path/bzImage KDIR=/path/tree [KNAME=debug]
# (`make bench` takes the same three variables.)
check-kernel:
	@test -n '$(KIMAGE)' -a -n '$(filter command line environment,$(origin KDIR))' || \
		{ echo "usage: make check-kernel KIMAGE=/path/bzImage KDIR=/path/tree [KNAME=name] [KAPPEND=...]" >&2; exit 2; }
	@tests/deps.sh all
	+@$(QEMU_ENV) KIMAGE='$(KIMAGE)' KDIR='$(KDIR)' KNAME='$(KNAME)' $(RUN) check

# The self-built debug kernel (lockdep, KASAN, kmemleak, UBSAN, ...), built
# once per machine into a cache outside the tree by tests/debug-kernel/build.sh
# (rebuilt only when its config fragment or the source version changes). The
# tests run scaled down, since that kernel is 10-20x slower under emulation,
# with panic_on_warn; the harness scans kmemleak and the kernel log as always.
# The fuzzer runs to its 10^6-call bound there (462-867 s measured), at
# most 900 s. The debug kernel is PREEMPT_DYNAMIC with full preemption as
# its default, and is booted twice: fully preemptible, where might_sleep()
# and lockdep see the most, then with preempt=none, where a kernel loop
# without a scheduling point becomes a soft lockup. The fuzzer's findings
# (KASAN, lockdep, UBSAN) do not depend on the preemption model, so the
# second boot bounds it at DEBUG_NONE_FUZZ_SECONDS: that boot then takes a
# few minutes instead of the first boot's quarter of an hour. The real programs
# (tests/programs/) run on the distro kernels only: under this kernel's
# 10-20x slow-down they would take most of the guest's time limit.
DEBUG_TEST_ENV ?= TOFUTEX_TEST_SCALE=0.2 TOFUTEX_FUZZ_SECONDS=900 CK_TIMEOUT_MULTIPLIER=4
DEBUG_NONE_FUZZ_SECONDS ?= 120
DEBUG_QEMU_TIMEOUT ?= 1800
check-debug:
	@tests/deps.sh all
	+@kvars=$$(tests/debug-kernel/build.sh | tail -n 1) && eval "$$kvars" && \
	boot() { PREEMPT_MODES=$$1 PROGRAMS=0 $(MAKE) --no-print-directory check-kernel \
		KIMAGE="$$KIMAGE" KDIR="$$KDIR" KNAME=debug KAPPEND='panic_on_warn=1 $(KAPPEND)' \
		QEMU_TIMEOUT=$(DEBUG_QEMU_TIMEOUT) TEST_ENV="$$2"; } && \
	full=0 none=0 && \
	{ boot default '$(DEBUG_TEST_ENV)' || full=$$?; } && \
	{ boot none '$(DEBUG_TEST_ENV) TOFUTEX_FUZZ_SECONDS=$(DEBUG_NONE_FUZZ_SECONDS)' || none=$$?; } && \
	[ $$full -eq 0 ] && [ $$none -eq 0 ]

bench:
	@tests/deps.sh all
	+@$(QEMU_ENV) $(if $(KIMAGE),KIMAGE='$(KIMAGE)' KDIR='$(KDIR)' KNAME='$(KNAME)') \
		$(RUN) bench $(KVERS)

check-host: deps-build
	+@$(RUN) check-host

# The library suites on this machine with the futex backend (no module,
# no QEMU); `make check` runs them too, before the guests.
check-native: deps-build
	+@$(RUN) check-native

bench-host: deps-build
	+@$(RUN) bench-host

# glibc's own tests about mutexes, condition variables and their
# cancellation (tests/glibc/tests.list), built from Debian's glibc-source
# into build/glibc (nothing of glibc's is kept in the tree), each run stock
# and under tofutex-run. `make check` runs them natively (futex backend)
# and in every guest (module and futex backends); check-glibc runs only
# them, natively: GLIBC_TESTS="tst-cond1 ..." to choose.
glibc-tests:
	@tests/deps.sh glibc
	@tests/glibc/build.sh build/glibc

check-glibc:
	@tests/deps.sh glibc
	+@$(RUN) check-glibc

# bench_cond and bench_lock on this machine without the module: libtofutex
# runs on its futex backend, against glibc, on real CPUs (bench_lock: the
# tofutex lock against glibc's default and adaptive mutexes). Raw output
# and tables in build/bench/native/; BENCH_LOCK_OPTS as for `make bench`.
bench-native: deps-build build/bench/bin/bench_cond build/bench/bin/bench_lock
	@mkdir -p build/bench/native
	build/bench/bin/bench_cond | tee build/bench/native/bench_cond.txt
	bench/report-cond.sh build/bench/native/bench_cond.txt
	TOFUTEX_BACKEND=futex build/bench/bin/bench_lock -i tofutex,pthread,adaptive \
		| tee build/bench/native/bench_lock.txt
	bench/report-lock.sh build/bench/native/bench_lock.txt

# dkms add/build/install/remove in private DKMS trees, for each kernel.
dkms-check:
	@tests/deps.sh all
	@tests/dkms.sh check $(KVERS)

# For a host that loads modules: sources to /usr/src, dkms install for the
# running kernel (or KVERS).
dkms-install:
	@tests/dkms.sh install $(KVERS)
dkms-uninstall:
	@tests/dkms.sh uninstall

# --- manual pages ----------------------------------------------------------
# build/man is the installed manual tree: man/*.[1-8] plus one ".so" link
# page per function of lib/tofutex.h (man/pages.sh).
MAN_STAGE := build/man

man:
	@man/pages.sh stage $(MAN_STAGE)

# groff -ww and mandoc -Tlint, fast; `make check` runs it first.
lint-man: man
	@tests/deps.sh man
	@man/pages.sh lint $(MAN_STAGE)

# The kernel's checkpatch.pl (from Debian's linux-source-6.12, unpacked
# once into build/checkpatch/) on every module source and header; fails on
# any error or warning.
CHECKPATCH_TAR := /usr/src/linux-source-6.12.tar.xz
CHECKPATCH := build/checkpatch/scripts/checkpatch.pl
lint-kernel: $(CHECKPATCH)
	@$(CHECKPATCH) --no-tree --quiet --terse --max-line-length=80 \
		-f module/*.c module/*.h && echo 'checkpatch: module/*.c module/*.h clean'
$(CHECKPATCH):
	@test -r $(CHECKPATCH_TAR) || \
		{ echo "lint-kernel: needs $(CHECKPATCH_TAR) (apt-get install linux-source-6.12)" >&2; exit 1; }
	@mkdir -p build/checkpatch
	@tar -xJf $(CHECKPATCH_TAR) -C build/checkpatch --strip-components=1 --wildcards \
		'*/scripts/checkpatch.pl' '*/scripts/spelling.txt' '*/scripts/const_structs.checkpatch'

# --- Debian packages -------------------------------------------------------
# debian/ with dpkg-buildpackage and dh-dkms, from a copy of the tree in
# build/deb/ (dpkg-buildpackage writes its results next to the source
# directory); then lintian. tests/deb.sh says more.
deb:
	@tests/deps.sh deb
	@tests/deb.sh build

# Build, install on this host, dkms status for every kernel, a pkg-config
# build against the installed files, a guest booting the package-built
# module, purge, nothing left.
deb-check:
	@tests/deps.sh all deb
	+@$(QEMU_ENV) tests/deb.sh check $(KVERS)

# --- install ---------------------------------------------------------------
install: lib man
	install -d '$(DESTDIR)$(LIBDIR)' '$(DESTDIR)$(INCLUDEDIR)/tofutex'
	install -m 644 $(LIB_A) '$(DESTDIR)$(LIBDIR)/'
ifneq ($(LIB_SO),)
	install -m 755 $(LIB_SO) '$(DESTDIR)$(LIBDIR)/'
	ln -sfn libtofutex.so.$(VERSION) '$(DESTDIR)$(LIBDIR)/libtofutex.so.$(SOVERSION)'
	ln -sfn libtofutex.so.$(SOVERSION) '$(DESTDIR)$(LIBDIR)/libtofutex.so'
endif
	install -m 755 $(PRELOAD_SO) '$(DESTDIR)$(LIBDIR)/'
	ln -sfn libtofutex-pthread.so.$(VERSION) '$(DESTDIR)$(LIBDIR)/libtofutex-pthread.so.$(SOVERSION)'
	install -d '$(DESTDIR)$(BINDIR)'
	install -m 755 $(RUN_BIN) '$(DESTDIR)$(BINDIR)/'
	install -m 644 lib/tofutex.h '$(DESTDIR)$(INCLUDEDIR)/tofutex.h'
	install -m 644 uapi/tofutex.h '$(DESTDIR)$(INCLUDEDIR)/tofutex/uapi.h'
ifneq ($(wildcard lib/tofutex.pc.in),)
	install -d '$(DESTDIR)$(PKGCONFIGDIR)'
	sed -e 's|@PREFIX@|$(PREFIX)|g; s|@prefix@|$(PREFIX)|g' \
	    -e 's|@EXEC_PREFIX@|$(PREFIX)|g; s|@exec_prefix@|$(PREFIX)|g' \
	    -e 's|@LIBDIR@|$(LIBDIR)|g; s|@libdir@|$(LIBDIR)|g' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|g; s|@includedir@|$(INCLUDEDIR)|g' \
	    -e 's|@VERSION@|$(VERSION)|g; s|@version@|$(VERSION)|g' \
	    lib/tofutex.pc.in > '$(DESTDIR)$(PKGCONFIGDIR)/tofutex.pc'
	@! grep -n '@[A-Za-z_]*@' '$(DESTDIR)$(PKGCONFIGDIR)/tofutex.pc' || \
		{ echo "install: unknown @VARIABLE@ left in tofutex.pc" >&2; exit 1; }
endif
	@set -e; for m in $(MAN_STAGE)/man*/*; do \
		d='$(DESTDIR)$(MANDIR)'/$$(basename "$$(dirname "$$m")"); \
		install -d "$$d"; \
		echo "install -m 644 $$m $$d/"; \
		install -m 644 "$$m" "$$d/"; \
	done
	@if [ -z '$(DESTDIR)' ] && [ "$$(id -u)" = 0 ] && [ -n '$(LIB_SO)' ]; then ldconfig; fi

uninstall:
	rm -f '$(DESTDIR)$(LIBDIR)'/libtofutex.a '$(DESTDIR)$(LIBDIR)'/libtofutex.so*
	rm -f '$(DESTDIR)$(LIBDIR)'/libtofutex-pthread.so* '$(DESTDIR)$(BINDIR)/tofutex-run'
	rm -f '$(DESTDIR)$(INCLUDEDIR)/tofutex.h' '$(DESTDIR)$(INCLUDEDIR)/tofutex/uapi.h'
	-rmdir '$(DESTDIR)$(INCLUDEDIR)/tofutex'
	rm -f '$(DESTDIR)$(PKGCONFIGDIR)/tofutex.pc'
	@man/pages.sh stage $(MAN_STAGE); \
	for m in $(MAN_STAGE)/man*/*; do \
		f='$(DESTDIR)$(MANDIR)'/$$(basename "$$(dirname "$$m")")/$${m##*/}; \
		echo "rm -f $$f"; rm -f "$$f"; \
	done

clean:
	rm -rf build

help:
	@echo 'make                 module for KDIR (default: $(KDIR)),'
	@echo '                     libtofutex, tests and benchmarks, in build/'
	@echo 'make check           tests in QEMU on every installed Debian 6.1/6.12 kernel'
	@echo '                     (KVERS="6.1 6.12.117+deb12-amd64" to choose)'
	@echo 'make bench           benchmarks in a QEMU guest (KVERS=6.1 to choose); tables,'
	@echo '                     charts and build/bench/<kernel>/report.md'
	@echo 'make check-kernel KIMAGE=bzImage KDIR=tree [KNAME=name]'
	@echo '                     tests in QEMU on any kernel image and build tree'
	@echo 'make check-debug     tests in QEMU on the self-built debug kernel (built once, cached)'
	@echo 'make check-host      tests on this host (module loaded: modprobe tofutex)'
	@echo 'make check-native    library suites on this host, futex backend (no module)'
	@echo 'make check-glibc     glibc'"'"'s own mutex/condvar/cancellation tests on this host,'
	@echo '                     stock and under tofutex-run (futex backend)'
	@echo 'make bench-native    bench_cond, bench_lock on this host, futex backend'
	@echo 'make bench-host      benchmarks on this host'
	@echo 'make lint-kernel     checkpatch.pl on the module sources'
	@echo 'make dkms-check      dkms add/build/install/remove for each kernel'
	@echo '                     (private DKMS trees; the system is untouched)'
	@echo 'make dkms-install     install the module with DKMS (running kernel or KVERS)'
	@echo 'make dkms-uninstall  dkms remove it again'
	@echo 'make deb             Debian packages in build/deb/ (dpkg-buildpackage), lintian'
	@echo 'make deb-check       build, install, dkms status, pkg-config build, guest'
	@echo '                     boot of the package-built module, purge'
	@echo 'make lint-man        groff -ww and mandoc -Tlint on the manual pages'
	@echo 'make install         library, headers, pkg-config file, man pages'
	@echo '                     (PREFIX=$(PREFIX), DESTDIR=)'
	@echo 'make deps            install the Debian packages all of this needs'
	@echo 'make clean           remove build/'
	@echo 'Variables: KAPPEND (guest kernel command line), QEMU_TIMEOUT (s), QEMU_ACCEL,'
	@echo '           VERBOSE=1 (guest console on the terminal), MODULE_W (W= for Kbuild)'
