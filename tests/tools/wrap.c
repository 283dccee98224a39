// SPDX-License-Identifier: GPL-2.0
/*
 * libtfx-wrap.so - a lock interposer as mutrace and lock tracers are
 * made, for tests/tools/run.sh: it counts pthread_mutex_lock() and
 * pthread_cond_wait() calls and passes them on to the next definition,
 * the mutex one found with dlsym(RTLD_NEXT), the condition variable one
 * with dlvsym(RTLD_NEXT, ..., glibc's version of <pthread.h>'s), as such
 * tools do. At exit it prints "wrap: N locks, M waits" on stderr.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#if defined(__x86_64__)
#define COND_VERSION "GLIBC_2.3.2"
#elif defined(__aarch64__)
#define COND_VERSION "GLIBC_2.17"
#endif

static unsigned long locks, waits;

int pthread_mutex_lock(pthread_mutex_t *m)
{
	static int (*next)(pthread_mutex_t *);

	if (!next)
		next = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT,
							 "pthread_mutex_lock");
	__atomic_fetch_add(&locks, 1, __ATOMIC_RELAXED);
	return next(m);
}

int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	static int (*next)(pthread_cond_t *, pthread_mutex_t *);

	if (!next)
		next = (int (*)(pthread_cond_t *, pthread_mutex_t *))
			dlvsym(RTLD_NEXT, "pthread_cond_wait", COND_VERSION);
	if (!next)
		abort();
	__atomic_fetch_add(&waits, 1, __ATOMIC_RELAXED);
	return next(c, m);
}

__attribute__((destructor)) static void wrap_report(void)
{
	fprintf(stderr, "wrap: %lu locks, %lu waits\n", locks, waits);
}
