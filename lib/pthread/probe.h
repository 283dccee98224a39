/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libtofutex-pthread - glibc's SDT probe points (<sys/sdt.h>), kept under
 * tofutex-run: the same provider (libc, glibc's since 2.34), names and
 * arguments, at the same places in each function as glibc 2.36's nptl
 * (pthread_mutex_lock.c, pthread_cond_wait.c, pthread_rwlock_*.c, ...),
 * so that a perf, bpftrace or SystemTap script written against a glibc
 * built with --enable-systemtap keeps working with this library's path.
 * A probe is one nop in the code and a note in .note.stapsdt (no
 * semaphore: nothing is computed for a probe nobody watches).
 */
#ifndef TOFUTEX_PTHREAD_PROBE_H
#define TOFUTEX_PTHREAD_PROBE_H

#if __has_include(<sys/sdt.h>)
/* STAP_PROBEV(): one macro for any number of arguments. */
#define SDT_USE_VARIADIC 1
#include <sys/sdt.h>

#define TFX_PROBE(...)	STAP_PROBEV(libc, __VA_ARGS__)
#else
/*
 * Without Debian's systemtap-sdt-dev the library builds without probes
 * (tests/deps.sh installs it; test_pthread_probes fails without them).
 */
#define TFX_PROBE(...)	do { } while (0)
#endif

#endif /* TOFUTEX_PTHREAD_PROBE_H */
