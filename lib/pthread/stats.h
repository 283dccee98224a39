/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libtofutex-pthread - the counters behind TOFUTEX_RUN_STATS (stats.c).
 * Each hook is one line in mutex.c or cond.c and costs one load of a
 * read-mostly flag unless TOFUTEX_RUN_STATS is set; the counters are
 * global atomics, touched only on paths that already make a system call
 * or initialise an object.
 */
#ifndef TOFUTEX_PTHREAD_STATS_H
#define TOFUTEX_PTHREAD_STATS_H

#include <pthread.h>

#include "../internal.h"

struct tfx_stats {
	bool on;		/* TOFUTEX_RUN_STATS was set */
	uint64_t mutex_inits;	/* pthread_mutex_init() of mutexes we run */
	uint64_t cond_inits;	/* pthread_cond_init() of ours */
	uint64_t cond_waits;	/* waits on our condition variables */
};

extern struct tfx_stats tfx_stats TOFUTEX_HIDDEN;

/* stats.c: does @attr make a mutex, a condition variable that we run? */
TOFUTEX_HIDDEN bool tfx_stats_mutexattr_ours(const pthread_mutexattr_t *attr);
TOFUTEX_HIDDEN bool tfx_stats_condattr_ours(const pthread_condattr_t *attr);
/* stats.c: the process's line, if TOFUTEX_RUN_STATS is on (exit.c). */
TOFUTEX_HIDDEN void tfx_stats_print(void);

static inline void tfx_stats_add(uint64_t *counter)
{
	__atomic_fetch_add(counter, 1, __ATOMIC_RELAXED);
}

/* pthread_mutex_init(), before glibc's: count it if it will be ours. */
static inline void tfx_stats_mutex_init(const pthread_mutexattr_t *attr)
{
	if (__builtin_expect(tfx_stats.on, 0) && tfx_stats_mutexattr_ours(attr))
		tfx_stats_add(&tfx_stats.mutex_inits);
}

static inline void tfx_stats_cond_init(const pthread_condattr_t *attr)
{
	if (__builtin_expect(tfx_stats.on, 0) && tfx_stats_condattr_ours(attr))
		tfx_stats_add(&tfx_stats.cond_inits);
}

static inline void tfx_stats_cond_wait(void)
{
	if (__builtin_expect(tfx_stats.on, 0))
		tfx_stats_add(&tfx_stats.cond_waits);
}

#endif /* TOFUTEX_PTHREAD_STATS_H */
