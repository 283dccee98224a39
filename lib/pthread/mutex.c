// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex-pthread - pthread_mutex_*: our mutexes (preload.h) on
 * libtofutex's TO lock, with the error semantics glibc gives each type.
 *
 * libtofutex's mutex is an error-checking robust mutex; each type maps
 * its answers:
 *
 *   relock by the owner   NORMAL, DEFAULT, ADAPTIVE_NP: deadlock (a timed
 *                         lock ends with ETIMEDOUT); ERRORCHECK: EDEADLK;
 *                         RECURSIVE: one level more (EAGAIN past UINT_MAX)
 *   trylock by the owner  EBUSY, except RECURSIVE: one level more
 *   unlock by a thread    NORMAL, DEFAULT, ADAPTIVE_NP: released anyway,
 *   that is not the owner as glibc does (0, also on a free mutex);
 *                         ERRORCHECK, RECURSIVE: EPERM
 *   bad deadline          EINVAL for a clock other than CLOCK_REALTIME/
 *                         CLOCK_MONOTONIC; a tv_nsec outside [0, 1e9) is
 *                         EINVAL only when the locker must wait, as in
 *                         glibc (a free mutex is taken, a RECURSIVE one
 *                         relocked, an ERRORCHECK relock is EDEADLK); a
 *                         negative tv_sec is ETIMEDOUT then, before tv_nsec
 *                         is looked at
 *   destroy while held    EBUSY
 *   consistent            EINVAL (none of these is robust)
 *
 * A blocked locker sleeps until the unlock wakes it: libtofutex is asked
 * for a non-robust lock (tofutex__mutex_clocklock(), robust false), whose
 * waiters do not wake periodically to look for the owner's death.
 *
 * An owner that exits holding the lock: these mutexes are not robust, so
 * the lock stays held by nobody ("stalled", POSIX's PTHREAD_MUTEX_STALLED
 * and glibc's behaviour): lock blocks, timed lock times out, trylock
 * fails with EBUSY. libtofutex notices the dead owner when a locker
 * begins to wait (a waiter already asleep sleeps on, as glibc's) and
 * hands that locker the word with EOWNERDEAD; we unlock it without making it
 * consistent, which leaves it not recoverable (@state, preload.h) and
 * every later locker told so; that is the stall. A NORMAL unlock clears
 * it, as glibc's releases a dead owner's lock. In the child of fork(), a
 * mutex another thread of the parent held is stalled the same way
 * (libtofutex reports that owner's TID as a foreign one, EPERM).
 *
 * A stalled locker polls every TOFUTEX_POLL_NS (internal.h): the stall is
 * a program bug, nothing is woken at its end, and the poll lets a NORMAL
 * unlock from another thread end it as glibc's would.
 */
#include <limits.h>

#include "preload.h"

/* glibc's elision flags in __kind (its pthreadP.h): not part of the type. */
#define TFX_KIND_ELISION	(256 | 512)

/*
 * A mutex not aligned for its 32-bit word (a member of a packed
 * structure) is glibc's, as a rwlock is (rwlock.c): neither futex(2) nor
 * the module takes a misaligned word, and glibc answers its trylock and
 * uncontended locks.
 */
int tfx_mutex_type(const pthread_mutex_t *m)
{
	int kind;

	if ((uintptr_t)m & (sizeof(uint32_t) - 1))
		return -1;
	kind = __atomic_load_n(&m->__data.__kind, __ATOMIC_RELAXED);
	kind &= ~TFX_KIND_ELISION;
	if (kind < PTHREAD_MUTEX_NORMAL || kind > PTHREAD_MUTEX_ADAPTIVE_NP ||
	    tfx_glibc_serves_all())
		return -1;
	return kind;
}

/*
 * ERRORCHECK and RECURSIVE also keep their owner's TID in __owner, as
 * glibc does (glibc's own code checks it, lib/glibc.c): while one of them
 * is held, glibc's code waiting for it may have written its 2 over the
 * owner's TID in the word, and the owner must still know itself.
 */
static inline bool tfx_owner_kept(int type)
{
	return type == PTHREAD_MUTEX_ERRORCHECK ||
	       type == PTHREAD_MUTEX_RECURSIVE;
}

/*
 * Does the caller @tid hold @m of @type? __owner first where it is kept:
 * on the nested lock and unlock of a RECURSIVE mutex it answers without
 * the word.
 */
static inline bool tfx_mine(pthread_mutex_t *m, int type, uint32_t tid)
{
	uint32_t word;

	if (tfx_owner_kept(type) &&
	    (uint32_t)__atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED) == tid)
		return true;
	word = __atomic_load_n(&tfx_mutex(m)->word, __ATOMIC_RELAXED);
	return tofutex__is_self(word & TOFUTEX_TID_MASK, tid);
}

bool tfx_mutex_mine(pthread_mutex_t *m)
{
	return tfx_mine(m, tfx_mutex_type(m), (uint32_t)tofutex__tid());
}

/*
 * The caller @tid took @m of @type: its first level of a RECURSIVE one.
 * __count was 0, the word's release ordered it (tfx_unlock_owner()).
 */
static inline int tfx_locked(pthread_mutex_t *m, int type, uint32_t tid)
{
	if (type == PTHREAD_MUTEX_RECURSIVE)
		m->__data.__count = 1;
	if (tfx_owner_kept(type))
		__atomic_store_n(&m->__data.__owner, (int)tid,
				 __ATOMIC_RELAXED);
	return 0;
}

static bool tfx_mutex_stalled(pthread_mutex_t *m)
{
	return __atomic_load_n(&tfx_mutex(m)->state, __ATOMIC_ACQUIRE) != 0;
}

/*
 * One more level of a RECURSIVE mutex the caller holds. The levels are in
 * __count, as glibc keeps them (preload.h): glibc's own code that locks
 * and unlocks it once more in between (a DEEPBIND plugin's constructor,
 * another namespace's C library) then counts on ours and does not
 * release it. At most UINT_MAX levels, as glibc's.
 */
static int tfx_mutex_recurse(pthread_mutex_t *m)
{
	if (m->__data.__count == UINT_MAX)
		return EAGAIN;
	m->__data.__count++;
	return 0;
}

/* tfx_stall(): the stall is over, lock again. Not an errno value. */
#define TFX_AGAIN	(-1)
/*
 * tfx_lock(): the owner of a RECURSIVE mutex locked it once more, 0 to
 * the caller; not an acquisition, which glibc's probes leave out.
 */
#define TFX_RELOCKED	(-3)

/* Why a locker waits for nothing (see the comment at the top). */
enum tfx_stall {
	TFX_STALL_SELF,		/* a deadlock on our own lock */
	TFX_STALL_DEAD,		/* the owner died: not recoverable */
	TFX_STALL_FOREIGN,	/* held by a thread of the parent, after fork */
};

static bool tfx_stall_over(pthread_mutex_t *m, enum tfx_stall why,
			   uint32_t word)
{
	switch (why) {
	case TFX_STALL_SELF:
		return !tfx_mutex_mine(m);
	case TFX_STALL_DEAD:
		return !tfx_mutex_stalled(m);
	case TFX_STALL_FOREIGN:
		break;
	}
	return __atomic_load_n(&tfx_mutex(m)->word, __ATOMIC_RELAXED) != word;
}

/*
 * Wait until the stall is over (TFX_AGAIN) or @abstime on
 * @clockid passes (ETIMEDOUT; NULL: never).
 */
static int tfx_stall(pthread_mutex_t *m, enum tfx_stall why,
		     clockid_t clockid, const struct timespec *abstime)
{
	uint32_t word = __atomic_load_n(&tfx_mutex(m)->word, __ATOMIC_RELAXED);
	int err;

	/* The wait glibc's lock would make here rejects a bad timespec. */
	if (abstime && abstime->tv_sec >= 0 &&
	    (abstime->tv_nsec < 0 ||
	     abstime->tv_nsec >= (long)TOFUTEX_NSEC_PER_SEC))
		return EINVAL;
	for (;;) {
		if (tfx_stall_over(m, why, word))
			return TFX_AGAIN;
		err = tfx_stall_step(clockid, abstime);
		if (err)
			return err;
	}
}

/*
 * What libtofutex's answer @err means for a lock of a mutex of @type:
 * 0 or an error to return, or TFX_AGAIN after a stall.
 */
static int tfx_lock_result(pthread_mutex_t *m, int type, int err,
			   clockid_t clockid, const struct timespec *abstime)
{
	switch (err) {
	case EDEADLK:
		if (type == PTHREAD_MUTEX_ERRORCHECK)
			return EDEADLK;
		if (type == PTHREAD_MUTEX_RECURSIVE)
			return tfx_mutex_recurse(m) ? EAGAIN : TFX_RELOCKED;
		return tfx_stall(m, TFX_STALL_SELF, clockid, abstime);
	case EOWNERDEAD:
		tofutex_mutex_unlock(tfx_mutex(m));
		return tfx_stall(m, TFX_STALL_DEAD, clockid, abstime);
	case ENOTRECOVERABLE:
		return tfx_stall(m, TFX_STALL_DEAD, clockid, abstime);
	case EPERM:
		return tfx_stall(m, TFX_STALL_FOREIGN, clockid, abstime);
	default:
		return err;
	}
}

/*
 * A timed lock of our @m with TOFUTEX_PROFILE on: libtofutex's lock as
 * without it (which checks the clock and, only when it must wait, the
 * timespec), counted as contended when the word was held as it began
 * (a lock taken or freed in between is counted the other way).
 */
static int tfx_clocklock_prof(pthread_mutex_t *m, clockid_t clockid,
			      const struct timespec *abstime)
{
	tofutex_mutex_t *t = tfx_mutex(m);
	uint32_t word = __atomic_load_n(&t->word, __ATOMIC_RELAXED);
	uint64_t t0 = tfx_prof_begin(m, word & TOFUTEX_TID_MASK);
	int err = tofutex__mutex_clocklock(t, clockid, abstime, false);

	if (word & TOFUTEX_TID_MASK)
		tfx_prof_waited(m, TFX_PROF_MUTEX, true, t0, err);
	else if (!err)
		tfx_prof_locked(m, TFX_PROF_MUTEX, true);
	return err;
}

/*
 * Lock our mutex @m of @type; @abstime NULL: no deadline. @err: what
 * libtofutex answered so far, TFX_AGAIN to ask it.
 */
static int tfx_lock(pthread_mutex_t *m, int type, int err, clockid_t clockid,
		    const struct timespec *abstime)
{
	tofutex_mutex_t *t = tfx_mutex(m);

	for (;;) {
		if (err == TFX_AGAIN && tfx_owner_kept(type) && tfx_mutex_mine(m))
			err = EDEADLK;
		else if (err == TFX_AGAIN && tfx_prof())
			err = tfx_clocklock_prof(m, clockid, abstime);
		else if (err == TFX_AGAIN)
			err = tofutex__mutex_clocklock(t, clockid, abstime,
						       false);
		if (__builtin_expect(!err, 1))
			return tfx_locked(m, type, (uint32_t)tofutex__tid());
		err = tfx_lock_result(m, type, err, clockid, abstime);
		if (err != TFX_AGAIN)
			return err;
	}
}

int pthread_mutex_init(pthread_mutex_t *m, const pthread_mutexattr_t *attr)
{
	int err;

	/* glibc validates @attr and writes a zeroed object: see preload.h. */
	tfx_stats_mutex_init(attr);
	err = tfx_glibc()->mutex_init(m, attr);
	/* Where glibc's is: at the end, on success. */
	if (!err)
		TFX_PROBE(mutex_init, m);
	return err;
}

int pthread_mutex_destroy(pthread_mutex_t *m)
{
	int err;

	if (tfx_mutex_type(m) < 0)
		return tfx_glibc()->mutex_destroy(m);
	TFX_PROBE(mutex_destroy, m);
	err = tofutex_mutex_destroy(tfx_mutex(m));
	if (!err && tfx_mutex_stalled(m))
		err = EBUSY;
	if (err)
		return err;
	/* As glibc: a destroyed mutex is invalid until initialised again. */
	__atomic_store_n(&m->__data.__kind, -1, __ATOMIC_RELAXED);
	return 0;
}

/*
 * The contended lock of our @m, timed for TOFUTEX_PROFILE. glibc's
 * lll_lock_wait probe (its argument the lock word) fires in glibc's
 * lock each time the thread is about to sleep; here once, as the lock
 * call begins to wait (on the module the sleep is the kernel's).
 */
static int tfx_lock_contended(pthread_mutex_t *m, uint32_t tid, uint32_t word)
{
	uint64_t t0 = tfx_prof() ? tfx_prof_begin(m, true) : 0;
	int err;

	TFX_PROBE(lll_lock_wait, &m->__data.__lock);
	err = tofutex__mutex_lock_rest(tfx_mutex(m), tid, word, false);

	if (t0)
		tfx_prof_waited(m, TFX_PROF_MUTEX, true, t0, err);
	return err;
}

/*
 * A relock by the owner @tid of a type that keeps its owner in __owner:
 * one level more of a RECURSIVE mutex (no mutex_acquired: glibc bumps its
 * count and returns before the probe), EDEADLK for an ERRORCHECK one, as
 * glibc answers before it touches the word.
 */
static inline int tfx_relock(pthread_mutex_t *m, int type)
{
	if (type != PTHREAD_MUTEX_RECURSIVE)
		return EDEADLK;
	return tfx_mutex_recurse(m);
}

static inline bool tfx_owner_is(pthread_mutex_t *m, int type, uint32_t tid)
{
	return tfx_owner_kept(type) &&
	       (uint32_t)__atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED) == tid;
}

/*
 * pthread_mutex_lock() past its inline path: a mutex of glibc's (@type
 * -1), a TID not known yet (@tid 0: nothing was tried), a word that was
 * not free (@word, as the compare-and-swap saw it), or one taken (@word 0)
 * that is not recoverable or with TOFUTEX_PROFILE on (a lock of a lock
 * that has a record counts, a wait is timed). Out of line, so that the
 * uncontended path saves no registers. mutex_entry was fired inline.
 */
static __attribute__((noinline)) int tfx_lock_rest(pthread_mutex_t *m, int type,
						   uint32_t tid, uint32_t word)
{
	tofutex_mutex_t *t = tfx_mutex(m);
	bool taken = tid && !word;
	int err;

	if (type < 0)
		return tfx_glibc()->mutex_lock(m);
	if (!tid) {
		tid = (uint32_t)tofutex__tid();
		taken = tofutex__mutex_lock_fast(t, tid, &word);
	}
	if (taken) {
		err = tofutex__mutex_taken(t, 0);
		if (!err && tfx_prof())
			tfx_prof_locked(m, TFX_PROF_MUTEX, true);
	} else if (tfx_owner_kept(type) && tfx_mine(m, type, tid)) {
		return tfx_relock(m, type);
	} else {
		err = tfx_lock_contended(m, tid, word);
	}
	if (err)
		err = tfx_lock(m, type, err, CLOCK_REALTIME, NULL);
	else
		tfx_locked(m, type, tid);
	if (!err)
		TFX_PROBE(mutex_acquired, m);
	return err == TFX_RELOCKED ? 0 : err;
}

/*
 * The uncontended lock is inline (mutex.h): no call beyond this one, the
 * one compare-and-swap (and, with TOFUTEX_PROFILE off, one branch not
 * taken). The timed locks go through libtofutex's functions, which check
 * the timespec only when they must wait.
 */
int pthread_mutex_lock(pthread_mutex_t *m)
{
	tofutex_mutex_t *t = tfx_mutex(m);
	int type = tfx_mutex_type(m);
	uint32_t tid = (uint32_t)tofutex__tid_known(), word = 0;

	if (__builtin_expect(type >= 0, 1)) {
		TFX_PROBE(mutex_entry, m);
		/* The nested lock of a RECURSIVE one, by __owner as glibc. */
		if (type == PTHREAD_MUTEX_RECURSIVE && tid &&
		    tfx_owner_is(m, type, tid))
			return tfx_mutex_recurse(m);
		if (tofutex__mutex_lock_fast(t, tid, &word)) {
			if (__builtin_expect(tofutex__mutex_usable(t) && !tfx_prof(), 1)) {
				tfx_locked(m, type, tid);
				TFX_PROBE(mutex_acquired, m);
				return 0;
			}
		} else if (word == tid && tid && tfx_owner_kept(type)) {
			/* Ours with no waiter: the nested lock of a RECURSIVE one. */
			return tfx_relock(m, type);
		}
	}
	return tfx_lock_rest(m, type, tid, word);
}

int pthread_mutex_clocklock(pthread_mutex_t *m, clockid_t clockid,
			    const struct timespec *abstime)
{
	int type = tfx_mutex_type(m);
	int err;

	if (type < 0)
		return tfx_glibc()->mutex_clocklock(m, clockid, abstime);
	/* As glibc: the clock first, then the probe, even for a relock. */
	if (!tofutex__clock_ok(clockid))
		return EINVAL;
	TFX_PROBE(mutex_clocklock_entry, m, clockid, abstime);
	err = tfx_lock(m, type, TFX_AGAIN, clockid, abstime);
	if (!err)
		TFX_PROBE(mutex_timedlock_acquired, m);
	return err == TFX_RELOCKED ? 0 : err;
}

int pthread_mutex_timedlock(pthread_mutex_t *m, const struct timespec *abstime)
{
	int type = tfx_mutex_type(m);
	int err;

	if (type < 0)
		return tfx_glibc()->mutex_timedlock(m, abstime);
	TFX_PROBE(mutex_timedlock_entry, m, abstime);
	err = tfx_lock(m, type, TFX_AGAIN, CLOCK_REALTIME, abstime);
	if (!err)
		TFX_PROBE(mutex_timedlock_acquired, m);
	return err == TFX_RELOCKED ? 0 : err;
}

/*
 * pthread_mutex_trylock() past its inline path, as tfx_lock_rest():
 * libtofutex's trylock, whose answers are mapped as the header says.
 */
static __attribute__((noinline)) int tfx_trylock_rest(pthread_mutex_t *m, int type,
						      uint32_t tid, uint32_t word)
{
	tofutex_mutex_t *t = tfx_mutex(m);
	int err;

	if (type < 0)
		return tfx_glibc()->mutex_trylock(m);
	if (tid && !word)
		err = tofutex__mutex_taken(t, 0);
	else
		err = tofutex_mutex_trylock(t);
	tid = (uint32_t)tofutex__tid();
	switch (err) {
	case 0:
		if (tfx_prof())
			tfx_prof_locked(m, TFX_PROF_MUTEX, true);
		return tfx_locked(m, type, tid);
	case EBUSY:
		if (type == PTHREAD_MUTEX_RECURSIVE && tfx_mine(m, type, tid))
			return tfx_mutex_recurse(m);
		return EBUSY;
	case EOWNERDEAD:
		tofutex_mutex_unlock(t);
		return EBUSY;
	case ENOTRECOVERABLE:
	case EPERM:
		return EBUSY;
	default:
		return err;
	}
}

/* A free word is taken inline, as by pthread_mutex_lock(). */
int pthread_mutex_trylock(pthread_mutex_t *m)
{
	tofutex_mutex_t *t = tfx_mutex(m);
	int type = tfx_mutex_type(m);
	uint32_t tid = (uint32_t)tofutex__tid_known(), word = 0;

	if (__builtin_expect(type >= 0, 1) && tofutex__mutex_lock_fast(t, tid, &word) &&
	    __builtin_expect(tofutex__mutex_usable(t) && !tfx_prof(), 1))
		return tfx_locked(m, type, tid);
	return tfx_trylock_rest(m, type, tid, word);
}

/* NORMAL, DEFAULT, ADAPTIVE_NP: release whoever holds it, end a stall. */
static int tfx_unlock_any(pthread_mutex_t *m)
{
	tofutex_mutex_t *t = tfx_mutex(m);
	uint32_t word = __atomic_load_n(&t->word, __ATOMIC_RELAXED);

	if (tfx_mutex_stalled(m))
		__atomic_store_n(&t->state, 0, __ATOMIC_RELEASE);
	if (!(word & TOFUTEX_TID_MASK))
		return 0;
	return tofutex__mutex_release(t, word, false);
}

/*
 * An unlock of a NORMAL, DEFAULT or ADAPTIVE_NP word that holds glibc's
 * 1 or 2 (glibc's own code locked it, lib/glibc.c): clear what glibc's
 * lock wrote besides the word, as its unlock would, before the release:
 * __owner must be 0 for glibc's next lock, which asserts so.
 */
static void tfx_mutex_unglibc(pthread_mutex_t *m)
{
	__atomic_store_n(&m->__data.__owner, 0, __ATOMIC_RELAXED);
}

/*
 * The unlock by its owner of a mutex of a type that keeps its owner: true
 * when that dropped one level of a RECURSIVE mutex and is all; else
 * __owner (and a RECURSIVE one's __count) is cleared for the release.
 */
static inline bool tfx_unlock_owner(pthread_mutex_t *m, int type)
{
	if (type == PTHREAD_MUTEX_RECURSIVE) {
		if (m->__data.__count > 1) {
			m->__data.__count--;
			return true;
		}
		/* 0 for the next owner, whose lock reads it as @state. */
		m->__data.__count = 0;
	}
	/* 0 before the release: glibc's lock asserts it. */
	__atomic_store_n(&m->__data.__owner, 0, __ATOMIC_RELAXED);
	return false;
}

/*
 * pthread_mutex_unlock() past its inline path: a mutex of glibc's (@type
 * -1), a TID not known yet (@tid 0), an __owner that is not the caller's
 * TID (@tried false), or a release that failed on @word (@tried): the
 * ownership by the word, the release that wakes, a NORMAL unlock by
 * another thread. Out of line, as tfx_lock_rest().
 */
static __attribute__((noinline)) int tfx_unlock_rest(pthread_mutex_t *m, int type, uint32_t tid,
						     uint32_t word, bool tried)
{
	tofutex_mutex_t *t = tfx_mutex(m);
	int err;

	if (type < 0)
		return tfx_glibc()->mutex_unlock(m);
	if (!tid) {
		tid = (uint32_t)tofutex__tid();
		tried = false;
	}
	if (!tried) {
		if (tfx_owner_kept(type) && !tfx_mine(m, type, tid))
			return EPERM;
		if (tfx_owner_kept(type) && tfx_unlock_owner(m, type))
			return 0;
		if (tfx_prof())
			tfx_prof_unlock(m, TFX_PROF_MUTEX);
		if (tofutex__mutex_unlock_fast(t, tid, &word)) {
			TFX_PROBE(mutex_release, m);
			return 0;
		}
	}
	if (tofutex__glibc_owner(word & TOFUTEX_TID_MASK))
		tfx_mutex_unglibc(m);
	err = tofutex__mutex_unlock_rest(t, tid, word);
	if (err == EPERM && (type == PTHREAD_MUTEX_NORMAL ||
			     type == PTHREAD_MUTEX_ADAPTIVE_NP))
		err = tfx_unlock_any(m);
	if (!err)
		TFX_PROBE(mutex_release, m);
	return err;
}

/* The uncontended unlock is inline, as the lock in pthread_mutex_lock(). */
int pthread_mutex_unlock(pthread_mutex_t *m)
{
	tofutex_mutex_t *t = tfx_mutex(m);
	int type = tfx_mutex_type(m);
	uint32_t tid = (uint32_t)tofutex__tid_known(), word;

	if (__builtin_expect(type < 0 || !tid, 0) || tfx_prof())
		return tfx_unlock_rest(m, type, tid, 0, false);
	if (tfx_owner_kept(type)) {
		if (!tfx_owner_is(m, type, tid))
			return tfx_unlock_rest(m, type, tid, 0, false);
		if (tfx_unlock_owner(m, type))
			return 0;
	}
	if (__builtin_expect(tofutex__mutex_unlock_fast(t, tid, &word), 1)) {
		TFX_PROBE(mutex_release, m);
		return 0;
	}
	return tfx_unlock_rest(m, type, tid, word, true);
}

/* glibc's compat names of the same functions (preload.h). */
TFX_COMPAT(mutex_init);
TFX_COMPAT(mutex_destroy);
TFX_COMPAT(mutex_lock);
TFX_COMPAT(mutex_trylock);
TFX_COMPAT(mutex_unlock);

int pthread_mutex_consistent(pthread_mutex_t *m)
{
	if (tfx_mutex_type(m) < 0)
		return tfx_glibc()->mutex_consistent(m);
	return EINVAL;
}

TFX_SELF(mutex_init);
TFX_SELF(mutex_destroy);
TFX_SELF(mutex_lock);
TFX_SELF(mutex_trylock);
TFX_SELF(mutex_timedlock);
TFX_SELF(mutex_clocklock);
TFX_SELF(mutex_unlock);
TFX_SELF(mutex_consistent);

/*
 * glibc's mutex code on ours would keep neither our RECURSIVE depth nor
 * our waiters' wake-ups (WAITERS is the sign bit its unlock does not wake
 * for): a program that takes these functions from a handle of glibc, or a
 * plugin's table that glibc filled (dlsym.c, deepbind.c), gets ours.
 */
void *tfx_mutex_fn_ours(const void *fn)
{
	const struct tfx_real *g = tfx_glibc();
	const struct tfx_fn_pair map[] = {
		TFX_OURS(g, mutex_init), TFX_OURS(g, mutex_destroy),
		TFX_OURS(g, mutex_lock), TFX_OURS(g, mutex_trylock),
		TFX_OURS(g, mutex_timedlock), TFX_OURS(g, mutex_clocklock),
		TFX_OURS(g, mutex_unlock), TFX_OURS(g, mutex_consistent),
	};

	return tfx_fn_pair_find(map, sizeof(map) / sizeof(map[0]), fn);
}
