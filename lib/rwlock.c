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
 * Backends (backend.c): on the module, when it offers
 * TOFUTEX_FEAT_RWLOCK, the contended paths are TOFUTEX_IOC_RDLOCK,
 * WRLOCK and RWUNLOCK: the kernel queues readers and writers, spins,
 * hands the word to a starving writer, and lets queued readers in
 * together. Otherwise the same word works on futex(2): a waiter sets
 * WAITERS and sleeps on the word; a release that finds WAITERS wakes every
 * sleeper, and they compete again. A writer that waited
 * TOFUTEX_RW_FUTEX_HANDOFF_NS on readers sets RW_HANDOFF: new readers then
 * wait, and the last reader leaves the word free but reserved,
 * RW_HANDOFF | WAITERS, which only a writer takes. A reader that has slept
 * a whole TOFUTEX_POLL_NS on a reserved word takes it anyway: the writer
 * that reserved it may have given up (deadline), and nobody else would
 * clear it.
 *
 * Errors follow pthread_rwlock_*: EDEADLK for a lock by the thread that
 * holds the write lock, EBUSY from the try functions, EAGAIN when the
 * reader count is full, ETIMEDOUT, EPERM for an unlock of a lock the
 * caller does not hold (as far as a reader count can tell) and, as for
 * tofutex mutexes, for a word held by a thread of another process. A
 * writer that exited holding the lock is taken over by the next locker
 * (the module's owner check, or futex.c's tofutex__owner_of()); there is
 * no EOWNERDEAD, since no pthread rwlock function returns it.
 */
#include <limits.h>
#include <stdbool.h>

#include "internal.h"

#define RW_SHARED	TOFUTEX_RW_SHARED
#define RW_HANDOFF	TOFUTEX_RW_HANDOFF
#define RW_COUNT	TOFUTEX_RW_COUNT_MASK

/*
 * On futex(2), the wait after which a writer blocks new readers: the
 * module's handoff_ns default, so that a writer starves no longer on one
 * backend than on the other.
 */
#define TOFUTEX_RW_FUTEX_HANDOFF_NS	4000000ull

/* A lock without a deadline. */
static const struct tofutex__deadline tofutex_rw_forever = {
	.clock = CLOCK_MONOTONIC,
};

static inline bool tofutex_rw_bad(const tofutex_rwlock_t *rw)
{
	return !rw || ((uintptr_t)rw & (sizeof(rw->word) - 1));
}

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

/* Contended paths on the module? Else on futex(2). */
static bool tofutex_rw_on_module(void)
{
	return !tofutex__on_futex() && tofutex__has(TOFUTEX_FEAT_RWLOCK);
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
 * One read-lock attempt on the word last seen as *@w, as the ABI's user
 * space does it; @reserved_ok: RW_HANDOFF does not stop it. Returns 0 when
 * taken, EAGAIN when the count is full, else EBUSY; *@raced: EBUSY came
 * from a failed compare-and-swap, *@w is the new value, and the caller
 * may try again.
 */
static inline int tofutex_rw_try_read(tofutex_rwlock_t *rw, uint32_t *w,
				      bool reserved_ok, bool *raced)
{
	uint32_t n = tofutex_rw_readers(*w), want;

	*raced = false;
	if (tofutex_rw_writer(*w) ||
	    ((*w & RW_HANDOFF) && !reserved_ok))
		return EBUSY;
	if (n == RW_COUNT)
		return EAGAIN;
	want = RW_SHARED | (n + 1) | (*w & TOFUTEX_WAITERS);
	if (__atomic_compare_exchange_n(&rw->word, w, want, false,
					__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return 0;
	*raced = true;
	return EBUSY;
}

/*
 * Read-lock attempts until the word excludes readers: tryrdlock; @join:
 * RW_HANDOFF does not stop it (reader preference, see
 * tofutex__rwlock_join_rdlock()).
 */
static int tofutex_rw_try_read_all(tofutex_rwlock_t *rw, uint32_t w,
				   bool join)
{
	bool raced;
	int err;

	do
		err = tofutex_rw_try_read(rw, &w, join, &raced);
	while (raced);
	return err;
}

/*
 * The contended lock on the module: retried after a signal and after the
 * end of a slice of a realtime deadline the module cannot follow (clock.c),
 * as mutex.c's; the deadline is absolute, so retrying keeps it.
 */
static int tofutex_rw_lock_kernel(tofutex_rwlock_t *rw, bool write,
				  const struct tofutex__deadline *dl)
{
	struct tofutex_lock arg;
	uint32_t flags;
	uint64_t ns;
	bool sliced;
	int err;

	do {
		sliced = tofutex__module_deadline(dl, TOFUTEX_LOCK_DEADLINE,
						  TOFUTEX_LOCK_CLOCK_REALTIME,
						  &flags, &ns);
		arg = (struct tofutex_lock) {
			.uaddr = (uintptr_t)&rw->word,
			.deadline_ns = ns,
			.flags = flags,
		};
		err = tofutex__ioctl(write ? TOFUTEX_IOC_WRLOCK :
				     TOFUTEX_IOC_RDLOCK, &arg, NULL);
		if (err == ETIMEDOUT && sliced && !tofutex__deadline_passed(dl))
			err = EINTR;
	} while (err == EINTR);
	if (!err)
		tofutex__self.last_status = arg.status;
	return err;
}

/*
 * On futex(2): a writer's TID in @w; take the word over if that writer is
 * dead (the word released, WAITERS kept: others may sleep). Returns 0 to
 * look again, EPERM for another process's thread, EBUSY when it lives.
 */
static int tofutex_rw_futex_writer(tofutex_rwlock_t *rw, uint32_t w)
{
	switch (tofutex__owner_of(tofutex_rw_writer(w))) {
	case TOFUTEX_OWNER_LIVE:
		return EBUSY;
	case TOFUTEX_OWNER_FOREIGN:
		return EPERM;
	case TOFUTEX_OWNER_DEAD:
		break;
	}
	__atomic_compare_exchange_n(&rw->word, &w, w & TOFUTEX_WAITERS, false,
				    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	return 0;
}

/*
 * On futex(2): set WAITERS (and @extra) in the word last seen as @w and
 * sleep while it stays so, at most @poll_ns. Returns 0 to look again, or
 * ETIMEDOUT when the sleep ran out; *@expired: it ran out at the deadline,
 * not at the poll.
 */
static int tofutex_rw_futex_sleep(tofutex_rwlock_t *rw, uint32_t w,
				  uint32_t extra,
				  const struct tofutex__deadline *dl,
				  uint64_t poll_ns, bool *expired)
{
	uint32_t want = w | TOFUTEX_WAITERS | extra;
	int err;

	*expired = false;
	if (want != w && !__atomic_compare_exchange_n(&rw->word, &w, want,
						      false, __ATOMIC_RELAXED,
						      __ATOMIC_RELAXED))
		return 0;
	err = tofutex__futex_wait(&rw->word, want, dl, poll_ns);
	if (err != ETIMEDOUT)
		return 0;
	*expired = tofutex__deadline_passed(dl);
	return ETIMEDOUT;
}

static int tofutex_rw_futex_rdlock(tofutex_rwlock_t *rw,
				   const struct tofutex__deadline *dl,
				   bool join)
{
	bool check_owner = true, reserved_ok = join, raced, expired;
	uint32_t w = __atomic_load_n(&rw->word, __ATOMIC_RELAXED);
	int err;

	for (;;) {
		err = tofutex_rw_try_read(rw, &w, reserved_ok, &raced);
		if (err != EBUSY)
			return err;
		if (raced)
			continue;
		if (tofutex_rw_writer(w) && check_owner) {
			check_owner = false;
			err = tofutex_rw_futex_writer(rw, w);
			if (err == EPERM)
				return err;
			if (!err) {
				w = __atomic_load_n(&rw->word, __ATOMIC_RELAXED);
				continue;
			}
		}
		err = tofutex_rw_futex_sleep(rw, w, 0, dl, TOFUTEX_POLL_NS,
					     &expired);
		if (expired)
			return ETIMEDOUT;
		if (err == ETIMEDOUT) {
			check_owner = true;
			reserved_ok = true;
		}
		w = __atomic_load_n(&rw->word, __ATOMIC_RELAXED);
	}
}

static uint64_t tofutex_rw_now(void)
{
	return tofutex__clock_ns(CLOCK_MONOTONIC);
}

static int tofutex_rw_futex_wrlock(tofutex_rwlock_t *rw, uint32_t tid,
				   const struct tofutex__deadline *dl)
{
	uint32_t w = __atomic_load_n(&rw->word, __ATOMIC_RELAXED), extra;
	uint64_t start = tofutex_rw_now(), waited, poll;
	bool check_owner = true, expired;
	int err;

	for (;;) {
		/* Free, or reserved for a writer: take it, WAITERS kept. */
		if (!(w & RW_COUNT)) {
			if (__atomic_compare_exchange_n(&rw->word, &w,
					tid | TOFUTEX_WAITERS, false,
					__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
				return 0;
			continue;
		}
		extra = 0;
		poll = TOFUTEX_POLL_NS;
		if (tofutex_rw_writer(w) && check_owner) {
			check_owner = false;
			err = tofutex_rw_futex_writer(rw, w);
			if (err == EPERM)
				return err;
			if (!err) {
				w = __atomic_load_n(&rw->word, __ATOMIC_RELAXED);
				continue;
			}
		} else if (!tofutex_rw_writer(w)) {
			waited = tofutex_rw_now() - start;
			if (waited >= TOFUTEX_RW_FUTEX_HANDOFF_NS)
				extra = RW_HANDOFF;
			else
				poll = TOFUTEX_RW_FUTEX_HANDOFF_NS - waited;
		}
		err = tofutex_rw_futex_sleep(rw, w, extra, dl, poll, &expired);
		if (expired)
			return ETIMEDOUT;
		if (err == ETIMEDOUT)
			check_owner = true;
		w = __atomic_load_n(&rw->word, __ATOMIC_RELAXED);
	}
}

/*
 * On the module, a read lock that joins readers: each kernel wait lasts
 * at most TOFUTEX_POLL_NS, and between two the caller joins the word if
 * readers hold it by then. The kernel queues a reader behind a writer
 * top waiter; readers that took the word meanwhile in user space (a free
 * word is anybody's) do not wake it, and one of them may wait for this
 * reader (glibc's own tst-rwlock16 does): a reader-preferring reader must
 * not stay queued while readers hold the word. The look costs a wake-up
 * per TOFUTEX_POLL_NS only while the reader waits behind a writer.
 */
static int tofutex_rw_join_kernel(tofutex_rwlock_t *rw,
				  const struct tofutex__deadline *dl)
{
	struct tofutex__deadline slice = { .set = true, .clock = dl->clock };
	const struct tofutex__deadline *until;
	int err;

	for (;;) {
		/* On the deadline's clock, so that it is never overshot. */
		slice.ns = tofutex__clock_ns(dl->clock) + TOFUTEX_POLL_NS;
		until = dl->set && dl->ns <= slice.ns ? dl : &slice;
		err = tofutex_rw_lock_kernel(rw, false, until);
		if (err != ETIMEDOUT || until == dl)
			return err;
		err = tofutex_rw_try_read_all(rw, __atomic_load_n(&rw->word,
							__ATOMIC_RELAXED),
					      true);
		if (err != EBUSY)
			return err;
	}
}

/*
 * The contended part of a lock; @w what the fast path saw; @join: a read
 * lock with reader preference (tofutex__rwlock_join_rdlock()).
 */
static int tofutex_rw_lock_rest(tofutex_rwlock_t *rw, bool write, bool join,
				uint32_t tid, uint32_t w,
				const struct tofutex__deadline *dl)
{
	int err;

	if (__builtin_expect(!tid, 0))
		return EAGAIN;
	if (tofutex__is_self(tofutex_rw_writer(w), tid))
		return EDEADLK;
	if (w & TOFUTEX_RW_RESERVED)
		return EINVAL;
	if (!write) {
		err = tofutex_rw_try_read_all(rw, w, join);
		if (err != EBUSY)
			return err;
	}
	if (tofutex_rw_on_module())
		return join ? tofutex_rw_join_kernel(rw, dl) :
			      tofutex_rw_lock_kernel(rw, write, dl);
	return write ? tofutex_rw_futex_wrlock(rw, tid, dl) :
		       tofutex_rw_futex_rdlock(rw, dl, join);
}

static inline int tofutex_rw_lock(tofutex_rwlock_t *rw, bool write, bool join,
				  const struct tofutex__deadline *dl)
{
	uint32_t tid, w = 0;
	bool raced;

	if (tofutex_rw_bad(rw))
		return EINVAL;
	tid = (uint32_t)tofutex__tid();
	if (write) {
		if (__builtin_expect(tid != 0, 1) &&
		    __atomic_compare_exchange_n(&rw->word, &w, tid, false,
						__ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return 0;
	} else {
		w = __atomic_load_n(&rw->word, __ATOMIC_RELAXED);
		if (tofutex_rw_try_read(rw, &w, join, &raced) == 0)
			return 0;
	}
	return tofutex_rw_lock_rest(rw, write, join, tid, w, dl);
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
	return tofutex_rw_lock(rw, write, false, &dl);
}

int tofutex_rwlock_rdlock(tofutex_rwlock_t *rw)
{
	return tofutex_rw_lock(rw, false, false, &tofutex_rw_forever);
}

int tofutex_rwlock_wrlock(tofutex_rwlock_t *rw)
{
	return tofutex_rw_lock(rw, true, false, &tofutex_rw_forever);
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

int tofutex_rwlock_trywrlock(tofutex_rwlock_t *rw)
{
	uint32_t tid, w;

	if (tofutex_rw_bad(rw))
		return EINVAL;
	tid = (uint32_t)tofutex__tid();
	if (__builtin_expect(!tid, 0))
		return EAGAIN;
	/*
	 * A free word may carry WAITERS (or, on futex, a writer's
	 * reservation): take it keeping WAITERS, so that the unlock wakes
	 * whoever waits, as tofutex_mutex_trylock() does.
	 */
	w = __atomic_load_n(&rw->word, __ATOMIC_RELAXED);
	while (!(w & RW_COUNT)) {
		if (__atomic_compare_exchange_n(&rw->word, &w,
						tid | (w & TOFUTEX_WAITERS),
						false, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return 0;
	}
	return EBUSY;
}

int tofutex__rwlock_join_rdlock(tofutex_rwlock_t *rw, clockid_t clockid,
				const struct timespec *abstime)
{
	struct tofutex__deadline dl = tofutex_rw_forever;
	int err;

	if (abstime) {
		err = tofutex__deadline_init(&dl, clockid, abstime);
		if (err)
			return err;
	}
	return tofutex_rw_lock(rw, false, true, &dl);
}

int tofutex__rwlock_join_tryrdlock(tofutex_rwlock_t *rw)
{
	return tofutex_rw_tryrdlock(rw, true);
}

/*
 * The release that may wake: @w is the word as last seen, held by the
 * caller (the write lock, or the last read lock with WAITERS). On the
 * module the kernel releases it; on futex(2) it is released here (a
 * writer's reservation kept) and every sleeper woken.
 */
static int tofutex_rw_release_slow(tofutex_rwlock_t *rw, uint32_t w)
{
	struct tofutex_unlock arg = { .uaddr = (uintptr_t)&rw->word };
	uint32_t want;

	if (tofutex_rw_on_module())
		return tofutex__ioctl(TOFUTEX_IOC_RWUNLOCK, &arg, NULL);
	for (;;) {
		if (tofutex_rw_readers(w) > 1)
			want = w - 1;
		else if (tofutex_rw_readers(w) && (w & RW_HANDOFF))
			want = RW_HANDOFF | TOFUTEX_WAITERS;
		else
			want = 0;
		if (__atomic_compare_exchange_n(&rw->word, &w, want, false,
						__ATOMIC_RELEASE,
						__ATOMIC_RELAXED))
			break;
	}
	if ((w & TOFUTEX_WAITERS) && tofutex_rw_readers(w) <= 1)
		tofutex__futex_wake(&rw->word, INT_MAX);
	return 0;
}

int tofutex_rwlock_unlock(tofutex_rwlock_t *rw)
{
	uint32_t tid, w, n, owner;

	if (tofutex_rw_bad(rw))
		return EINVAL;
	tid = (uint32_t)tofutex__tid();
	w = __atomic_load_n(&rw->word, __ATOMIC_RELAXED);
	for (;;) {
		owner = tofutex_rw_writer(w);
		n = tofutex_rw_readers(w);
		if (owner) {
			if (!tid || !tofutex__is_self(owner, tid))
				return EPERM;
			if (owner != tid) {
				/* Locked before fork() by our parent's TID. */
				__atomic_store_n(&rw->word, 0, __ATOMIC_RELEASE);
				return 0;
			}
			if (w != tid)
				return tofutex_rw_release_slow(rw, w);
			if (__atomic_compare_exchange_n(&rw->word, &w, 0, false,
							__ATOMIC_RELEASE,
							__ATOMIC_RELAXED))
				return 0;
			continue;
		}
		if (!n)
			return EPERM;
		if (n == 1 && (w & TOFUTEX_WAITERS))
			return tofutex_rw_release_slow(rw, w);
		if (__atomic_compare_exchange_n(&rw->word, &w,
						n > 1 ? w - 1 : 0, false,
						__ATOMIC_RELEASE,
						__ATOMIC_RELAXED))
			return 0;
	}
}
