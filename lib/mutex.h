/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libtofutex - the uncontended lock and unlock of a tofutex_mutex_t, for
 * mutex.c and for the callers that must not pay a function call for them
 * (the pthread preload, lib/pthread/mutex.c); not installed.
 *
 * These are the whole protocol of the uncontended case (mutex.c's header
 * comment): one compare-and-swap that takes a word that is exactly 0 with
 * the caller's TID, and one that releases a word that is exactly the
 * caller's TID. Anything else (a held word, WAITERS or OWNER_DIED set, a
 * word left by fork(), a TID of 0 when the library cannot work) makes
 * them fail without touching the word; the caller then goes on with the
 * rest of mutex.c's path, tofutex__mutex_lock_rest() or
 * tofutex__mutex_unlock_rest(), given the word the failed compare-and-swap
 * saw. A caller that inlines them so behaves exactly as
 * tofutex_mutex_lock() or tofutex_mutex_unlock() would (once it knows the
 * mutex is not NULL and aligned), with no second atomic operation on a
 * contended word.
 */
#ifndef TOFUTEX_MUTEX_H
#define TOFUTEX_MUTEX_H

#include "internal.h"

/* @state: the mutex is permanently unusable (ENOTRECOVERABLE). */
#define TOFUTEX_MUTEX_NOTRECOVERABLE	1u

/*
 * Take @m if its word is exactly 0, as @tid (tofutex__tid()).
 * Returns true when taken; the caller then owes tofutex__mutex_taken().
 * On failure *@seen is the word as the compare-and-swap found it (0 when
 * @tid is 0: nothing was tried).
 */
static inline bool tofutex__mutex_lock_fast(tofutex_mutex_t *m, uint32_t tid,
					    uint32_t *seen)
{
	*seen = 0;
	return __builtin_expect(tid != 0, 1) &&
	       __atomic_compare_exchange_n(&m->word, seen, tid, false,
					   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

/*
 * The lock just taken may be kept: the mutex is not marked unrecoverable.
 * The acquire that took the word orders this load after the release that
 * followed the state's store.
 */
static inline bool tofutex__mutex_usable(const tofutex_mutex_t *m)
{
	return __builtin_expect(!(__atomic_load_n(&m->state, __ATOMIC_RELAXED) &
				  TOFUTEX_MUTEX_NOTRECOVERABLE), 1);
}

/*
 * The lock was taken (@err 0 or EOWNERDEAD): unless the mutex is not
 * recoverable (tofutex__mutex_usable()), then let go of it again.
 */
static inline int tofutex__mutex_taken(tofutex_mutex_t *m, int err)
{
	if (err && err != EOWNERDEAD)
		return err;
	if (!tofutex__mutex_usable(m)) {
		tofutex__mutex_release(m, __atomic_load_n(&m->word,
							  __ATOMIC_RELAXED),
				      true);
		return ENOTRECOVERABLE;
	}
	return err;
}

/*
 * Release @m if its word is exactly @tid (tofutex__tid()): held by
 * us with no waiter and no OWNER_DIED. Returns true when released; the
 * succeeding compare-and-swap is itself the proof of ownership. On
 * failure *@seen is the word as the compare-and-swap found it (@tid when
 * @tid is 0: nothing was tried).
 */
static inline bool tofutex__mutex_unlock_fast(tofutex_mutex_t *m,
					      uint32_t tid, uint32_t *seen)
{
	*seen = tid;
	return __builtin_expect(tid != 0, 1) &&
	       __atomic_compare_exchange_n(&m->word, seen, 0, false,
					   __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

/*
 * mutex.c: the rest of tofutex_mutex_lock() once tofutex__mutex_lock_fast()
 * failed, @word what it saw: relock, spin, contended path. @robust: as
 * tofutex__mutex_clocklock() (internal.h).
 */
TOFUTEX_HIDDEN int tofutex__mutex_lock_rest(tofutex_mutex_t *m, uint32_t tid,
					    uint32_t word, bool robust);
/*
 * mutex.c: the rest of tofutex_mutex_unlock() once
 * tofutex__mutex_unlock_fast() failed, @word what it saw: EPERM for a
 * non-owner, else the release that wakes a waiter.
 */
TOFUTEX_HIDDEN int tofutex__mutex_unlock_rest(tofutex_mutex_t *m,
					      uint32_t tid, uint32_t word);

#endif /* TOFUTEX_MUTEX_H */
