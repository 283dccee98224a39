/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libtofutex - the reader/writer word as user space reads and takes it
 * (uapi/tofutex.h), for rwlock.c's fast paths and for the futex(2)
 * backend's contended paths (backend_futex.c), which take it the same
 * way; not installed.
 */
#ifndef TOFUTEX_RWLOCK_H
#define TOFUTEX_RWLOCK_H

#include "internal.h"

#define RW_SHARED	TOFUTEX_RW_SHARED
#define RW_HANDOFF	TOFUTEX_RW_HANDOFF
#define RW_COUNT	TOFUTEX_RW_COUNT_MASK

/* The writer's TID in @w, 0 when free or reader-owned. */
static inline uint32_t tofutex_rw_writer(uint32_t w)
{
	return (w & RW_SHARED) ? 0 : w & RW_COUNT;
}

/* The reader count in @w, 0 when free or writer-owned. */
static inline uint32_t tofutex_rw_readers(uint32_t w)
{
	return (w & RW_SHARED) ? w & RW_COUNT : 0;
}

/*
 * One read-lock attempt on the word last seen as *@w, as the ABI's user
 * space does it; @reserved_ok: RW_HANDOFF does not stop it from joining
 * readers that hold the word (a free word that keeps RW_HANDOFF is the
 * waiting writer's, whose wake-up is under way or who is in a signal
 * handler: no reader takes it, as none takes glibc's lock once its
 * release went to a writer); @waiters:
 * TOFUTEX_WAITERS to set with the lock (a reader that slept), or 0.
 * Returns 0 when taken, EAGAIN when the count is full, else EBUSY;
 * *@raced: EBUSY came from a failed compare-and-swap, *@w is the new
 * value, and the caller may try again.
 */
static inline int tofutex_rw_try_read(tofutex_rwlock_t *rw, uint32_t *w,
				      bool reserved_ok, uint32_t waiters,
				      bool *raced)
{
	uint32_t n = tofutex_rw_readers(*w), want;

	*raced = false;
	if (*w == 0) {
		/* Free, the common case: one compare. */
		want = RW_SHARED | 1 | waiters;
	} else {
		if (tofutex_rw_writer(*w) ||
		    ((*w & RW_HANDOFF) && (!reserved_ok || !n)))
			return EBUSY;
		if (n == RW_COUNT)
			return EAGAIN;
		/* A join past RW_HANDOFF keeps it: the writer still waits. */
		want = RW_SHARED | (n + 1) |
		       (*w & (TOFUTEX_WAITERS | RW_HANDOFF)) | waiters;
	}
	if (__atomic_compare_exchange_n(&rw->word, w, want, false,
					__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return 0;
	*raced = true;
	return EBUSY;
}

/*
 * Read-lock attempts until the word excludes readers (tryrdlock), each
 * on the value the last one found; @reserved_ok as tofutex_rw_try_read().
 */
static inline int tofutex_rw_try_read_all(tofutex_rwlock_t *rw, uint32_t w,
					  bool reserved_ok)
{
	bool raced;
	int err;

	do
		err = tofutex_rw_try_read(rw, &w, reserved_ok, 0, &raced);
	while (raced);
	return err;
}

/*
 * The unlock of the word last seen as *@w that needs no backend: a reader
 * that is not the last one out, the last one when nobody waits and no
 * writer reserved the word (the backend keeps the reservation), or the
 * writer alone in the word under the caller's known TID
 * (tofutex__tid_known()). Returns true when released; false when the
 * caller must take the full path, *@w the value found.
 */
static inline bool tofutex_rw_try_unlock(tofutex_rwlock_t *rw, uint32_t *w)
{
	uint32_t want = 0, tid;

	if (*w == (RW_SHARED | 1)) {
		/* The last reader, as the ABI has it: nothing else set. */
	} else if (!(*w & RW_SHARED)) {
		tid = (uint32_t)tofutex__tid_known();
		if (!tid || *w != tid)
			return false;
	} else if (tofutex_rw_readers(*w) > 1) {
		want = *w - 1;
	} else {
		return false;
	}
	return __atomic_compare_exchange_n(&rw->word, w, want, false,
					   __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

#endif /* TOFUTEX_RWLOCK_H */
