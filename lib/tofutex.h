/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libtofutex - pthread-style locks, wait/wake and swap on top of
 * /dev/tofutex. See tofutex(3).
 *
 * Every function returns 0 or a positive errno value, like the pthread
 * functions; none of them sets errno.
 */
#ifndef TOFUTEX_H
#define TOFUTEX_H

#include <stdint.h>
#include <time.h>

#include <tofutex/uapi.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A throughput-optimised mutex: one 32-bit lock word (see tofutex(4)).
 * Process-private: it must not be placed in memory shared with another
 * process.
 */
typedef struct {
	uint32_t word;
} tofutex_mutex_t;

#define TOFUTEX_MUTEX_INITIALIZER { 0 }

int tofutex_mutex_init(tofutex_mutex_t *m);
int tofutex_mutex_destroy(tofutex_mutex_t *m);
int tofutex_mutex_lock(tofutex_mutex_t *m);
int tofutex_mutex_trylock(tofutex_mutex_t *m);
/* @abstime is an absolute CLOCK_MONOTONIC time. */
int tofutex_mutex_timedlock(tofutex_mutex_t *m, const struct timespec *abstime);
int tofutex_mutex_unlock(tofutex_mutex_t *m);
/* After EOWNERDEAD: mark the protected state recovered, clear OWNER_DIED. */
int tofutex_mutex_consistent(tofutex_mutex_t *m);
/* Lock status of the calling thread's last contended lock (TOFUTEX_STATUS_*). */
uint32_t tofutex_mutex_last_status(void);

/* Sleep while *@addr == @expected; @abstime (CLOCK_MONOTONIC) may be NULL. */
int tofutex_wait(uint32_t *addr, uint32_t expected,
		 const struct timespec *abstime);
/* Wake up to @count waiters on @addr; *@woken (may be NULL) gets how many. */
int tofutex_wake(uint32_t *addr, unsigned int count, unsigned int *woken);
/* Wake one waiter on @wake_addr, then wait on @wait_addr as tofutex_wait(). */
int tofutex_swap(uint32_t *wait_addr, uint32_t expected, uint32_t *wake_addr,
		 const struct timespec *abstime);

/* ABI version and TOFUTEX_FEAT_* bits of the loaded module. */
int tofutex_version(uint32_t *abi_version, uint64_t *features);
/* Statistics, scope TOFUTEX_STATS_PROCESS or TOFUTEX_STATS_GLOBAL. */
int tofutex_stats(uint32_t scope, struct tofutex_stats *out);
/*
 * The process's descriptor for /dev/tofutex, opened on first use and again
 * in a child after fork(); a negative errno value when it cannot be opened
 * (ENOENT: the module is not loaded).
 */
int tofutex_fd(void);

#ifdef __cplusplus
}
#endif

#endif /* TOFUTEX_H */
