// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex-pthread - the reports a process writes as it ends
 * (TOFUTEX_RUN_STATS, stats.c; TOFUTEX_PROFILE, profile.c), whichever
 * way it ends: exit() and a return from main() (atexit()), quick_exit()
 * (at_quick_exit()), and _exit() and _Exit(), which run no handlers and
 * are what stress-ng's workers and many fork() children end with, so
 * they are interposed here. glibc's own calls of _exit() (after exit()'s
 * handlers, in posix_spawn()'s child) are internal and never come here.
 *
 * Once per process, and only in the process whose counts the tables
 * hold: tfx_exit_owner is its pid, set at load and in a fork() child
 * (pthread_atfork()), and the report is claimed by a compare-and-swap of
 * it from getpid() to 0. A vfork() child (the parent's memory, the
 * parent's tables) and any child made without the atfork handlers
 * (clone(), _Fork()) find another pid there and report nothing, writing
 * nothing into the parent's memory; of two threads that end the process
 * at once, one reports.
 *
 * _exit() may be called from a signal handler that interrupted malloc(),
 * stdio or the dynamic linker: on that path the reports call only
 * functions that take no lock and allocate nothing (stats.c and
 * profile.c say how), and profile.c names frames without dladdr().
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../sys.h"
#include "profile.h"
#include "stats.h"

static pid_t tfx_exit_owner;
static void (*tfx_exit_next)(int);

/*
 * Is a report asked for? Not: the process makes no system call here (a
 * program may forbid getpid() with a seccomp filter).
 */
static bool tfx_exit_wanted(void)
{
	return tfx_stats.on || __atomic_load_n(&tfx_prof_on, __ATOMIC_RELAXED);
}

/* Write the reports if this process has not yet, from any thread. */
static void tfx_exit_reports(bool names)
{
	int state;
	pid_t me;

	if (!tfx_exit_wanted())
		return;
	me = (pid_t)tofutex__sys(SYS_getpid, 0, 0, 0, 0, 0, 0);
	if (!__atomic_compare_exchange_n(&tfx_exit_owner, &me, 0, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;
	/*
	 * The reports' open() and write() are cancellation points: a thread
	 * with a cancellation pending that calls _exit() or exit() ends the
	 * process, as without the library, instead of acting on it here.
	 */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &state);
	tfx_stats_print();
	tfx_prof_print(names);
	pthread_setcancelstate(state, NULL);
}

static void tfx_exit_handler(void)
{
	tfx_exit_reports(true);
}

void _exit(int status)
{
	tfx_exit_reports(false);
	if (tfx_exit_next)
		tfx_exit_next(status);
	/* Before the constructor (another library's): the call glibc makes. */
	for (;;)
		tofutex__sys(SYS_exit_group, status, 0, 0, 0, 0, 0);
}

void _Exit(int status) __attribute__((alias("_exit")));

static void tfx_exit_own(void)
{
	__atomic_store_n(&tfx_exit_owner,
			 (pid_t)tofutex__sys(SYS_getpid, 0, 0, 0, 0, 0, 0),
			 __ATOMIC_RELEASE);
}

/* By a fork child, which reports, if any report is asked for. */
static void tfx_exit_child(void)
{
	if (tfx_exit_wanted())
		tfx_exit_own();
}

__attribute__((constructor)) static void tfx_exit_start(void)
{
	tfx_exit_next = (void (*)(int))dlsym(RTLD_NEXT, "_exit");
	/* The reports' constructors may run after this one: unconditional. */
	tfx_exit_own();
	pthread_atfork(NULL, NULL, tfx_exit_child);
	atexit(tfx_exit_handler);
	at_quick_exit(tfx_exit_handler);
}
