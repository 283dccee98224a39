// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex - tofutex_rwlock_*: a pthread-style reader/writer lock on one
 * TO reader/writer word.
 *
 * The word (uapi/tofutex.h, tofutex(4)) holds a writer's TID, or
 * TOFUTEX_RW_SHARED and a reader count, plus WAITERS and
 * TOFUTEX_RW_HANDOFF. Uncontended operations are one compare-and-swap
 * each and never enter the kernel: a write lock takes 0 with the TID, a
 * read lock adds one reader to a free word or to a reader-owned word
 * without RW_HANDOFF, and unlocks undo that, unless the last owner out
 * finds WAITERS. Memory order as in mutex.c: taking is an acquire,
 * releasing a release.
 *
 * The contended paths are the backend's ->rdlock(), ->wrlock() and
 * ->rwunlock() (backend.h): on the module, when it offers
 * TOFUTEX_FEAT_RWLOCK, TOFUTEX_IOC_RDLOCK, WRLOCK and RWUNLOCK (the
 * kernel queues readers and writers, spins, hands the word to a starving
 * writer, and lets queued readers in together); otherwise the same word
 * on futex(2), where a writer that waited about as long as the module's
 * handoff_ns blocks new readers too (backend_futex.c).
 *
 * Errors follow pthread_rwlock_*: EDEADLK for a lock by the thread that
 * holds the write lock, EBUSY from the try functions, EAGAIN when the
 * reader count is full, ETIMEDOUT, EPERM for an unlock of a lock the
 * caller does not hold (as far as a reader count can tell) and, as for
 * tofutex mutexes, for a word held by a thread of another process. A
 * writer that exited holding the lock is taken over by the next locker
 * (the module's owner check, or backend_futex.c's); there is
 * no EOWNERDEAD, since no pthread rwlock function returns it.
 */
#include <limits.h>
#include <stdbool.h>

#include "backend.h"
#include "rwlock.h"

/* A lock without a deadline. */
static const struct tofutex__deadline tofutex_rw_forever = {
	.clock = CLOCK_MONOTONIC,
};

static inline bool tofutex_rw_bad(const tofutex_rwlock_t *rw)
{
	return !rw || ((uintptr_t)rw & (sizeof(rw->word) - 1));
}

int tofutex_rwlock_init(tofutex_rwlock_t *rw)
{
	if (tofutex_rw_bad(rw))
		return EINVAL;
	__atomic_store_n(&rw->word, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&rw->reserved, 0, __ATOMIC_RELAXED);
	return 0;
}

int tofutex_rwlock_destroy(tofutex_rwlock_t *rw)
{
	if (tofutex_rw_bad(rw))
		return EINVAL;
	/* Held, or a waiter may still be in the kernel: like pthread, EBUSY. */
	if (__atomic_load_n(&rw->word, __ATOMIC_RELAXED))
		return EBUSY;
	return 0;
}

/*
 * The contended part of a lock; @w what the fast path saw; @prefer: the
 * lock prefers the caller's side (internal.h), @robust: a dead writer is
 * taken over (tofutex__rwlock_lock() has neither).
 */
static int tofutex_rw_lock_rest(tofutex_rwlock_t *rw, bool write,
				bool prefer, bool robust, uint32_t tid,
				uint32_t w, const struct tofutex__deadline *dl)
{
	int err;

	if (__builtin_expect(!tid, 0))
		return EAGAIN;
	if (tofutex__is_self(tofutex_rw_writer(w), tid))
		return EDEADLK;
	if (w & TOFUTEX_RW_RESERVED)
		return EINVAL;
	if (!write) {
		err = tofutex_rw_try_read_all(rw, w, prefer);
		if (err != EBUSY)
			return err;
	}
	if (write)
		return tofutex__ops()->wrlock(rw, tid, dl, robust, prefer);
	return tofutex__ops()->rdlock(rw, dl, prefer, robust);
}

static inline int tofutex_rw_lock(tofutex_rwlock_t *rw, bool write,
				  bool prefer, bool robust,
				  const struct tofutex__deadline *dl)
{
	uint32_t tid, w = 0;
	bool raced;

	if (tofutex_rw_bad(rw))
		return EINVAL;
	/*
	 * Also for a read lock: it learns the thread's TID, which the
	 * preload's inline paths (pthread/rwlock.c) want known.
	 */
	tid = (uint32_t)tofutex__tid();
	if (write) {
		if (__builtin_expect(tid != 0, 1) &&
		    __atomic_compare_exchange_n(&rw->word, &w, tid, false,
						__ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return 0;
	} else {
		w = __atomic_load_n(&rw->word, __ATOMIC_RELAXED);
		if (tofutex_rw_try_read(rw, &w, prefer, 0, &raced) == 0)
			return 0;
	}
	return tofutex_rw_lock_rest(rw, write, prefer, robust, tid, w, dl);
}

/* A deadline from a pthread-style @clockid and @abstime. */
static int tofutex_rw_clocklock(tofutex_rwlock_t *rw, bool write,
				clockid_t clockid,
				const struct timespec *abstime)
{
	struct tofutex__deadline dl;
	int err;

	/* Checked even when the lock is free, as tofutex_mutex_clocklock(). */
	if (!abstime)
		return EINVAL;
	err = tofutex__deadline_init(&dl, clockid, abstime);
	if (err)
		return err;
	return tofutex_rw_lock(rw, write, false, true, &dl);
}

int tofutex_rwlock_rdlock(tofutex_rwlock_t *rw)
{
	return tofutex_rw_lock(rw, false, false, true, &tofutex_rw_forever);
}

int tofutex_rwlock_wrlock(tofutex_rwlock_t *rw)
{
	return tofutex_rw_lock(rw, true, false, true, &tofutex_rw_forever);
}

int tofutex_rwlock_clockrdlock(tofutex_rwlock_t *rw, clockid_t clockid,
			       const struct timespec *abstime)
{
	return tofutex_rw_clocklock(rw, false, clockid, abstime);
}

int tofutex_rwlock_clockwrlock(tofutex_rwlock_t *rw, clockid_t clockid,
			       const struct timespec *abstime)
{
	return tofutex_rw_clocklock(rw, true, clockid, abstime);
}

int tofutex_rwlock_timedrdlock(tofutex_rwlock_t *rw,
			       const struct timespec *abstime)
{
	return tofutex_rw_clocklock(rw, false, CLOCK_REALTIME, abstime);
}

int tofutex_rwlock_timedwrlock(tofutex_rwlock_t *rw,
			       const struct timespec *abstime)
{
	return tofutex_rw_clocklock(rw, true, CLOCK_REALTIME, abstime);
}

/* tryrdlock; @join: with reader preference. */
static int tofutex_rw_tryrdlock(tofutex_rwlock_t *rw, bool join)
{
	if (tofutex_rw_bad(rw))
		return EINVAL;
	return tofutex_rw_try_read_all(rw, __atomic_load_n(&rw->word,
							   __ATOMIC_RELAXED),
				       join);
}

int tofutex_rwlock_tryrdlock(tofutex_rwlock_t *rw)
{
	return tofutex_rw_tryrdlock(rw, false);
}

int tofutex__rwlock_lock(tofutex_rwlock_t *rw, bool write, bool prefer,
			 clockid_t clockid, const struct timespec *abstime)
{
	struct tofutex__deadline dl = tofutex_rw_forever;
	int err;

	if (abstime) {
		err = tofutex__deadline_init(&dl, clockid, abstime);
		if (err)
			return err;
	}
	return tofutex_rw_lock(rw, write, prefer, false, &dl);
}

int tofutex_rwlock_trywrlock(tofutex_rwlock_t *rw)
{
	uint32_t tid, w;

	if (tofutex_rw_bad(rw))
		return EINVAL;
	tid = (uint32_t)tofutex__tid();
	if (__builtin_expect(!tid, 0))
		return EAGAIN;
	/*
	 * A free word may carry WAITERS: take it keeping WAITERS, so that
	 * the unlock wakes whoever waits, as tofutex_mutex_trylock() does.
	 * One that carries RW_HANDOFF is reserved for a writer that waits (on
	 * futex(2): its wake-up is under way, or it is in a signal handler;
	 * on the module such a word has no owner until a reader blocks):
	 * busy, as pthread_rwlock_trywrlock() is while a writer waits.
	 */
	w = __atomic_load_n(&rw->word, __ATOMIC_RELAXED);
	while (!(w & (RW_COUNT | RW_HANDOFF))) {
		if (__atomic_compare_exchange_n(&rw->word, &w,
						tid | (w & TOFUTEX_WAITERS),
						false, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return 0;
	}
	return EBUSY;
}

int tofutex_rwlock_unlock(tofutex_rwlock_t *rw)
{
	uint32_t tid, w, owner;

	if (tofutex_rw_bad(rw))
		return EINVAL;
	w = __atomic_load_n(&rw->word, __ATOMIC_RELAXED);
	if (tofutex_rw_try_unlock(rw, &w))
		return 0;
	tid = (uint32_t)tofutex__tid();
	for (;;) {
		owner = tofutex_rw_writer(w);
		if (owner) {
			if (!tid || !tofutex__is_self(owner, tid))
				return EPERM;
			if (owner != tid) {
				/*
				 * Locked before fork() by our parent's TID:
				 * released here, and whoever of ours sleeps on
				 * the word (on futex(2); a stalled waiter polls)
				 * is woken, as a release that finds WAITERS does.
				 */
				w = __atomic_exchange_n(&rw->word, 0,
							__ATOMIC_RELEASE);
				if (w & TOFUTEX_WAITERS)
					tofutex__futex_wake(&rw->word, INT_MAX);
				return 0;
			}
			if (w != tid)
				return tofutex__ops()->rwunlock(rw, w);
		} else if (!tofutex_rw_readers(w)) {
			return EPERM;
		} else if (tofutex_rw_readers(w) == 1 &&
			   w != (RW_SHARED | 1)) {
			/* WAITERS, or a writer's RW_HANDOFF: the backend's. */
			return tofutex__ops()->rwunlock(rw, w);
		}
		/* Released here, or the word changed: look again. */
		if (tofutex_rw_try_unlock(rw, &w))
			return 0;
	}
}
