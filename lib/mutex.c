// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex - tofutex_mutex_*: a pthread-style mutex on one TO lock word.
 *
 * The word (uapi/tofutex.h, tofutex(4)) is 0 when free, else the owner's
 * TID plus the WAITERS and OWNER_DIED bits. Uncontended lock and unlock are
 * one compare-and-swap each and never enter the kernel (nor open the
 * device, nor choose a backend); the kernel is called only
 *
 * - to lock a word some other thread still holds after a short spin in
 *   user space: the backend's ->lock() (backend.h; on the module
 *   TOFUTEX_IOC_LOCK, where the kernel spins on a running owner, steals,
 *   sleeps, or takes over from a dead owner; on futex(2) a sleep on the
 *   word), and
 * - to unlock a word with WAITERS set: ->unlock() (on the module
 *   TOFUTEX_IOC_UNLOCK with the word still holding our TID, which
 *   releases it, or hands it straight to a starving waiter, and wakes that
 *   waiter; on futex(2) a release and FUTEX_WAKE of one sleeper).
 *
 * The backend's table is read only on those paths, never by the
 * uncontended ones (mutex.h).
 *
 * Memory order: taking the word is an acquire, releasing it a release, so
 * the critical sections of successive owners are ordered as with any
 * mutex. On the kernel paths the ioctl's own atomics provide the same.
 *
 * Only the owner changes the TID bits of a word it holds; the kernel may
 * add WAITERS to it at any time, which is why the owner changes its word
 * only with atomic read-modify-write operations.
 *
 * Errors follow an error-checking robust pthread mutex: EDEADLK for a
 * relock by the owner, EPERM for an unlock by a non-owner, EOWNERDEAD when
 * the lock was taken over from an owner that exited (by a lock that
 * waits, which asks whether the owner lives: backend_futex.c's
 * tofutex__take_from_dead(), or the module; by trylock only from a word
 * left free with OWNER_DIED, tofutex_mutex_trylock()), and
 * ENOTRECOVERABLE for every lock once an owner that got EOWNERDEAD
 * unlocked without tofutex_mutex_consistent().
 * That last state is kept outside the word (@state), so that the word
 * still works as a lock for the kernel and its waiters: each locker takes
 * the word, sees @state, releases the word and fails. A word holding the
 * TID of a live thread of another process is never taken: EPERM.
 */
#include <stdbool.h>
#include <stdlib.h>

#include "backend.h"
#include "mutex.h"

/* A word the kernel can use: not NULL and naturally aligned. */
static inline bool tofutex_mutex_bad(const tofutex_mutex_t *m)
{
	return !m || ((uintptr_t)m & (sizeof(m->word) - 1));
}

int tofutex_mutex_init(tofutex_mutex_t *m)
{
	if (tofutex_mutex_bad(m))
		return EINVAL;
	__atomic_store_n(&m->word, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&m->state, 0, __ATOMIC_RELAXED);
	return 0;
}

int tofutex_mutex_destroy(tofutex_mutex_t *m)
{
	if (tofutex_mutex_bad(m))
		return EINVAL;
	/* Held, or a waiter may still be in the kernel: like pthread, EBUSY. */
	if (__atomic_load_n(&m->word, __ATOMIC_RELAXED))
		return EBUSY;
	return 0;
}

/* Look at the clock once per this many polls: a read costs a few polls. */
#define TOFUTEX_USER_SPIN_CLOCK_EVERY	16u
/*
 * Most pauses between two polls of an unchanged word: about 1 us on
 * current x86 (bench_lock prints what one pause costs), a few polls per
 * default budget once the word stands still.
 */
#define TOFUTEX_USER_SPIN_GAP_MAX	64u

static inline void tofutex_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

static inline uint64_t tofutex_now_ns(void)
{
	return tofutex__clock_ns(CLOCK_MONOTONIC);
}

/*
 * Take a word with no owner, keeping the bits left in it as
 * tofutex_mutex_trylock() explains. @word is the value last seen; on
 * failure it is updated. Returns 0 or EOWNERDEAD when taken, EBUSY if not.
 */
static inline int tofutex_mutex_take_free(tofutex_mutex_t *m, uint32_t tid,
					  uint32_t *word)
{
	if (*word & TOFUTEX_TID_MASK)
		return EBUSY;
	if (!__atomic_compare_exchange_n(&m->word, word, *word | tid, false,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return EBUSY;
	return (*word & TOFUTEX_OWNER_DIED) ? EOWNERDEAD : 0;
}

/*
 * Poll a held word for up to the user-space spin budget (spin.c), taking
 * it when its owner lets go. Returns as tofutex_mutex_take_free(), EBUSY
 * when the budget ran out. Read-only polling: the owner's cache line is
 * not stolen until the word is free. How the spin ended, and whether the
 * owner it began on held the word all along, sets the next budgets.
 *
 * A poll still costs the owner: it pulls the line into this CPU's cache,
 * and the owner's next write to the word (its unlock, its next lock) must
 * take it back. An owner that keeps the word busy, relocking at once, is
 * slowed down by every poll. So each poll that finds the same value as
 * the last doubles the pauses before the next one, up to
 * TOFUTEX_USER_SPIN_GAP_MAX; a changed value starts again at one.
 *
 * The budget is time, read from the kernel's clock (clock.c); the pauses
 * are also counted, and more of them than the budget has nanoseconds end
 * the spin too, whatever a clock says (no pause takes less than a
 * nanosecond).
 */
static __attribute__((noinline)) int
tofutex_mutex_spin(tofutex_mutex_t *m, uint32_t tid, uint32_t word)
{
	const uint32_t budget = tofutex__spin_budget();
	const uint32_t owner = word & TOFUTEX_TID_MASK;
	unsigned int polls = 0, gap = 1, i;
	uint64_t end = 0, now, pauses = 0;
	uint32_t prev;
	int err;

	if (!budget)
		return tofutex_mutex_take_free(m, tid, &word);
	for (;;) {
		err = tofutex_mutex_take_free(m, tid, &word);
		if (err != EBUSY) {
			tofutex__spin_ended(true, false);
			return err;
		}
		if (++polls % TOFUTEX_USER_SPIN_CLOCK_EVERY == 0 ||
		    gap >= TOFUTEX_USER_SPIN_CLOCK_EVERY) {
			now = tofutex_now_ns();
			if (!end) {
				end = now + budget;
			} else if (now >= end || pauses > budget) {
				tofutex__spin_ended(false, (word &
					TOFUTEX_TID_MASK) == owner);
				return EBUSY;
			}
		}
		for (i = 0; i < gap; i++)
			tofutex_cpu_relax();
		pauses += gap;
		prev = word;
		word = __atomic_load_n(&m->word, __ATOMIC_RELAXED);
		if (word != prev)
			gap = 1;
		else if (gap < TOFUTEX_USER_SPIN_GAP_MAX)
			gap *= 2;
	}
}

/*
 * Release the word @m held by us (@word: its value last seen), waking a
 * waiter where WAITERS says there may be one: the backend's ->unlock().
 */
int tofutex__mutex_release(tofutex_mutex_t *m, uint32_t word, bool own)
{
	return tofutex__ops()->unlock(&m->word, word, own);
}

/*
 * The contended path, after the user-space spin. With the auto spin
 * budget, what the trip cost is the budget's input (spin.c).
 */
static int tofutex_mutex_lock_slow(tofutex_mutex_t *m, uint32_t tid,
				   const struct tofutex__deadline *dl,
				   bool robust)
{
	uint64_t start = 0;
	int err;

	if (tofutex__spin_auto())
		start = tofutex_now_ns();
	err = tofutex__ops()->lock(&m->word, tid, dl, robust);
	if (start && (!err || err == EOWNERDEAD))
		tofutex__spin_learn(tofutex_now_ns() - start);
	return err;
}

/* A lock without a deadline. */
static const struct tofutex__deadline tofutex_forever = {
	.clock = CLOCK_MONOTONIC,
};

/*
 * The rest of a lock once tofutex__mutex_lock_fast() failed (@word: the
 * word it saw): a relock, the user-space spin, then the contended path.
 */
static int tofutex_mutex_lock_rest(tofutex_mutex_t *m, uint32_t tid,
				   uint32_t word,
				   const struct tofutex__deadline *dl, bool robust)
{
	int err;

	if (__builtin_expect(!tid, 0))
		return ENOMEM;
	if (tofutex__is_self(word & TOFUTEX_TID_MASK, tid))
		return EDEADLK;
	err = tofutex_mutex_spin(m, tid, word);
	if (err == EBUSY)
		err = tofutex_mutex_lock_slow(m, tid, dl, robust);
	return tofutex__mutex_taken(m, err);
}

int tofutex__mutex_lock_rest(tofutex_mutex_t *m, uint32_t tid, uint32_t word,
			     bool robust)
{
	return tofutex_mutex_lock_rest(m, tid, word, &tofutex_forever, robust);
}

static inline int tofutex_mutex_lock_common(tofutex_mutex_t *m,
					    const struct tofutex__deadline *dl,
					    bool robust)
{
	uint32_t tid, word;

	if (tofutex_mutex_bad(m))
		return EINVAL;
	tid = (uint32_t)tofutex__tid();
	if (tofutex__mutex_lock_fast(m, tid, &word))
		return tofutex__mutex_taken(m, 0);
	return tofutex_mutex_lock_rest(m, tid, word, dl, robust);
}

int tofutex_mutex_lock(tofutex_mutex_t *m)
{
	return tofutex_mutex_lock_common(m, &tofutex_forever, true);
}

/*
 * A timed lock checks its clock at once but its timespec only when it
 * must wait, as glibc's pthread_mutex_clocklock() does: a free mutex is
 * taken, a relock is EDEADLK, and a word left free with OWNER_DIED is
 * taken over, whatever @abstime holds. Then a bad tv_nsec is EINVAL. A
 * negative tv_sec is a deadline that has passed (ETIMEDOUT once the wait
 * fails); glibc's non-robust mutexes return that before they look at
 * tv_nsec, its robust ones after, so @robust picks the order too.
 */
int tofutex__mutex_clocklock(tofutex_mutex_t *m, clockid_t clockid,
			     const struct timespec *abstime, bool robust)
{
	struct tofutex__deadline dl;
	uint32_t tid, word;
	int err;

	if (!tofutex__clock_ok(clockid))
		return EINVAL;
	if (tofutex_mutex_bad(m))
		return EINVAL;
	tid = (uint32_t)tofutex__tid();
	if (tofutex__mutex_lock_fast(m, tid, &word))
		return tofutex__mutex_taken(m, 0);
	if (__builtin_expect(!tid, 0))
		return ENOMEM;
	if (tofutex__is_self(word & TOFUTEX_TID_MASK, tid))
		return EDEADLK;
	if (!(word & TOFUTEX_TID_MASK)) {
		err = tofutex_mutex_take_free(m, tid, &word);
		if (err != EBUSY)
			return tofutex__mutex_taken(m, err);
	}
	if (!robust && abstime && abstime->tv_sec < 0)
		return ETIMEDOUT;
	err = tofutex__deadline_init(&dl, clockid, abstime);
	if (err)
		return err;
	return tofutex_mutex_lock_rest(m, tid, word, &dl, robust);
}

int tofutex_mutex_clocklock(tofutex_mutex_t *m, clockid_t clockid,
			    const struct timespec *abstime)
{
	if (!abstime)
		return EINVAL;
	return tofutex__mutex_clocklock(m, clockid, abstime, true);
}

int tofutex_mutex_timedlock(tofutex_mutex_t *m, const struct timespec *abstime)
{
	return tofutex_mutex_clocklock(m, CLOCK_REALTIME, abstime);
}

/*
 * For cond.c, after a condition wait: lock. Where a broadcast's requeue
 * leaves the moved waiters asleep on the lock word without WAITERS set
 * (the backend's @relock_moved), every thread coming back from a wait
 * that a broadcast may have ended (@moved) takes the word through the
 * contended path, which sets it: its unlock then wakes the next. After a
 * signal the ordinary lock does, which leaves WAITERS alone. EDEADLK
 * cannot happen: the caller released the mutex before it waited.
 */
int tofutex__mutex_relock(tofutex_mutex_t *m, bool moved)
{
	const struct tofutex__backend_ops *ops;
	uint32_t tid;

	if (moved) {
		ops = tofutex__ops();
		if (ops->relock_moved) {
			tid = (uint32_t)tofutex__tid();
			return tofutex__mutex_taken(m, ops->lock(&m->word, tid,
							&tofutex_forever,
							true));
		}
	}
	return tofutex_mutex_lock_common(m, &tofutex_forever, true);
}

/*
 * A held word is EBUSY, whoever holds it (the caller too, as pthread), and
 * is found so without a system call, as by glibc's trylock: glibc's robust
 * one answers EBUSY for a word with an owner's TID and takes only a word
 * the kernel marked at its owner's exit (TID 0, OWNER_DIED). Whether the
 * owner still lives is asked only by a lock that goes on to wait
 * (backend_futex.c, the module), never by a trylock.
 */
int tofutex_mutex_trylock(tofutex_mutex_t *m)
{
	uint32_t tid, word;
	int err;

	if (tofutex_mutex_bad(m))
		return EINVAL;
	tid = (uint32_t)tofutex__tid();
	if (__builtin_expect(!tid, 0))
		return ENOMEM;

	/*
	 * A word with no owner but WAITERS (or OWNER_DIED) left set is free
	 * too: the raw-ABI unlock that clears the TID bits before calling
	 * TOFUTEX_IOC_UNLOCK leaves one behind. Take it keeping those bits,
	 * as the kernel does when it steals: the waiters stay recorded, so
	 * our unlock will wake them.
	 */
	word = __atomic_load_n(&m->word, __ATOMIC_RELAXED);
	do {
		err = tofutex_mutex_take_free(m, tid, &word);
	} while (err == EBUSY && !(word & TOFUTEX_TID_MASK));
	if (err == EBUSY)
		return EBUSY;
	return tofutex__mutex_taken(m, err);
}

int tofutex_mutex_unlock(tofutex_mutex_t *m)
{
	uint32_t tid, word;

	if (tofutex_mutex_bad(m))
		return EINVAL;
	tid = (uint32_t)tofutex__tid();

	/*
	 * The fast path is the release itself: it succeeds only on a word
	 * that is exactly our TID, so it also proves ownership. On failure
	 * @word tells why.
	 */
	if (tofutex__mutex_unlock_fast(m, tid, &word))
		return 0;
	return tofutex__mutex_unlock_rest(m, tid, word);
}

int tofutex__mutex_unlock_rest(tofutex_mutex_t *m, uint32_t tid,
			       uint32_t word)
{
	uint32_t owner;

	/*
	 * glibc's own code locked it over us, or holds it (glibc.c): who
	 * owns it cannot be told, release it as glibc does.
	 */
	owner = word & TOFUTEX_TID_MASK;
	if (tid && !tofutex__is_self(owner, tid) &&
	    tofutex__glibc_owner(owner))
		return tofutex__glibc_release(&m->word);
	/* A free word, another thread's, or no TID (then we own nothing). */
	if (!tid || !tofutex__is_self(owner, tid))
		return EPERM;

	/*
	 * An owner that took the lock with EOWNERDEAD and did not call
	 * tofutex_mutex_consistent(): as pthread, the mutex is unusable from
	 * now on. The state is stored before the release that follows.
	 */
	if (word & TOFUTEX_OWNER_DIED) {
		__atomic_fetch_or(&m->state, TOFUTEX_MUTEX_NOTRECOVERABLE,
				  __ATOMIC_RELAXED);
		word = __atomic_and_fetch(&m->word, ~TOFUTEX_OWNER_DIED,
					  __ATOMIC_RELEASE);
	}
	return tofutex__mutex_release(m, word, owner == tid);
}

int tofutex_mutex_consistent(tofutex_mutex_t *m)
{
	uint32_t tid, word;

	if (tofutex_mutex_bad(m))
		return EINVAL;
	tid = (uint32_t)tofutex__tid();
	word = __atomic_load_n(&m->word, __ATOMIC_RELAXED);
	if (!tid || !tofutex__is_self(word & TOFUTEX_TID_MASK, tid) ||
	    !(word & TOFUTEX_OWNER_DIED))
		return EINVAL;
	/* An atomic AND: the kernel may be setting WAITERS meanwhile. */
	__atomic_fetch_and(&m->word, ~TOFUTEX_OWNER_DIED, __ATOMIC_RELAXED);
	return 0;
}

uint32_t tofutex_mutex_last_status(void)
{
	return tofutex__self.last_status;
}
