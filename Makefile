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
# 6.12 kernel, and "default" of Debian's newer ones: the 6.18 LTS, the
# newest 7.x and the newest 7.x -rt, fetched by tests/qemu/debian-kernels.sh
# into a trixie build root); `make bench` boots the first one (default:
# newest 6.12). Installed releases or prefixes such as "6.1"; releases or
# series of Debian's newer kernels ("6.18", "7.3-rt"); "all": every series.
KVERS ?=
# Extra kernel command line for the guests, e.g. KAPPEND="preempt=full".
KAPPEND ?=
# Seconds a guest may run before it counts as hung.
QEMU_TIMEOUT ?=
# QEMU -accel for the guests (default: tcg,thread=multi, parallel vCPUs).
# PREEMPT_MODES (environment): preemption models each check guest boots with
# (default: each kernel its own, and the first kernel that has it also
# preempt=none, a second boot with the module's own tests only);
# GUEST_SCOPE (environment): "all", "backends" or "module" for every guest
# (default: the ends of the kernel list run everything, the kernels
# between them the suites on both backends); TESTS: only these test
# programs.
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
# The version script and its aliases, from the C library the preload is
# built against (lib/pthread/versions.sh).
PRELOAD_GEN := build/lib/pthread-gen
PRELOAD_MAP := $(PRELOAD_GEN)/libtofutex-pthread.map
PRELOAD_VERSIONS := $(PRELOAD_GEN)/pthread-versions.h
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
# tests/preload/plugin_*.c: shared objects those programs dlopen() from
# their own directory, or are linked with (plugin_NAME.c:
# libtfx-plugin-NAME.so).
PRELOAD_PLUGIN_SRCS := $(wildcard tests/preload/plugin_*.c)
PRELOAD_PLUGINS := $(PRELOAD_PLUGIN_SRCS:tests/preload/plugin_%.c=build/tests/preload/libtfx-plugin-%.so)
# tests/preload/comma.locale: a decimal-comma locale those programs find
# in their own directory (LOCPATH=.../locale).
PRELOAD_LOCALE := build/tests/preload/locale/tfx_comma/LC_NUMERIC
BENCH_SRCS := $(wildcard bench/*.c)
BENCH_BINS := $(BENCH_SRCS:bench/%.c=build/bench/bin/%)
# bench/drivers/*.c: programs the real-program tables run stock and under
# tofutex-run, so dynamically linked (the preload must reach them).
DRIVER_SRCS := $(wildcard bench/drivers/*.c)
DRIVER_BINS := $(DRIVER_SRCS:bench/drivers/%.c=build/bench/drivers/%)

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

.PHONY: all module userspace lib man test-bins native-test-bins bench-bins deps deps-build deps-user \
	lint-man lint-kernel deb deb-check check check-kernel check-debug bench check-host bench-host \
	check-native check-glibc glibc-tests bench-native check-matrix lockbound-bins bench-lockcost \
	dkms-check dkms-install dkms-uninstall \
	install uninstall clean help FORCE \
	check-docs check-examples dist dist-check dist-check-deb deps-undo

all: module userspace

# Packages: the whole list for anything that boots or packages, the compiler
# and Check for user space, plus headers when KDIR is the default.
deps:
	@tests/deps.sh all
deps-build:
	@tests/deps.sh build $(if $(filter command line environment,$(origin KDIR)),,headers)
# User space alone (tests, benchmarks, check-native): no kernel headers.
deps-user:
	@tests/deps.sh build

# Says which kernel the module is for, and warns when that is not the
# running one (the usual case on a host without the running kernel's
# headers: KDIR falls back to the newest installed build tree).
module: deps-build
	@ko=$$(tests/qemu/build-module.sh '$(KDIR)' '$(MODULE_W)') && \
	kver=$$(tests/qemu/kernels.sh kver '$(KDIR)') && \
	echo "module: $${ko#$(TOP)/}, built for kernel $$kver" && \
	if [ "$$kver" != "$$(uname -r)" ]; then \
		echo "module: warning: the running kernel is $$(uname -r), not $$kver; this module cannot be loaded here." >&2; \
		echo "  For the running kernel install its headers (apt-get install linux-headers-$$(uname -r))," >&2; \
		echo "  then make module, or make dkms-install. libtofutex works without it (futex backend)." >&2; \
	fi

# The library suites built with the library itself under ThreadSanitizer
# (dynamic: TSan has no static runtime). TSan models the C11 atomics of
# the lock words, so a lost acquire or release shows as a data race on
# what the lock protects, on x86-64 too, where the CPU would hide it
# (tests/tsan/weaken.sh proves it point by point; HACKING.md, "Memory
# ordering").
TSAN_BINS := $(patsubst tests/%.c,build/tsan/%,$(wildcard tests/test_lib_*.c))
build/tsan/%: tests/%.c $(LIB_SRCS) $(wildcard lib/*.h) | $(UAPI_LINK) deps-user
	@mkdir -p $(@D)
	$(CC) $(TFX_CFLAGS) -O1 -g -fsanitize=thread $(LDFLAGS) -o $@ $< \
		$(LIB_SRCS) $(CHECK_LIBS)

# The pthread preload the same way, and its lock suites, run with it
# preloaded ahead of TSan's runtime, so that their calls reach the
# preload's code and not TSan's interceptors (tests/tsan/build-preload.sh
# says why and what is left uninstrumented).
TSAN_PRELOAD := build/tsan/lib/libtofutex-pthread.so.$(SOVERSION)
TSAN_PRELOAD_BINS := $(addprefix build/tsan/preload/,test_pthread_mutex \
	test_pthread_cond test_pthread_rwlock test_pthread_rwlock_handover)
$(TSAN_PRELOAD): tests/tsan/build-preload.sh $(PRELOAD_SRCS) $(LIB_SRCS) \
		$(wildcard lib/*.h lib/pthread/*.h) $(PRELOAD_MAP) | $(UAPI_LINK) deps-user
	CC='$(CC)' tests/tsan/build-preload.sh lib $(PRELOAD_GEN) build/include $@
build/tsan/preload/%: tests/preload/%.c $(LIB_SRCS) $(wildcard lib/*.h) | $(UAPI_LINK) deps-user
	@mkdir -p $(@D)
	$(CC) $(TFX_CFLAGS) -O1 -g -fsanitize=thread -rdynamic $(LDFLAGS) -o $@ $< \
		$(LIB_SRCS) -Wl,-Bstatic -lcheck -lsubunit -Wl,-Bdynamic $(SYS_LIBS)

userspace: lib test-bins bench-bins
lib: $(LIB_A) $(LIB_SO) $(PRELOAD_SO) $(RUN_BIN)
test-bins: $(TEST_BINS) $(PRELOAD_TEST_BINS) $(PRELOAD_PLUGINS) $(PRELOAD_LOCALE) \
	$(TSAN_BINS) $(TSAN_PRELOAD) $(TSAN_PRELOAD_BINS) build/tests/programs/tofutex-stats
# What check-native runs and nothing more: the library suites
# (tests/test_lib_*.c) and the preload's programs, with what they load,
# and the library suites again under ThreadSanitizer.
native-test-bins: lib $(filter build/tests/test_lib_%,$(TEST_BINS)) \
	$(PRELOAD_TEST_BINS) $(PRELOAD_PLUGINS) $(PRELOAD_LOCALE) $(TSAN_BINS) \
	$(TSAN_PRELOAD) $(TSAN_PRELOAD_BINS)
bench-bins: $(BENCH_BINS)
# The tests and benchmarks need the compiler and Check; with parallel make
# the dependency step must still run first. The libraries and tofutex-run
# need only a C compiler and make, on any distribution: no dependency step.
$(TEST_HELPER_OBJS) $(TEST_BINS) $(PRELOAD_TEST_BINS) $(BENCH_BINS): | deps-user

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

build/lib/pthread-pic/%.o: lib/pthread/%.c $(PRELOAD_VERSIONS) | $(UAPI_LINK)
	@mkdir -p $(@D)
	$(CC) $(TFX_CFLAGS) -I$(PRELOAD_GEN) $(CPPFLAGS) $(CFLAGS) -fPIC -c -o $@ $<

$(PRELOAD_VERSIONS): lib/pthread/versions.sh $(PRELOAD_SRCS)
	@mkdir -p $(@D)
	lib/pthread/versions.sh "$$($(CC) -print-file-name=libc.so.6)" \
		$(PRELOAD_MAP) $@ $(PRELOAD_SRCS)
$(PRELOAD_MAP): $(PRELOAD_VERSIONS)

$(PRELOAD_SO): $(PRELOAD_OBJS) $(LIB_PICOBJS) $(PRELOAD_MAP)
	$(CC) -shared -pthread -Wl,-soname,libtofutex-pthread.so.$(SOVERSION) \
		-Wl,-z,defs -Wl,--version-script=$(PRELOAD_MAP) $(LDFLAGS) \
		-o $@ $(PRELOAD_OBJS) $(LIB_PICOBJS)
	ln -sfn $(@F) build/lib/libtofutex-pthread.so.$(SOVERSION)

# Dynamic, as the programs it starts. It finds the library relative to
# its own location (the path from BINDIR to LIBDIR, then ../lib for the
# build tree), then at LIBDIR (lib/pthread/tofutex-run.c); both are built
# in, so a change of LIBDIR or BINDIR rebuilds it (RUN_PATHS changes only
# when they do).
RUN_PATHS := build/bin/.tofutex-run-paths
RUN_RELDIR = $(shell realpath -m --relative-to='$(BINDIR)' '$(LIBDIR)')
$(RUN_PATHS): FORCE
	@mkdir -p $(@D)
	@echo 'LIBDIR=$(LIBDIR) BINDIR=$(BINDIR)' | cmp -s - $@ 2>/dev/null || \
		echo 'LIBDIR=$(LIBDIR) BINDIR=$(BINDIR)' >$@
$(RUN_BIN): lib/pthread/tofutex-run.c lib/tofutex.h $(RUN_PATHS) | $(UAPI_LINK)
	@mkdir -p $(@D)
	$(CC) $(TFX_CFLAGS) $(CPPFLAGS) $(CFLAGS) -DTOFUTEX_RUN_LIBDIR='"$(LIBDIR)"' \
		-DTOFUTEX_RUN_RELDIR='"$(RUN_RELDIR)"' $(LDFLAGS) -o $@ $<

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
	$(CC) $(TFX_CFLAGS) $(CFLAGS) -no-pie -rdynamic $(LDFLAGS) -o $@ $< $(LIB_A) \
		-Wl,-Bstatic -lcheck -lsubunit -Wl,-Bdynamic -lm -lrt -lpthread

build/tests/preload/libtfx-plugin-%.so: tests/preload/plugin_%.c
	@mkdir -p $(@D)
	$(CC) $(TFX_CFLAGS) $(CFLAGS) -shared -fPIC $(LDFLAGS) -o $@ $<

# test_pthread_report is linked with plugin_early.c's library, found next
# to it (RUNPATH $ORIGIN), whose constructor runs before the preload's.
build/tests/preload/test_pthread_report: tests/preload/test_pthread_report.c \
		build/tests/preload/libtfx-plugin-early.so $(LIB_A) | $(UAPI_LINK)
	$(CC) $(TFX_CFLAGS) $(CFLAGS) -no-pie -rdynamic $(LDFLAGS) -o $@ $< $(LIB_A) \
		-L$(@D) -ltfx-plugin-early -Wl,--enable-new-dtags -Wl,-rpath,'$$ORIGIN' \
		-Wl,-Bstatic -lcheck -lsubunit -Wl,-Bdynamic -lm -lrt -lpthread

# localedef -c writes the categories the file leaves out and says so
# (exit status 1, warnings only); only the written locale counts.
$(PRELOAD_LOCALE): tests/preload/comma.locale
	@rm -rf $(@D) && mkdir -p $(@D)
	localedef -c -i $< -f UTF-8 $(@D) >/dev/null 2>&1 || test -s $@

# plugin_textrel.c's text relocations are the point: the linker is told.
build/tests/preload/libtfx-plugin-textrel.so: tests/preload/plugin_textrel.c
	@mkdir -p $(@D)
	$(CC) $(TFX_CFLAGS) $(CFLAGS) -shared -fPIC $(LDFLAGS) -Wl,-z,notext -o $@ $<

# plugin_runpath.c needs plugin_nested.c's library and finds it, and its
# siblings, through its RUNPATH ($ORIGIN).
build/tests/preload/libtfx-plugin-runpath.so: tests/preload/plugin_runpath.c \
		build/tests/preload/libtfx-plugin-nested.so
	$(CC) $(TFX_CFLAGS) $(CFLAGS) -shared -fPIC $(LDFLAGS) -Wl,--enable-new-dtags \
		-Wl,-rpath,'$$ORIGIN' -o $@ $< -L$(@D) -Wl,--no-as-needed -ltfx-plugin-nested

# The real programs' guest helper (tests/programs/run.sh).
build/tests/programs/tofutex-stats: tests/programs/tofutex-stats.c $(LIB_A) | $(UAPI_LINK) deps-user
	@mkdir -p $(@D)
	$(CC) $(TFX_CFLAGS) $(CFLAGS) -static $(LDFLAGS) -o $@ $< $(LIB_A) $(SYS_LIBS)

# The drivers (libtofutex linked in statically for lockcost's
# tofutex_mutex_* calls); sqlite-threads needs Debian's libsqlite3-dev
# (tests/deps.sh native).
lockbound-bins: $(DRIVER_BINS)
build/bench/drivers/%: bench/drivers/%.c $(LIB_A) | $(UAPI_LINK)
	@mkdir -p $(@D)
	$(CC) $(TFX_CFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_A) -lsqlite3 -lpthread

# A benchmark that outgrew one file keeps its other parts in bench/<name>/
# (*.c compiled into it, *.h its own headers).
.SECONDEXPANSION:
build/bench/bin/%: bench/%.c $$(wildcard bench/$$*/*.c bench/$$*/*.h) $(LIB_A) | $(UAPI_LINK)
	@mkdir -p $(@D)
	$(CC) $(TFX_CFLAGS) $(CPPFLAGS) $(CFLAGS) -static $(LDFLAGS) -o $@ $< \
		$(wildcard bench/$*/*.c) $(LIB_A) $(SYS_LIBS)

-include $(wildcard build/lib/obj/*.d build/lib/pic/*.d build/lib/pthread-pic/*.d \
	build/bin/*.d build/tests/*.d build/tests/preload/*.d build/tests/programs/*.d \
	build/tests/obj/*.d build/bench/bin/*.d build/bench/drivers/*.d)

# --- running ---------------------------------------------------------------
# The full dependency step runs first and alone (two apt-gets at once would
# fight over the dpkg lock under make -j); run.sh then builds user space
# itself, under a lock that makes concurrent runs in one tree take turns.
# The x86-64 guests boot each kernel once (PREEMPT_MODES=default: the
# second boot of 6.1 with preempt=none is check-matrix's), the kernels
# between the ends run the suites on the module only (MIDDLE_SCOPE: the
# futex backend's suites run at the ends and natively), glibc's tests run
# on the newest kernel only (GLIBC=newest; check-matrix: every kernel),
# which makes room for one arm64 guest (ARM64_KVERS) with the module's
# tests and the library and preload suites on both backends there
# (ARM64_SCOPE), on a weakly ordered CPU.
ARM64_KVERS ?= 6.12
check: lint-man
	@tests/lint-tree.sh
	@tests/deps.sh all
	@tests/deps.sh arm64
	+@tests/docs.sh docs
	+@tests/docs.sh examples
	+@tests/docs.sh dist-check
	+@$(QEMU_ENV) PREEMPT_MODES='$(or $(PREEMPT_MODES),default)' \
		MIDDLE_SCOPE='$(or $(MIDDLE_SCOPE),module)' GLIBC='$(or $(GLIBC),newest)' \
		$(RUN) check $(KVERS)
	+@$(QEMU_ENV) ARCH=arm64 GUEST_SCOPE=$(or $(ARM64_SCOPE),backends) \
		$(RUN) check $(ARM64_KVERS)

# Every kernel series Debian ships, each in a guest (no lint, docs or
# native runs): bookworm's 6.1 and 6.12, and trixie's 6.12 and
# trixie-backports' 6.16 to 7.x, each of those also as -rt (-cloud is the
# same code with fewer drivers), glibc's tests on the module of each
# (GLIBC=every; make check on the newest kernel of its list). A guest
# takes 5-8 minutes on two cores, a second preemption model's boot 2-3.
# ARCH=arm64: Debian's arm64 kernels instead, by default Debian 12's 6.1
# and 6.12 and Debian 13's 6.18, newest 7.x and 7.x -rt (the module's
# tests, the library and preload suites on both backends and without the
# module; no glibc tests there).
MATRIX_KVERS = $(if $(filter arm64,$(ARCH)),6.1 6.12 default,6.1 6.12 all)
check-matrix:
	@tests/deps.sh all
	$(if $(filter arm64,$(ARCH)),@tests/deps.sh arm64)
	+@$(QEMU_ENV) GLIBC=$(or $(GLIBC),every) $(RUN) check $(or $(KVERS),$(MATRIX_KVERS))

# The documentation and the release, checked on this host (tests/docs.sh):
# README.md's C blocks and tofutex(3)'s example compile and run, the make
# targets the documents show exist, the versions agree; <tofutex.h> under
# strict C99 and C++11, examples/ built and run against a staged install;
# the tarball of `make dist` builds (lib, examples; deb: dist-check-deb).
check-docs: lib man
	@tests/deps.sh docs
	+@tests/docs.sh docs
check-examples: lib man
	@tests/deps.sh docs
	+@tests/docs.sh examples
dist-check:
	@tests/deps.sh docs
	+@tests/docs.sh dist-check
dist-check-deb:
	@tests/deps.sh deb
	+@tests/docs.sh dist-deb

# The release tarball: the files git tracks (with their working-tree
# contents), under tofutex-$(VERSION)/, reproducible (sorted, owner 0,
# the last commit's time). It builds without git: make lib, make deb.
DIST := build/tofutex-$(VERSION).tar.gz
dist:
	@git rev-parse --is-inside-work-tree >/dev/null 2>&1 || \
		{ echo "dist: needs a git checkout (the tarball holds the files git tracks)" >&2; exit 1; }
	@mkdir -p build
	@git ls-files -z | tar --null -T - --transform 's,^,tofutex-$(VERSION)/,' \
		--sort=name --owner=0 --group=0 --numeric-owner \
		--mtime=@$$(git log -1 --format=%ct) -cf - | gzip -n9 >$(DIST)
	@echo "dist: $(DIST) ($$(tar -tzf $(DIST) | grep -vc '/$$') files)"

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
# The fuzzer runs for DEBUG_FUZZ_SECONDS there (about 2,000 calls/s alone).
# The debug kernel is PREEMPT_DYNAMIC with full preemption as its default,
# where might_sleep() and lockdep see the most, and is booted once, with it
# (DEBUG_PREEMPT_MODES): what a preempt=none boot adds, a kernel loop
# without a scheduling point turned into a soft lockup, the distro
# kernels' preempt=none boots in `make check` catch (their soft-lockup
# detector is on), and lockdep, KASAN and UBSAN findings do not depend on
# the preemption model. DEBUG_PREEMPT_MODES="default none" boots both; the
# second bounds the fuzzer at DEBUG_NONE_FUZZ_SECONDS. A preempt= in
# KAPPEND chooses the one model instead. What goes through
# the module runs (GUEST_SCOPE=module); the futex backend's runs, the real
# programs (tests/programs/) and glibc's own tests (tests/glibc/) run on
# the distro kernels only: they do not reach the module, and under this
# kernel's 10-20x slow-down they would take most of the guest's time limit.
# DEBUG_KERNELS="default rt" also builds and boots the PREEMPT_RT debug
# kernel (tests/debug-kernel/rt.config: the same checks where spinlock_t
# sleeps; about 5 minutes' build, cached, and one boot, its fuzzer bounded
# at DEBUG_NONE_FUZZ_SECONDS).
DEBUG_FUZZ_SECONDS ?= 180
DEBUG_TEST_ENV ?= TOFUTEX_TEST_SCALE=0.2 CK_TIMEOUT_MULTIPLIER=4
DEBUG_PREEMPT_MODES ?= default
DEBUG_NONE_FUZZ_SECONDS ?= 120
DEBUG_QEMU_TIMEOUT ?= 1800
DEBUG_KERNELS ?= default
# What the debug guests run: module (the suites on the module backend) or
# kernel (the Check programs and the library suites only).
DEBUG_GUEST_SCOPE ?= module
check-debug:
	@tests/deps.sh all
	+@boot() { PREEMPT_MODES=$$1 GUEST_SCOPE=$(DEBUG_GUEST_SCOPE) PROGRAMS=0 GLIBC=0 PERF=0 $(MAKE) --no-print-directory check-kernel \
		KIMAGE="$$KIMAGE" KDIR="$$KDIR" KNAME=$$3 KAPPEND='panic_on_warn=1 $(KAPPEND)' \
		QEMU_TIMEOUT=$(DEBUG_QEMU_TIMEOUT) TEST_ENV="$$2"; } && \
	rc=0 && for k in $(DEBUG_KERNELS); do \
		case $$k in \
		default) fl= modes='$(if $(filter preempt=%,$(KAPPEND)),default,$(DEBUG_PREEMPT_MODES))' name=debug ;; \
		rt) fl=rt modes=default name=debug-rt ;; \
		*) echo "check-debug: DEBUG_KERNELS takes default and rt, not $$k" >&2; exit 2 ;; \
		esac; \
		kvars=$$(tests/debug-kernel/build.sh $$fl | tail -n 1) && eval "$$kvars" || { rc=1; continue; }; \
		for m in $$modes; do \
			fuzz=$(DEBUG_NONE_FUZZ_SECONDS); \
			[ $$m != default ] || [ $$k != default ] || fuzz=$(DEBUG_FUZZ_SECONDS); \
			boot $$m '$(DEBUG_TEST_ENV) '"TOFUTEX_FUZZ_SECONDS=$$fuzz" $$name || rc=1; \
		done; \
	done && [ $$rc -eq 0 ]

bench:
	@tests/deps.sh all
	$(if $(filter 0,$(PROGRAMS) $(LOCKBOUND)),,+$(MAKE) lockbound-bins)
	+@$(QEMU_ENV) $(if $(KIMAGE),KIMAGE='$(KIMAGE)' KDIR='$(KDIR)' KNAME='$(KNAME)') \
		$(RUN) bench $(KVERS)

# /dev/tofutex first: nothing to build when there is no module to test.
check-host:
	@test -c /dev/tofutex || { echo "check-host: /dev/tofutex is missing: load the module first (modprobe tofutex; README.md, Quick start)" >&2; exit 1; }
	@tests/deps.sh build
	+@$(RUN) check-host

# The library suites on this machine with the futex backend (no module,
# no QEMU); `make check` runs them too, before the guests.
check-native: deps-user
	+@$(RUN) check-native

bench-host:
	@test -c /dev/tofutex || { echo "bench-host: /dev/tofutex is missing: load the module first (modprobe tofutex)" >&2; exit 1; }
	@tests/deps.sh build
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

# The benchmarks on this machine without the module: libtofutex runs on its
# futex backend, against glibc, on real CPUs. bench_cond; bench_rwlock
# (against glibc's default and writer-preferring rwlocks; BENCH_RWLOCK_OPTS,
# e.g. "-s 0.1 -r 3", shortens it), tables, targets and ratio chart by
# bench/report-rwlock.sh; bench_lock (the
# tofutex lock against glibc's default and adaptive mutexes; BENCH_LOCK_OPTS
# as for `make bench`); and the real programs stock against tofutex-run
# (bench/programs-native.sh, NATIVE_ROUNDS rounds), then the lock-bound
# programs the same way (programs-native.sh -l: RocksDB, Kyoto Cabinet,
# SQLite, memcached); profile, the contention report's cost off and on
# (bench/profile-cost.sh, not by default). NATIVE_BENCHES chooses among
# bench_cond, bench_rwlock, bench_lock, programs, lockbound and profile.
# BUSY=1 runs the two program tables again with as many busy-looping
# processes as CPUs beside them (reported separately). Raw output and
# tables in build/bench/native/.
NATIVE_BENCHES ?= bench_cond bench_rwlock bench_lock programs lockbound
NATIVE_ROUNDS ?= 5
BUSY ?= 0
BENCH_RWLOCK_OPTS ?=
bench-native: deps-user build/bench/bin/bench_cond build/bench/bin/bench_lock \
		build/bench/bin/bench_rwlock build/bench/bin/profile-loop $(RUN_BIN) \
		$(PRELOAD_SO)
	@mkdir -p build/bench/native
	$(if $(filter bench_cond,$(NATIVE_BENCHES)),build/bench/bin/bench_cond | tee build/bench/native/bench_cond.txt)
	$(if $(filter bench_cond,$(NATIVE_BENCHES)),bench/report-cond.sh build/bench/native/bench_cond.txt)
	$(if $(filter bench_rwlock,$(NATIVE_BENCHES)),TOFUTEX_BACKEND=futex build/bench/bin/bench_rwlock \
		$(BENCH_RWLOCK_OPTS) | tee build/bench/native/bench_rwlock.txt)
	$(if $(filter bench_rwlock,$(NATIVE_BENCHES)),bench/report-rwlock.sh build/bench/native/bench_rwlock.txt)
	$(if $(filter bench_lock,$(NATIVE_BENCHES)),TOFUTEX_BACKEND=futex build/bench/bin/bench_lock \
		-i tofutex$(comma)pthread$(comma)adaptive | tee build/bench/native/bench_lock.txt)
	$(if $(filter bench_lock,$(NATIVE_BENCHES)),bench/report-lock.sh build/bench/native/bench_lock.txt)
	$(if $(filter profile,$(NATIVE_BENCHES)),@tests/deps.sh native)
	$(if $(filter profile,$(NATIVE_BENCHES)),bench/profile-cost.sh)
	$(if $(filter programs,$(NATIVE_BENCHES)),@tests/deps.sh native)
	$(if $(filter programs,$(NATIVE_BENCHES)),bench/programs-native.sh -r $(NATIVE_ROUNDS))
	$(if $(filter programs,$(NATIVE_BENCHES)),$(if $(filter 1,$(BUSY)),bench/programs-native.sh -b -r $(NATIVE_ROUNDS)))
	$(if $(filter lockbound,$(NATIVE_BENCHES)),@tests/deps.sh native)
	$(if $(filter lockbound,$(NATIVE_BENCHES)),$(MAKE) lockbound-bins)
	$(if $(filter lockbound,$(NATIVE_BENCHES)),bench/programs-native.sh -l -r $(NATIVE_ROUNDS))
	$(if $(filter lockbound,$(NATIVE_BENCHES)),$(if $(filter 1,$(BUSY)),bench/programs-native.sh -l -b -r $(NATIVE_ROUNDS)))

# Instructions per uncontended lock operation, glibc's against tofutex-run's
# and libtofutex's own, counted by callgrind (bench/lockcost.sh): a table
# in build/bench/native/lockcost.md with the target (<= glibc's) per row.
bench-lockcost: $(RUN_BIN) $(PRELOAD_SO)
	@tests/deps.sh native
	$(MAKE) lockbound-bins
	bench/lockcost.sh

# bench/profile-cost.sh's lock loop: dynamically linked, for tofutex-run.
build/bench/bin/profile-loop: bench/profile/loop.c
	@mkdir -p $(@D)
	$(CC) $(TFX_CFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $<

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
# directory); then lintian. tests/deb.sh says more. ARCH=arm64: the
# architecture-dependent packages cross-built for arm64, in build/deb/arm64/.
deb:
	@tests/deps.sh deb
	$(if $(filter arm64,$(ARCH)),@tests/deps.sh arm64)
	@tests/deb.sh build

# Build, install on this host, dkms status for every kernel, a pkg-config
# build against the installed files, a guest booting the package-built
# module, purge, nothing left; then the same in the trixie build root, as
# Debian 13 installs them (tests/deb.sh). ARCH=arm64: the arm64 packages
# cross-built, DKMS building the module from tofutex-dkms for arm64's
# 6.12 (KVERS: other arm64 kernels) with the cross compiler, and an arm64
# guest running the module's tests on that module.
deb-check:
	@tests/deps.sh all deb
	$(if $(filter arm64,$(ARCH)),@tests/deps.sh arm64)
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

deps-undo:
	@tests/deps.sh undo

# Every target and every variable a user may set. tests/docs.sh checks
# that each `make TARGET` README.md and HACKING.md show is listed here.
help:
	@echo 'Build (into build/; lib and install need only a C compiler and make):'
	@echo '  make                 module (for KDIR) + lib + tests + benchmarks'
	@echo '  make lib             libtofutex, libtofutex-pthread.so, tofutex-run'
	@echo '  make module          the module for KDIR; says for which kernel'
	@echo '  make userspace       lib + test programs + benchmark programs'
	@echo '  make man             the manual pages, staged in build/man'
	@echo '  make install         library, headers, pkg-config file, tofutex-run, man pages'
	@echo '  make uninstall       remove what make install installed'
	@echo '  make dist            build/tofutex-$(VERSION).tar.gz (the files git tracks)'
	@echo '  make clean           remove build/'
	@echo 'Test (as root on Debian 12; each installs the packages it needs, listed first):'
	@echo '  make check-native    library suites on this host, futex backend, no module (about'
	@echo '                       40 s with the programs built, load average 10)'
	@echo '  make check           lint, docs, examples, tarball, native suites, then every test'
	@echo '                       in QEMU on Debian 6.1, 6.12, 6.18, newest 7.x and 7.x-rt'
	@echo '                       (27 min on 2 idle cores)'
	@echo '  make check-matrix    the guests on every kernel series Debian ships (6.1-7.x, -rt)'
	@echo '  make check-glibc     glibc'"'"'s own mutex/condvar/cancellation/rwlock tests, stock and'
	@echo '                       under tofutex-run, on this host (futex backend; about 3 min,'
	@echo '                       building glibc'"'"'s tests included)'
	@echo '  make check-docs      README C blocks, tofutex(3) example, documented targets, versions'
	@echo '  make check-examples  <tofutex.h> in C99/C++11, examples/ built and run, tofutex-run'
	@echo '  make dist-check      make lib + check-examples in the unpacked tarball'
	@echo '  make dist-check-deb  make deb in the unpacked tarball'
	@echo '  make check-kernel    tests in QEMU on any kernel: KIMAGE=bzImage KDIR=tree [KNAME=]'
	@echo '  make check-debug     tests in QEMU on the self-built debug kernel (built once, cached;'
	@echo '                       about 22 min, plus 9 min for the first build)'
	@echo '  make check-host      tests on this host (needs /dev/tofutex: modprobe tofutex)'
	@echo '  make lint-man        groff -ww and mandoc -Tlint on the manual pages'
	@echo '  make lint-kernel     checkpatch.pl on the module sources'
	@echo 'Benchmark:'
	@echo '  make bench           benchmarks in a QEMU guest; build/bench/<kernel>/report.md'
	@echo '                       (about 9 min per kernel)'
	@echo '  make bench-native    bench_cond, bench_rwlock, bench_lock, real programs on this'
	@echo '                       host, futex backend (about 5 min, the programs 2 of them;'
	@echo '                       NATIVE_BENCHES, NATIVE_ROUNDS), then the lock-bound programs'
	@echo '                       (RocksDB, Kyoto Cabinet, SQLite, memcached: 6 min; BUSY=1'
	@echo '                       repeats both program tables beside busy loops)'
	@echo '  make bench-lockcost  instructions per uncontended lock operation against glibc'"'"'s (callgrind)'
	@echo '  make bench-host      benchmarks on this host (needs /dev/tofutex)'
	@echo 'Packages and installation of the module:'
	@echo '  make deb             Debian packages in build/deb/ (dpkg-buildpackage), lintian'
	@echo '  make deb-check       build, install (here and as Debian 13), dkms status, pkg-config build, guest boot, purge'
	@echo '  make dkms-install    the module with DKMS for the running kernel (or KVERS)'
	@echo '  make dkms-uninstall  remove it again'
	@echo '  make dkms-check      dkms add/build/install/remove per kernel, private DKMS trees'
	@echo '  make deps            install the Debian packages all of this needs'
	@echo '  make deps-undo       purge what the dependency step installed, drop its APT source'
	@echo '  make help            this list'
	@echo 'Variables (make VAR=value, or the environment):'
	@echo '  PREFIX=$(PREFIX) LIBDIR=$(LIBDIR) BINDIR=$(BINDIR)'
	@echo '  INCLUDEDIR=$(INCLUDEDIR) MANDIR=$(MANDIR) PKGCONFIGDIR=$(PKGCONFIGDIR)'
	@echo '  DESTDIR              staging root for make install/uninstall'
	@echo '  CC, AR, CFLAGS (-O2), CPPFLAGS, LDFLAGS'
	@echo '  KDIR                 kernel build tree for make module (default: running kernel, else newest)'
	@echo '  MODULE_W             W= for Kbuild (default 1; any warning fails)'
	@echo '  KVERS                kernels to boot or to build for, e.g. "6.1 6.18 7.3-rt all"'
	@echo '  TESTS                only these test programs, e.g. "test_lock test_device"'
	@echo '  TEST_ENV             "VAR=value ..." for the programs in the guest'
	@echo '  TEST_TIMEOUT         seconds per program in the guest'
	@echo '  PREEMPT_MODES        preemption models per guest (check: "default", and "none" on one kernel)'
	@echo '  GUEST_SCOPE          all, backends or module: what every check guest runs (default: all at the list'"'"'s ends)'
	@echo '  GLIBC_TESTS, GLIBC_GROUPS  only these glibc tests ("tst-cond1 tst-mutex5") or groups ("cond")'
	@echo '  PROGRAMS=0           leave out the real programs (sysbench, pigz, ...)'
	@echo '  PERF=0               leave perf out of the guests (test_trace skips its perf run)'
	@echo '  LOCKBOUND=0          bench: leave out the lock-bound programs (RocksDB, Kyoto Cabinet, ...)'
	@echo '  GLIBC=0              leave out glibc'"'"'s own tests in the guests; GLIBC=every: on every kernel,'
	@echo '                       GLIBC=newest: on the newest only (make check'"'"'s default)'
	@echo '  MIDDLE_SCOPE         backends or module: what the kernels between the list'"'"'s ends run (make check: module)'
	@echo '  BENCHES              only these benchmarks, e.g. "bench_lock" ("none": real programs only)'
	@echo '  NATIVE_BENCHES       bench-native'"'"'s benchmarks (default "$(NATIVE_BENCHES)"; also profile)'
	@echo '  NATIVE_ROUNDS        bench-native'"'"'s rounds of the real programs (default $(NATIVE_ROUNDS); 1 has no spread)'
	@echo '  BUSY=1               bench-native: the program tables again beside one busy loop per CPU'
	@echo '  BENCH_LOCK_OPTS      options for bench_lock (bench-native; guests: TEST_ENV=BENCH_LOCK_OPTS=...)'
	@echo '  BENCH_RWLOCK_OPTS    options for bench_rwlock, e.g. "-s 0.1 -r 3" (bench-native; guests: TEST_ENV=BENCH_RWLOCK_OPTS=-m99)'
	@echo '  KAPPEND              extra guest kernel command line, e.g. preempt=full'
	@echo '  KIMAGE, KNAME        kernel image and label for check-kernel and bench'
	@echo '  QEMU_ACCEL           QEMU -accel (default tcg,thread=multi; needs QEMU 10)'
	@echo '  QEMU_TIMEOUT         seconds per guest (check 600, 1500 with glibc tests; bench 3600)'
	@echo '  VERBOSE=1            guest console on the terminal as well'
	@echo '  DEBUG_KERNELS, DEBUG_TEST_ENV, DEBUG_FUZZ_SECONDS, DEBUG_PREEMPT_MODES, DEBUG_NONE_FUZZ_SECONDS,'
	@echo '  DEBUG_GUEST_SCOPE,'
	@echo '  DEBUG_QEMU_TIMEOUT   make check-debug'
	@echo '  TOFUTEX_CACHE        where the debug kernel, the trixie root and kernels are cached'
