// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex-pthread - pthread_rwlock_*: our reader/writer locks
 * (preload.h) on libtofutex's TO reader/writer lock, with the error
 * semantics glibc gives each kind.
 *
 * Every kind glibc has is ours when process-private:
 * PTHREAD_RWLOCK_PREFER_READER_NP (the default, also every
 * PTHREAD_RWLOCK_INITIALIZER rwlock), PTHREAD_RWLOCK_PREFER_WRITER_NP
 * (which glibc treats as reader-preferring) and
 * PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP. All three get the TO
 * lock's policy: readers join a read-held lock until a writer has waited
 * the hand-off time, then queue behind it. glibc's answers:
 *
 *   lock by the writer     EDEADLK (read or write; the try functions EBUSY)
 *   read lock by a reader  granted, every kind, while no writer starves;
 *                          while one does, granted for the reader-
 *                          preferring kinds (below), and for
 *                          NONRECURSIVE it waits, as glibc's deadlocks
 *   write lock by a reader deadlock (a timed lock ends with ETIMEDOUT)
 *   reader count full      EAGAIN (2^28 - 1 readers)
 *   bad deadline           EINVAL, checked first, as glibc does
 *   unlock of a free lock  EPERM (glibc returns 0 and corrupts the lock)
 *   destroy while held     0, as glibc's destroy, which checks nothing
 *
 * Recursive read locks. The reader-preferring kinds promise that a thread
 * holding a read lock gets another one (glibc's readers always join a
 * read phase). A TO reader that meets RW_HANDOFF queues behind the
 * starving writer, and that writer waits for the reader's first lock:
 * deadlock. So a thread that holds read locks of ours (tfx_rw_reads)
 * joins a read-held word of a reader-preferring kind even with
 * RW_HANDOFF, by the ABI's user-space read lock minus that bit's test
 * (uapi/tofutex.h allows it). The count is per thread, not per lock,
 * since a thread may hold read locks of any number of rwlocks and
 * nothing here allocates: a thread that holds a read lock of another
 * rwlock joins too, which costs a starving writer a little more wait
 * and never a deadlock. A read lock released by another thread than the
 * one that took it (glibc allows it) leaves the taker's count high (that
 * thread keeps joining, as above) and the releaser's is not taken below
 * 0.
 */
#include "preload.h"

/* The thread's read locks on our rwlocks (see the comment at the top). */
static _Thread_local unsigned long tfx_rw_reads
	__attribute__((tls_model("initial-exec")));

int tfx_rwlock_kind(const pthread_rwlock_t *rw)
{
	unsigned int flags = __atomic_load_n(&rw->__data.__flags,
					     __ATOMIC_RELAXED);

	if (__atomic_load_n(&rw->__data.__shared, __ATOMIC_RELAXED) ||
	    flags > PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP)
		return -1;
	return (int)flags;
}

/* Does a reader that holds a read lock join while a writer starves? */
static bool tfx_rw_rejoins(int kind)
{
	return tfx_rw_reads &&
	       kind != PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP;
}

/*
 * One more read lock on a read-held word, RW_HANDOFF or not: 0, EAGAIN
 * when the count is full, EBUSY when the word is not read-held (then
 * the caller holds no read lock on it, and libtofutex decides).
 */
static int tfx_rw_rejoin(tofutex_rwlock_t *t)
{
	uint32_t w = __atomic_load_n(&t->word, __ATOMIC_RELAXED);

	do {
		if ((w & (TOFUTEX_RW_SHARED | TOFUTEX_RW_RESERVED)) !=
		    TOFUTEX_RW_SHARED)
			return EBUSY;
		if ((w & TOFUTEX_RW_COUNT_MASK) == TOFUTEX_RW_COUNT_MASK)
			return EAGAIN;
	} while (!__atomic_compare_exchange_n(&t->word, &w, w + 1, false,
					      __ATOMIC_ACQUIRE,
					      __ATOMIC_RELAXED));
	return 0;
}

/*
 * Read-lock our @rw of @kind; @timed: by @abstime on @clockid, which is
 * checked first (EINVAL) as libtofutex and glibc check it.
 */
static int tfx_rdlock(pthread_rwlock_t *rw, int kind, bool timed,
		      clockid_t clockid, const struct timespec *abstime)
{
	tofutex_rwlock_t *t = tfx_rwlock(rw);
	struct tofutex__deadline dl;
	int err = EBUSY;

	if (tfx_rw_rejoins(kind)) {
		if (timed && (!abstime ||
			      tofutex__deadline_init(&dl, clockid, abstime)))
			return EINVAL;
		err = tfx_rw_rejoin(t);
	}
	if (err == EBUSY)
		err = timed ? tofutex_rwlock_clockrdlock(t, clockid, abstime) :
			      tofutex_rwlock_rdlock(t);
	if (!err)
		tfx_rw_reads++;
	return err;
}

int pthread_rwlock_init(pthread_rwlock_t *rw, const pthread_rwlockattr_t *attr)
{
	/*
	 * glibc validates @attr and writes a zeroed object with the kind
	 * and pshared: a free word, see preload.h.
	 */
	return tfx_glibc()->rwlock_init(rw, attr);
}

int pthread_rwlock_destroy(pthread_rwlock_t *rw)
{
	if (tfx_rwlock_kind(rw) < 0)
		return tfx_glibc()->rwlock_destroy(rw);
	/*
	 * glibc's destroy returns 0 whatever the lock's state (glibc's own
	 * tst-rwlock6 destroys a write-locked one and expects 0); ours
	 * answers the same instead of tofutex_rwlock_destroy()'s EBUSY.
	 */
	(void)tofutex_rwlock_destroy(tfx_rwlock(rw));
	return 0;
}

int pthread_rwlock_rdlock(pthread_rwlock_t *rw)
{
	int kind = tfx_rwlock_kind(rw);

	if (kind < 0)
		return tfx_glibc()->rwlock_rdlock(rw);
	return tfx_rdlock(rw, kind, false, CLOCK_REALTIME, NULL);
}

int pthread_rwlock_timedrdlock(pthread_rwlock_t *rw,
			       const struct timespec *abstime)
{
	int kind = tfx_rwlock_kind(rw);

	if (kind < 0)
		return tfx_glibc()->rwlock_timedrdlock(rw, abstime);
	return tfx_rdlock(rw, kind, true, CLOCK_REALTIME, abstime);
}

int pthread_rwlock_clockrdlock(pthread_rwlock_t *rw, clockid_t clockid,
			       const struct timespec *abstime)
{
	int kind = tfx_rwlock_kind(rw);

	if (kind < 0)
		return tfx_glibc()->rwlock_clockrdlock(rw, clockid, abstime);
	return tfx_rdlock(rw, kind, true, clockid, abstime);
}

int pthread_rwlock_tryrdlock(pthread_rwlock_t *rw)
{
	int kind = tfx_rwlock_kind(rw);
	int err = EBUSY;

	if (kind < 0)
		return tfx_glibc()->rwlock_tryrdlock(rw);
	if (tfx_rw_rejoins(kind))
		err = tfx_rw_rejoin(tfx_rwlock(rw));
	if (err == EBUSY)
		err = tofutex_rwlock_tryrdlock(tfx_rwlock(rw));
	if (!err)
		tfx_rw_reads++;
	return err;
}

int pthread_rwlock_wrlock(pthread_rwlock_t *rw)
{
	if (tfx_rwlock_kind(rw) < 0)
		return tfx_glibc()->rwlock_wrlock(rw);
	return tofutex_rwlock_wrlock(tfx_rwlock(rw));
}

int pthread_rwlock_timedwrlock(pthread_rwlock_t *rw,
			       const struct timespec *abstime)
{
	if (tfx_rwlock_kind(rw) < 0)
		return tfx_glibc()->rwlock_timedwrlock(rw, abstime);
	return tofutex_rwlock_timedwrlock(tfx_rwlock(rw), abstime);
}

int pthread_rwlock_clockwrlock(pthread_rwlock_t *rw, clockid_t clockid,
			       const struct timespec *abstime)
{
	if (tfx_rwlock_kind(rw) < 0)
		return tfx_glibc()->rwlock_clockwrlock(rw, clockid, abstime);
	return tofutex_rwlock_clockwrlock(tfx_rwlock(rw), clockid, abstime);
}

int pthread_rwlock_trywrlock(pthread_rwlock_t *rw)
{
	if (tfx_rwlock_kind(rw) < 0)
		return tfx_glibc()->rwlock_trywrlock(rw);
	return tofutex_rwlock_trywrlock(tfx_rwlock(rw));
}

int pthread_rwlock_unlock(pthread_rwlock_t *rw)
{
	tofutex_rwlock_t *t = tfx_rwlock(rw);
	bool read;
	int err;

	if (tfx_rwlock_kind(rw) < 0)
		return tfx_glibc()->rwlock_unlock(rw);
	/* Read-held now stays read-held until this unlock: a read unlock. */
	read = __atomic_load_n(&t->word, __ATOMIC_RELAXED) & TOFUTEX_RW_SHARED;
	err = tofutex_rwlock_unlock(t);
	if (!err && read && tfx_rw_reads)
		tfx_rw_reads--;
	return err;
}
