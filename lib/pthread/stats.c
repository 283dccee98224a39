// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex-pthread - TOFUTEX_RUN_STATS: one line per process at exit,
 * naming the program, so that a run under tofutex-run(1) shows whether
 * and how its locks went through tofutex:
 *
 *   tofutex-run: sort[123] backend=futex mutex_inits=3 cond_inits=1
 *                cond_waits=20 futex_waits=80
 *   tofutex-run: sort[123] backend=module mutex_inits=.. cond_inits=..
 *                cond_waits=.. lock=.. unlock=.. spins=.. sleeps=..
 *                steals=.. handoffs=.. owner_deaths=.. timeouts=..
 *                wait=.. wake=..
 *
 * (one line each). mutex_inits and cond_inits count the objects of ours
 * set up with pthread_mutex_init() and pthread_cond_init() (static
 * initialisers are not seen), cond_waits the waits on ours; on the
 * module backend the rest are the kernel's statistics for the process
 * (tofutex_stats(), TOFUTEX_STATS_PROCESS; see tofutex(4)), on the futex
 * backend futex_waits counts the futex(2) waits of its locks and
 * condition variables.
 *
 * Which processes: those that locked or unlocked anything of ours
 * (tofutex__tid_used), so that the shells and other wrappers a command
 * runs through print nothing; TOFUTEX_RUN_STATS=all prints for every
 * process, to standard error.
 *
 * Where it goes (report.h): TOFUTEX_RUN_STATS=1 (or all), standard
 * error; any other value is a file the line is appended to. Read with secure_getenv(): a
 * set-ID program never writes a file named by its caller. The line is
 * written with one write(2), so that the lines of several processes
 * sharing a file or a pipe do not interleave.
 *
 * When: as the process ends (exit.c, also after _exit()); the line is
 * made with snprintf() of integers and strings into a buffer on the
 * stack, which allocates nothing and takes no lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../backend.h"
#include "preload.h"
#include "report.h"

struct tfx_stats tfx_stats;
static struct tfx_report tfx_stats_out = { .fd = -1 };
/* TOFUTEX_RUN_STATS=all: print also for a process that locked nothing. */
static bool tfx_stats_all;

bool tfx_stats_mutexattr_ours(const pthread_mutexattr_t *attr)
{
	int v;

	if (!attr)
		return true;
	if (pthread_mutexattr_getpshared(attr, &v) || v != PTHREAD_PROCESS_PRIVATE)
		return false;
	if (pthread_mutexattr_getrobust(attr, &v) || v != PTHREAD_MUTEX_STALLED)
		return false;
	return !pthread_mutexattr_getprotocol(attr, &v) && v == PTHREAD_PRIO_NONE;
}

bool tfx_stats_condattr_ours(const pthread_condattr_t *attr)
{
	int v;

	return !attr || (!pthread_condattr_getpshared(attr, &v) &&
			 v == PTHREAD_PROCESS_PRIVATE);
}

/* The backend's part of the line: the kernel's counts, or futex(2)'s. */
static int tfx_stats_backend(char *buf, size_t len)
{
	struct tofutex_stats st;
	int err;

	if (tofutex_backend() == TOFUTEX_BACKEND_FUTEX)
		return snprintf(buf, len, "backend=futex futex_waits=%llu",
				(unsigned long long)__atomic_load_n(
					&tofutex__futex_waits, __ATOMIC_RELAXED));
	err = tofutex_stats(TOFUTEX_STATS_PROCESS, &st);
	if (err)
		return snprintf(buf, len, "backend=module (no statistics: %s)",
				strerror(err));
	return snprintf(buf, len,
			"backend=module lock=%llu unlock=%llu spins=%llu sleeps=%llu steals=%llu handoffs=%llu owner_deaths=%llu timeouts=%llu wait=%llu wake=%llu",
			(unsigned long long)st.lock_calls,
			(unsigned long long)st.unlock_calls,
			(unsigned long long)st.spins,
			(unsigned long long)st.sleeps,
			(unsigned long long)st.steals,
			(unsigned long long)st.handoffs,
			(unsigned long long)st.owner_deaths,
			(unsigned long long)st.timeouts,
			(unsigned long long)st.wait_calls,
			(unsigned long long)st.wake_calls);
}

void tfx_stats_print(void)
{
	char backend[384], line[640];
	int n;

	if (!tfx_stats.on)
		return;
	if (!tfx_stats_all &&
	    !__atomic_load_n(&tofutex__tid_used, __ATOMIC_RELAXED))
		return;
	if (tfx_stats_backend(backend, sizeof(backend)) < 0)
		return;
	n = snprintf(line, sizeof(line),
		     "tofutex-run: %s[%d] %s mutex_inits=%llu cond_inits=%llu cond_waits=%llu\n",
		     program_invocation_short_name, (int)getpid(), backend,
		     (unsigned long long)tfx_stats.mutex_inits,
		     (unsigned long long)tfx_stats.cond_inits,
		     (unsigned long long)tfx_stats.cond_waits);
	if (n > 0)
		tfx_report_write(&tfx_stats_out, line,
			     (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
}

__attribute__((constructor)) static void tfx_stats_start(void)
{
	const char *env = secure_getenv("TOFUTEX_RUN_STATS");
	int err;

	if (!env || !*env || !strcmp(env, "0"))
		return;
	tfx_stats_all = !strcmp(env, "all");
	err = tfx_report_open(&tfx_stats_out, "TOFUTEX_RUN_STATS", env,
			      true);
	if (err) {
		fprintf(stderr, "tofutex-run: TOFUTEX_RUN_STATS=%s: %s; no statistics\n",
			env, strerror(err));
		return;
	}
	tfx_stats.on = true;
	__atomic_store_n(&tofutex__futex_counting, true, __ATOMIC_RELAXED);
}
