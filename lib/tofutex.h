/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libtofutex - pthread-style mutexes and condition variables, wait/wake
 * and swap, on /dev/tofutex or, without the module, on futex(2). See
 * tofutex(3).
 *
 * Every function returns 0 or a positive errno value, like the pthread
 * functions; none of them sets errno.
 *
 * Clocks: the functions named after a pthread function take the clock
 * their namesake takes (tofutex_mutex_timedlock(), tofutex_cond_timedwait():
 * CLOCK_REALTIME); tofutex_wait() and tofutex_swap() take CLOCK_MONOTONIC,
 * as futex(2) waits do; every *clock* function takes CLOCK_MONOTONIC or
 * CLOCK_REALTIME explicitly. Realtime deadlines follow clock_settime().
 *
 * The header is valid C99 and later (also with -pedantic, without
 * _GNU_SOURCE or _POSIX_C_SOURCE) and C++11 and later.
 */
#ifndef TOFUTEX_H
#define TOFUTEX_H

#include <stdint.h>
#include <sys/types.h>	/* clockid_t, also under strict ISO C */
#include <time.h>

#include <tofutex/uapi.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The version of this header; tofutex_library_version() returns the
 * version of the library a program runs with, in the same encoding as
 * TOFUTEX_VERSION_NUMBER, so that a program can require one at least:
 *   tofutex_library_version() >= TOFUTEX_MAKE_VERSION(0, 1, 0)
 */
#define TOFUTEX_VERSION_MAJOR	0
#define TOFUTEX_VERSION_MINOR	1
#define TOFUTEX_VERSION_PATCH	0
#define TOFUTEX_VERSION_STRING	"0.1.0"
#define TOFUTEX_MAKE_VERSION(major, minor, patch) \
	(((unsigned long)(major) << 16) | ((unsigned long)(minor) << 8) | \
	 (unsigned long)(patch))
#define TOFUTEX_VERSION_NUMBER \
	TOFUTEX_MAKE_VERSION(TOFUTEX_VERSION_MAJOR, TOFUTEX_VERSION_MINOR, \
			     TOFUTEX_VERSION_PATCH)
unsigned long tofutex_library_version(void);

/*
 * Strict ISO C's <time.h> (-std=c99) does not declare struct timespec:
 * declared here, so that the prototypes below name the same struct as
 * the caller's <time.h> does when it declares one.
 */
struct timespec;

/*
 * A throughput-optimised robust mutex: one 32-bit lock word (see
 * tofutex(4)) and the library's own state (@state: 0, or not recoverable).
 * Process-private: locking a mutex that a thread of another process holds
 * fails with EPERM.
 */
typedef struct {
	uint32_t word;
	uint32_t state;
} tofutex_mutex_t;

#define TOFUTEX_MUTEX_INITIALIZER { 0, 0 }

int tofutex_mutex_init(tofutex_mutex_t *m);
int tofutex_mutex_destroy(tofutex_mutex_t *m);
int tofutex_mutex_lock(tofutex_mutex_t *m);
int tofutex_mutex_trylock(tofutex_mutex_t *m);
/* @abstime is an absolute CLOCK_REALTIME time, as for pthread. */
int tofutex_mutex_timedlock(tofutex_mutex_t *m, const struct timespec *abstime);
/* @clockid: CLOCK_MONOTONIC or CLOCK_REALTIME; @abstime absolute on it. */
int tofutex_mutex_clocklock(tofutex_mutex_t *m, clockid_t clockid,
			    const struct timespec *abstime);
int tofutex_mutex_unlock(tofutex_mutex_t *m);
/* After EOWNERDEAD: mark the protected state recovered, clear OWNER_DIED. */
int tofutex_mutex_consistent(tofutex_mutex_t *m);
/* Lock status of the calling thread's last contended lock (TOFUTEX_STATUS_*). */
uint32_t tofutex_mutex_last_status(void);

/*
 * A condition variable for tofutex mutexes: a sequence word that every
 * signal and broadcast advances, the number of broadcasts, the number of
 * waiters with how many of them were signalled, and the mutex the waiters
 * use (for a broadcast to move them onto it).
 */
typedef struct {
	uint32_t seq;
	uint32_t broadcasts;
	uint64_t waiters __attribute__((aligned(8)));
	tofutex_mutex_t *mutex;
} tofutex_cond_t;

#ifdef __cplusplus
#define TOFUTEX_COND_INITIALIZER { 0, 0, 0, nullptr }
#else
#define TOFUTEX_COND_INITIALIZER { 0, 0, 0, 0 }
#endif

int tofutex_cond_init(tofutex_cond_t *c);
int tofutex_cond_destroy(tofutex_cond_t *c);
int tofutex_cond_wait(tofutex_cond_t *c, tofutex_mutex_t *m);
/* @abstime is an absolute CLOCK_REALTIME time, as for pthread. */
int tofutex_cond_timedwait(tofutex_cond_t *c, tofutex_mutex_t *m,
			   const struct timespec *abstime);
int tofutex_cond_clockwait(tofutex_cond_t *c, tofutex_mutex_t *m,
			   clockid_t clockid, const struct timespec *abstime);
int tofutex_cond_signal(tofutex_cond_t *c);
int tofutex_cond_broadcast(tofutex_cond_t *c);

/*
 * A throughput-optimised reader/writer lock: one 32-bit word (see
 * tofutex(4)) and a field of the library's own, 0 when initialised.
 * Writers are preferred once one has waited a few ms (see tofutex(3)).
 * Process-private.
 */
typedef struct {
	uint32_t word;
	uint32_t reserved;
} tofutex_rwlock_t;

#define TOFUTEX_RWLOCK_INITIALIZER { 0, 0 }

int tofutex_rwlock_init(tofutex_rwlock_t *rw);
int tofutex_rwlock_destroy(tofutex_rwlock_t *rw);
int tofutex_rwlock_rdlock(tofutex_rwlock_t *rw);
int tofutex_rwlock_tryrdlock(tofutex_rwlock_t *rw);
/* @abstime is an absolute CLOCK_REALTIME time, as for pthread. */
int tofutex_rwlock_timedrdlock(tofutex_rwlock_t *rw,
			       const struct timespec *abstime);
/* @clockid: CLOCK_MONOTONIC or CLOCK_REALTIME; @abstime absolute on it. */
int tofutex_rwlock_clockrdlock(tofutex_rwlock_t *rw, clockid_t clockid,
			       const struct timespec *abstime);
int tofutex_rwlock_wrlock(tofutex_rwlock_t *rw);
int tofutex_rwlock_trywrlock(tofutex_rwlock_t *rw);
int tofutex_rwlock_timedwrlock(tofutex_rwlock_t *rw,
			       const struct timespec *abstime);
int tofutex_rwlock_clockwrlock(tofutex_rwlock_t *rw, clockid_t clockid,
			       const struct timespec *abstime);
/* Release the caller's write lock or one of its read locks. */
int tofutex_rwlock_unlock(tofutex_rwlock_t *rw);

/* Sleep while *@addr == @expected; @abstime (CLOCK_MONOTONIC) may be NULL. */
int tofutex_wait(uint32_t *addr, uint32_t expected,
		 const struct timespec *abstime);
/* tofutex_wait() with @abstime on @clockid (MONOTONIC or REALTIME). */
int tofutex_clockwait(uint32_t *addr, uint32_t expected, clockid_t clockid,
		      const struct timespec *abstime);
/* Wake up to @count waiters on @addr; *@woken (may be NULL) gets how many. */
int tofutex_wake(uint32_t *addr, unsigned int count, unsigned int *woken);
/* Wake one waiter on @wake_addr, then wait on @wait_addr as tofutex_wait(). */
int tofutex_swap(uint32_t *wait_addr, uint32_t expected, uint32_t *wake_addr,
		 const struct timespec *abstime);
/* tofutex_swap() with @abstime on @clockid (MONOTONIC or REALTIME). */
int tofutex_clockswap(uint32_t *wait_addr, uint32_t expected,
		      uint32_t *wake_addr, clockid_t clockid,
		      const struct timespec *abstime);

/* What the library runs on; chosen once per process (see tofutex(3)). */
#define TOFUTEX_BACKEND_MODULE	1	/* /dev/tofutex */
#define TOFUTEX_BACKEND_FUTEX	2	/* futex(2) */
int tofutex_backend(void);

/* ABI version and TOFUTEX_FEAT_* bits of the module; ENOTSUP on futex. */
int tofutex_version(uint32_t *abi_version, uint64_t *features);
/* Statistics, scope TOFUTEX_STATS_PROCESS or _GLOBAL; ENOTSUP on futex. */
int tofutex_stats(uint32_t scope, struct tofutex_stats *out);
/*
 * The process's descriptor for /dev/tofutex, opened on first use and again
 * in a child after fork(); a negative errno value when it cannot be opened
 * (ENOENT: the module is not loaded; EACCES: no permission). The other
 * functions do not need it: they then run on futex(2).
 */
int tofutex_fd(void);

#ifdef __cplusplus
}
#endif

#endif /* TOFUTEX_H */
