// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex-pthread - pthread_rwlock_*: our reader/writer locks
 * (preload.h) on libtofutex's TO reader/writer lock, with the error
 * semantics glibc gives each kind.
 *
 * Every kind glibc has is ours when process-private:
 * PTHREAD_RWLOCK_PREFER_READER_NP (the default, also every
 * PTHREAD_RWLOCK_INITIALIZER rwlock), PTHREAD_RWLOCK_PREFER_WRITER_NP
 * and PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP, each with glibc's
 * preference, since a program may depend on it:
 *
 * - glibc's readers of the first two kinds (PREFER_WRITER_NP is reader-
 *   preferring in glibc too) join a read-held lock even while writers
 *   wait. A program may rely on that for progress: one reader holds the
 *   lock and waits for another to get a read lock too (glibc's
 *   tst-rwlock16). Ours join too (libtofutex's
 *   tofutex__rwlock_lock()'s @join: RW_HANDOFF does not stop them), so a
 *   stream of readers may starve a writer, as with glibc.
 * - glibc's writer of either writer-preferring kind marks the lock as
 *   its own as soon as it waits: the next write unlock goes to it before
 *   the readers that block, and another thread's trywrlock fails. Ours
 *   reserve the lock at once (libtofutex's @prefer for a writer): the
 *   kernel queues them ahead of blocked readers, the last reader hands
 *   them the lock, and a reserved lock is no free one to trywrlock.
 * - PREFER_WRITER_NONRECURSIVE_NP also stops new readers once a writer
 *   waits; so do ours: they do not join past the reservation (tryrdlock
 *   fails with EBUSY) and queue behind it. A thread that read-locks such
 *   a rwlock again while a writer waits deadlocks, as with glibc.
 *
 * glibc's answers:
 *
 *   lock by the writer     EDEADLK (read or write; the try functions EBUSY)
 *   write lock by a reader deadlock (a timed lock ends with ETIMEDOUT)
 *   reader count full      EAGAIN (2^28 - 1 readers)
 *   bad deadline           EINVAL, checked first, as glibc does
 *   NULL deadline          no deadline: glibc 2.36's 64-bit timed locks
 *                          pass it on to a futex wait without a timeout
 *   held by a thread of    (the child of fork()) the lock blocks, a timed
 *   the parent             one ends with ETIMEDOUT, a try one with EBUSY,
 *                          as glibc's, whose child waits for a writer
 *                          that is not there; the module's EPERM for the
 *                          foreign owner is no error glibc's lock returns
 *                          (on futex(2) ours just sleeps, not robust)
 *   unlock of a free lock  EPERM (glibc returns 0 and corrupts the lock)
 *   destroy while held     0, as glibc's destroy, which checks nothing
 */
#include "preload.h"
#include "../rwlock.h"

/*
 * Our kind of @rw, or -1 for glibc's: process-shared, an unknown kind, or
 * an object not aligned for its word (a member of a packed structure),
 * which neither futex(2) nor the module takes, and which glibc's rwlock
 * serves as it does without the preload (init is always glibc's, so the
 * object has glibc's layout whoever serves it); and every one when glibc
 * serves all objects (tfx_glibc_serves_all()).
 */
int tfx_rwlock_kind(const pthread_rwlock_t *rw)
{
	unsigned int flags;

	if ((uintptr_t)&rw->__data.__readers % _Alignof(uint32_t))
		return -1;
	flags = __atomic_load_n(&rw->__data.__flags, __ATOMIC_RELAXED);
	if (__atomic_load_n(&rw->__data.__shared, __ATOMIC_RELAXED) ||
	    flags > PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP ||
	    tfx_glibc_serves_all())
		return -1;
	return (int)flags;
}

/* Does @kind let readers join while writers wait (see the top)? */
static bool tfx_rw_joins(int kind)
{
	return kind != PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP;
}

/*
 * Does a waiting writer of @kind reserve the lock at once? glibc's writer
 * of either writer-preferring kind marks the lock write-locked as soon as
 * it waits, so that the next write unlock goes to it before the readers
 * that block, and another thread's trywrlock fails; readers of
 * PREFER_WRITER_NP still join a read-held lock past it (tfx_rw_joins()).
 */
static bool tfx_rw_reserves(int kind)
{
	return kind != PTHREAD_RWLOCK_PREFER_READER_NP;
}

/*
 * Hide from the compiler that pthread.h declares @abstime nonnull, so
 * that a NULL one is still seen as NULL.
 */
static inline const struct timespec *tfx_rw_maybe_null(
	const struct timespec *abstime)
{
	__asm__("" : "+r"(abstime));
	return abstime;
}

/* tfx_rw_stall(): the word changed, lock again. Not an errno value. */
#define TFX_RW_AGAIN	(-1)

/*
 * Held by a thread of the parent (the child of fork(); the module says
 * EPERM): wait, as glibc's lock would, until the word changes
 * (TFX_RW_AGAIN) or @abstime on @clockid passes (ETIMEDOUT; NULL: never).
 * Nothing wakes such a waiter, so it polls every TOFUTEX_POLL_NS.
 */
static int tfx_rw_stall(pthread_rwlock_t *rw, clockid_t clockid,
			const struct timespec *abstime)
{
	tofutex_rwlock_t *t = tfx_rwlock(rw);
	uint32_t word = __atomic_load_n(&t->word, __ATOMIC_RELAXED);
	int err;

	for (;;) {
		if (__atomic_load_n(&t->word, __ATOMIC_RELAXED) != word)
			return TFX_RW_AGAIN;
		err = tfx_stall_step(clockid, abstime);
		if (err)
			return err;
	}
}

/*
 * TOFUTEX_PROFILE: is @t held against a lock for writing (@write) or
 * reading, as the lock begins? Then the lock counts as contended. A
 * reader that does not join past a waiting writer (@joins false) waits
 * for a reader-owned word the writer has reserved.
 */
static bool tfx_rw_held(tofutex_rwlock_t *t, bool write, bool joins)
{
	uint32_t word = __atomic_load_n(&t->word, __ATOMIC_RELAXED);

	if (write || !word)
		return word != 0;
	return !(word & TOFUTEX_RW_SHARED) ||
	       (!joins && (word & TOFUTEX_RW_HANDOFF));
}

/*
 * Lock our @rw of @kind, for writing when @write, by @abstime on
 * @clockid (NULL: no deadline, @clockid not looked at), which libtofutex
 * checks first (EINVAL) as glibc does.
 */
static int tfx_rw_lock(pthread_rwlock_t *rw, int kind, bool write,
		       clockid_t clockid, const struct timespec *abstime)
{
	tofutex_rwlock_t *t = tfx_rwlock(rw);
	bool held = tfx_prof() && tfx_rw_held(t, write, tfx_rw_joins(kind));
	uint64_t t0 = tfx_prof() ? tfx_prof_begin(rw, held) : 0;
	int err;

	if (!abstime)
		clockid = CLOCK_MONOTONIC;
	do {
		err = tofutex__rwlock_lock(t, write,
					   write ? tfx_rw_reserves(kind) :
						   tfx_rw_joins(kind),
					   clockid, abstime);
		if (err == EPERM)
			err = tfx_rw_stall(rw, clockid, abstime);
	} while (err == TFX_RW_AGAIN);
	if (held)
		tfx_prof_waited(rw, TFX_PROF_RWLOCK, write, t0, err);
	else if (t0 && !err)
		tfx_prof_locked(rw, TFX_PROF_RWLOCK, write);
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
	TFX_PROBE(rwlock_destroy, rw);
	(void)tofutex_rwlock_destroy(tfx_rwlock(rw));
	return 0;
}

/*
 * The uncontended read lock, inline as the mutexes' are (mutex.c): one
 * attempt on the word as libtofutex's lock makes it, by a thread whose TID
 * is known (its first lock takes the full path, which learns it) and with
 * the contention report off. False: take tfx_rw_lock().
 */
static inline bool tfx_rw_read_fast(tofutex_rwlock_t *t, int kind)
{
	uint32_t w = __atomic_load_n(&t->word, __ATOMIC_RELAXED);
	bool raced;

	return tofutex__tid_known() && !tfx_prof() &&
	       tofutex_rw_try_read(t, &w, tfx_rw_joins(kind), 0, &raced) == 0;
}

/* The uncontended write lock: a free word, as tfx_rw_read_fast(). */
static inline bool tfx_rw_write_fast(tofutex_rwlock_t *t)
{
	uint32_t tid = (uint32_t)tofutex__tid_known(), w = 0;

	return tid && !tfx_prof() &&
	       __atomic_compare_exchange_n(&t->word, &w, tid, false,
					   __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

int pthread_rwlock_rdlock(pthread_rwlock_t *rw)
{
	int kind = tfx_rwlock_kind(rw);
	int err = 0;

	if (kind < 0)
		return tfx_glibc()->rwlock_rdlock(rw);
	TFX_PROBE(rdlock_entry, rw);
	if (!tfx_rw_read_fast(tfx_rwlock(rw), kind))
		err = tfx_rw_lock(rw, kind, false, CLOCK_REALTIME, NULL);
	TFX_PROBE(rdlock_acquire_read, rw);
	return err;
}

int pthread_rwlock_timedrdlock(pthread_rwlock_t *rw,
			       const struct timespec *abstime)
{
	int kind = tfx_rwlock_kind(rw);

	if (kind < 0)
		return tfx_glibc()->rwlock_timedrdlock(rw, abstime);
	return tfx_rw_lock(rw, kind, false, CLOCK_REALTIME,
			   tfx_rw_maybe_null(abstime));
}

int pthread_rwlock_clockrdlock(pthread_rwlock_t *rw, clockid_t clockid,
			       const struct timespec *abstime)
{
	int kind = tfx_rwlock_kind(rw);

	if (kind < 0)
		return tfx_glibc()->rwlock_clockrdlock(rw, clockid, abstime);
	return tfx_rw_lock(rw, kind, false, clockid,
			   tfx_rw_maybe_null(abstime));
}

int pthread_rwlock_tryrdlock(pthread_rwlock_t *rw)
{
	int kind = tfx_rwlock_kind(rw);
	int err;

	if (kind < 0)
		return tfx_glibc()->rwlock_tryrdlock(rw);
	/* libtofutex's tryrdlock, inline (@join: tfx_rw_joins()). */
	err = tofutex_rw_try_read_all(tfx_rwlock(rw),
				      __atomic_load_n(&tfx_rwlock(rw)->word,
						      __ATOMIC_RELAXED),
				      tfx_rw_joins(kind));
	if (tfx_prof() && !err)
		tfx_prof_locked(rw, TFX_PROF_RWLOCK, false);
	return err;
}

int pthread_rwlock_wrlock(pthread_rwlock_t *rw)
{
	int kind = tfx_rwlock_kind(rw);
	int err = 0;

	if (kind < 0)
		return tfx_glibc()->rwlock_wrlock(rw);
	TFX_PROBE(wrlock_entry, rw);
	if (!tfx_rw_write_fast(tfx_rwlock(rw)))
		err = tfx_rw_lock(rw, kind, true, CLOCK_REALTIME, NULL);
	TFX_PROBE(wrlock_acquire_write, rw);
	return err;
}

int pthread_rwlock_timedwrlock(pthread_rwlock_t *rw,
			       const struct timespec *abstime)
{
	int kind = tfx_rwlock_kind(rw);

	if (kind < 0)
		return tfx_glibc()->rwlock_timedwrlock(rw, abstime);
	return tfx_rw_lock(rw, kind, true, CLOCK_REALTIME,
			   tfx_rw_maybe_null(abstime));
}

int pthread_rwlock_clockwrlock(pthread_rwlock_t *rw, clockid_t clockid,
			       const struct timespec *abstime)
{
	int kind = tfx_rwlock_kind(rw);

	if (kind < 0)
		return tfx_glibc()->rwlock_clockwrlock(rw, clockid, abstime);
	return tfx_rw_lock(rw, kind, true, clockid,
			   tfx_rw_maybe_null(abstime));
}

int pthread_rwlock_trywrlock(pthread_rwlock_t *rw)
{
	int err;

	if (tfx_rwlock_kind(rw) < 0)
		return tfx_glibc()->rwlock_trywrlock(rw);
	if (tfx_rw_write_fast(tfx_rwlock(rw)))
		return 0;
	err = tofutex_rwlock_trywrlock(tfx_rwlock(rw));
	if (tfx_prof() && !err)
		tfx_prof_locked(rw, TFX_PROF_RWLOCK, true);
	return err;
}

int pthread_rwlock_unlock(pthread_rwlock_t *rw)
{
	tofutex_rwlock_t *t = tfx_rwlock(rw);
	uint32_t w;

	if (tfx_rwlock_kind(rw) < 0)
		return tfx_glibc()->rwlock_unlock(rw);
	TFX_PROBE(rwlock_unlock, rw);
	if (tfx_prof())
		tfx_prof_unlock(rw, TFX_PROF_RWLOCK);
	/* The release that needs no backend inline, as the locks'. */
	w = __atomic_load_n(&t->word, __ATOMIC_RELAXED);
	if (tofutex_rw_try_unlock(t, &w))
		return 0;
	return tofutex_rwlock_unlock(t);
}

/* glibc's compat names of the same functions (preload.h). */
TFX_COMPAT(rwlock_init);
TFX_COMPAT(rwlock_destroy);
TFX_COMPAT(rwlock_rdlock);
TFX_COMPAT(rwlock_tryrdlock);
TFX_COMPAT(rwlock_wrlock);
TFX_COMPAT(rwlock_trywrlock);
TFX_COMPAT(rwlock_unlock);

TFX_SELF(rwlock_init);
TFX_SELF(rwlock_destroy);
TFX_SELF(rwlock_rdlock);
TFX_SELF(rwlock_tryrdlock);
TFX_SELF(rwlock_timedrdlock);
TFX_SELF(rwlock_clockrdlock);
TFX_SELF(rwlock_wrlock);
TFX_SELF(rwlock_trywrlock);
TFX_SELF(rwlock_timedwrlock);
TFX_SELF(rwlock_clockwrlock);
TFX_SELF(rwlock_unlock);

void *tfx_rwlock_ours(const void *fn)
{
	const struct tfx_real *g = tfx_glibc();
	const struct tfx_fn_pair map[] = {
		TFX_OURS(g, rwlock_init), TFX_OURS(g, rwlock_destroy),
		TFX_OURS(g, rwlock_rdlock), TFX_OURS(g, rwlock_tryrdlock),
		TFX_OURS(g, rwlock_timedrdlock),
		TFX_OURS(g, rwlock_clockrdlock),
		TFX_OURS(g, rwlock_wrlock), TFX_OURS(g, rwlock_trywrlock),
		TFX_OURS(g, rwlock_timedwrlock),
		TFX_OURS(g, rwlock_clockwrlock),
		TFX_OURS(g, rwlock_unlock),
	};

	return tfx_fn_pair_find(map, sizeof(map) / sizeof(map[0]), fn);
}
