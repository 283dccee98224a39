// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex - the futex(2) backend (backend.h): waiting, waking and
 * requeueing on private futexes, and the contended paths of the TO lock
 * word and of the reader/writer word when the module is not used
 * (backend.c), or, for the reader/writer word, when it lacks
 * TOFUTEX_FEAT_RWLOCK.
 *
 * The lock word keeps the module's layout (TID | WAITERS | OWNER_DIED,
 * tofutex(4)), so the user-space fast paths and the user-space spin in
 * mutex.c are the same on both backends. The contended path is Drepper's
 * "mutex take 3" ("Futexes Are Tricky") with a TID in place of 1:
 *
 * - a waiter sets WAITERS before it sleeps, and a thread that entered this
 *   path takes the lock with WAITERS set, since other sleepers may remain;
 *   the owner's unlock then sees WAITERS and wakes one sleeper;
 * - a condition variable's broadcast moves its waiters onto the lock word
 *   (FUTEX_CMP_REQUEUE, cond.c); they too take the lock through this path,
 *   WAITERS set, so that each unlock wakes the next (->relock_moved).
 *
 * glibc owns the kernel's robust list of every thread, so a thread that
 * exits holding a word is not reported by the kernel as it is for robust
 * futexes. A waiter of a robust lock (every tofutex_mutex_t) finds out
 * itself, as the module does: it looks at the owner's TID when it starts
 * waiting and whenever it slept TOFUTEX_POLL_NS without being woken. A
 * waiter of a non-robust one (the pthread preload's) never looks, as
 * glibc's do not: it sleeps until the unlock, and an owner that died
 * leaves the lock held for good. Not looking also saves the tgkill() of
 * the look on every contended lock: a broadcast's waiters, each moved onto
 * the mutex and relocking it, would pay one each.
 * A TID that is no thread of this process either
 * names a thread of another process (the word is in shared memory; EPERM,
 * never taken, as the module does), or nobody: then the owner died, and
 * the waiter takes the word with OWNER_DIED set.
 *
 * The reader/writer word (rwlock.h) works on futex(2) the same way: a
 * waiter sets WAITERS and sleeps on the word, readers and writers apart
 * (FUTEX_WAIT_BITSET, TOFUTEX_RW_BITS_READ or _WRITE); a release that
 * finds WAITERS wakes the readers and one writer, as glibc's unlock does,
 * not every sleeper (tofutex_rw_futex_wake_next()), and a thread that
 * slept takes the word with WAITERS, so that its release wakes whoever
 * is left asleep. A writer that
 * waited TOFUTEX_RW_FUTEX_HANDOFF_NS on readers (a reserving one: at its
 * first sleep on them) sets RW_HANDOFF and counts itself in the lock's
 * second field (tofutex_rwlock_t.reserved) until it leaves: new readers
 * then wait, the last reader leaves the word free but reserved,
 * RW_HANDOFF | WAITERS, which only a writer takes (or a reader that may
 * join past it), and so does a writer's release while the count says a
 * writer waits, waking that writer and not the readers. A writer whose
 * deadline passes withdraws RW_HANDOFF, and wakes every sleeper, only
 * when it was the last writer counted. A dead writer's word is taken over, found as a dead lock owner
 * is: a sleeper looks at the writer every TOFUTEX_POLL_NS, and only while
 * a writer holds the word (readers are a count that cannot be looked
 * at), so a wait on readers has no periodic wake-up; the pthread
 * preload's waiters (not robust) never look, as glibc's do not.
 *
 * Wait and wake are FUTEX_WAIT_BITSET and FUTEX_WAKE; a swap is a wake
 * followed by a wait: same result, without the module's placement of the
 * woken thread on the waker's CPU. There is no module to ask for a
 * version or statistics: ENOTSUP.
 */
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "backend.h"
#include "rwlock.h"
#include "sys.h"

static long tofutex_futex(uint32_t *uaddr, int op, uint32_t val,
			  const struct timespec *ts, uint32_t *uaddr2,
			  uint32_t val3)
{
	return tofutex__sys_errno(SYS_futex, (long)uaddr, op, val, (long)ts,
				  (long)uaddr2, val3);
}

bool tofutex__futex_counting;
uint64_t tofutex__futex_waits;

/* tofutex__futex_wait() for the sleepers that a wake of @bits reaches. */
static int tofutex_futex_wait_bits(uint32_t *addr, uint32_t val,
				   const struct tofutex__deadline *dl,
				   uint64_t poll_ns, uint32_t bits)
{
	int op = FUTEX_WAIT_BITSET | FUTEX_PRIVATE_FLAG;
	struct timespec ts, *tsp = NULL;
	int saved_errno = errno, err = 0;
	bool timed = dl->set || poll_ns;
	uint64_t end = UINT64_MAX;

	if (poll_ns)
		end = tofutex__clock_ns(dl->clock) + poll_ns;
	if (dl->set && dl->ns < end)
		end = dl->ns;
	if (timed) {
		ts.tv_sec = (time_t)(end / TOFUTEX_NSEC_PER_SEC);
		ts.tv_nsec = (long)(end % TOFUTEX_NSEC_PER_SEC);
		tsp = &ts;
		if (dl->clock == CLOCK_REALTIME)
			op |= FUTEX_CLOCK_REALTIME;
	}
	if (__builtin_expect(tofutex__futex_counting, 0))
		__atomic_fetch_add(&tofutex__futex_waits, 1, __ATOMIC_RELAXED);
	if (tofutex_futex(addr, op, val, tsp, NULL, bits))
		err = errno;
	errno = saved_errno;
	/* The poll's end, not the deadline's. */
	if (err == ETIMEDOUT && !(dl->set && end == dl->ns))
		err = ETIME;
	/* EWOULDBLOCK is EAGAIN on Linux. */
	return err;
}

int tofutex__futex_wait(uint32_t *addr, uint32_t val,
			const struct tofutex__deadline *dl, uint64_t poll_ns)
{
	return tofutex_futex_wait_bits(addr, val, dl, poll_ns,
				       FUTEX_BITSET_MATCH_ANY);
}

/* Wake up to @count sleepers of @addr that waited for @bits. */
static int tofutex_futex_wake_bits(uint32_t *addr, int count, uint32_t bits)
{
	int saved_errno = errno;
	long n;

	n = tofutex_futex(addr, FUTEX_WAKE_BITSET | FUTEX_PRIVATE_FLAG,
			  (uint32_t)count, NULL, NULL, bits);
	if (n < 0)
		n = -errno;
	errno = saved_errno;
	return (int)n;
}

int tofutex__futex_wake(uint32_t *addr, int count)
{
	return tofutex_futex_wake_bits(addr, count, FUTEX_BITSET_MATCH_ANY);
}

/*
 * ->requeue(): while *@addr == @val, wake one waiter of @addr and move the
 * others onto @lock_addr (FUTEX_CMP_REQUEUE); EAGAIN when *@addr changed.
 */
static int tofutex_futex_requeue(uint32_t *addr, uint32_t val,
				 uint32_t *lock_addr)
{
	int saved_errno = errno, err = 0;

	/* The timeout argument carries the number to requeue. */
	if (tofutex_futex(addr, FUTEX_CMP_REQUEUE | FUTEX_PRIVATE_FLAG, 1,
			  (const struct timespec *)(uintptr_t)INT_MAX,
			  lock_addr, val) < 0)
		err = errno;
	errno = saved_errno;
	return err;
}

enum tofutex__owner tofutex__owner_of(uint32_t tid)
{
	int saved_errno = errno;
	enum tofutex__owner who;

	/*
	 * Signal 0 only checks that the target exists: tgkill() finds a
	 * thread of this thread group, kill() any thread at all (a TID
	 * names its thread group there). EPERM also means it exists. A
	 * thread is found until the kernel has reaped it, which may be a
	 * moment after pthread_join() returned (the kernel wakes the joiner
	 * early in the thread's exit): until then it counts as alive.
	 */
	if (!tofutex__sys_errno(SYS_tgkill, tofutex__pid(), (pid_t)tid, 0, 0,
				0, 0) || errno == EPERM)
		who = TOFUTEX_OWNER_LIVE;
	else if (!tofutex__sys_errno(SYS_kill, (pid_t)tid, 0, 0, 0, 0, 0) ||
		 errno == EPERM)
		who = TOFUTEX_OWNER_FOREIGN;
	else
		who = TOFUTEX_OWNER_DEAD;
	errno = saved_errno;
	return who;
}

/* A lock's owner @tid: EBUSY when it lives, EPERM when another process's. */
static int tofutex_owner_busy(uint32_t tid)
{
	switch (tofutex__owner_of(tid)) {
	case TOFUTEX_OWNER_LIVE:
		return EBUSY;
	case TOFUTEX_OWNER_FOREIGN:
		return EPERM;
	case TOFUTEX_OWNER_DEAD:
		break;
	}
	return 0;
}

int tofutex__take_from_dead(uint32_t *word, uint32_t tid, uint32_t w,
			    uint32_t waiters)
{
	int err;

	/* glibc's own code holds it (glibc.c): a live thread of ours. */
	if (tofutex__glibc_owner(w & TOFUTEX_TID_MASK))
		return EBUSY;
	err = tofutex_owner_busy(w & TOFUTEX_TID_MASK);
	if (err)
		return err;
	if (__atomic_compare_exchange_n(word, &w, tid | TOFUTEX_OWNER_DIED |
					waiters, false,
					__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return EOWNERDEAD;
	return EAGAIN;
}

/*
 * ->lock(): sleep with WAITERS set, take over from a dead owner (found
 * when the wait begins; while asleep too only when @robust).
 */
static int tofutex_futex_lock(uint32_t *word, uint32_t tid,
			      const struct tofutex__deadline *dl, bool robust)
{
	uint32_t w = __atomic_load_n(word, __ATOMIC_RELAXED);
	bool check_owner = robust;
	int err;

	for (;;) {
		if (!(w & TOFUTEX_TID_MASK)) {
			if (__atomic_compare_exchange_n(word, &w,
					w | tid | TOFUTEX_WAITERS, false,
					__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
				return (w & TOFUTEX_OWNER_DIED) ? EOWNERDEAD : 0;
			continue;
		}
		if (tofutex__glibc_owner(w & TOFUTEX_TID_MASK)) {
			err = tofutex__glibc_lock(word, tid, dl);
			if (err != EAGAIN)
				return err;
			w = __atomic_load_n(word, __ATOMIC_RELAXED);
			continue;
		}
		if (check_owner) {
			check_owner = false;
			err = tofutex__take_from_dead(word, tid, w,
						      TOFUTEX_WAITERS);
			if (err != EBUSY && err != EAGAIN)
				return err;
			if (err == EAGAIN) {
				w = __atomic_load_n(word, __ATOMIC_RELAXED);
				continue;
			}
		}
		if (!(w & TOFUTEX_WAITERS) &&
		    !__atomic_compare_exchange_n(word, &w, w | TOFUTEX_WAITERS,
						 false, __ATOMIC_RELAXED,
						 __ATOMIC_RELAXED))
			continue;
		err = tofutex__futex_wait(word, w | TOFUTEX_WAITERS, dl,
					  robust ? TOFUTEX_POLL_NS : 0);
		if (err == ETIMEDOUT)
			return ETIMEDOUT;
		if (err == ETIME)
			check_owner = robust;
		/* 0, EAGAIN, EINTR (a lock is not interrupted): look again. */
		w = __atomic_load_n(word, __ATOMIC_RELAXED);
	}
}

/*
 * ->unlock(): release, and wake one sleeper where WAITERS is set; the
 * exchange reads the word afresh, and whose TID it held does not matter.
 */
static int tofutex_futex_unlock(uint32_t *word, uint32_t seen, bool own)
{
	(void)own;
	seen = __atomic_exchange_n(word, 0, __ATOMIC_RELEASE);
	/* glibc's code may have written its 2 over ours (glibc.c). */
	if ((seen & TOFUTEX_WAITERS) ||
	    tofutex__glibc_owner(seen & TOFUTEX_TID_MASK))
		tofutex__futex_wake(word, 1);
	return 0;
}

/* ->unlock_glibc(): glibc's sleepers and ours are all futex sleepers. */
static int tofutex_futex_unlock_glibc(uint32_t *word)
{
	__atomic_exchange_n(word, 0, __ATOMIC_RELEASE);
	tofutex__futex_wake(word, 1);
	return 0;
}

static bool tofutex_word_bad(const uint32_t *addr)
{
	return !addr || ((uintptr_t)addr & (sizeof(*addr) - 1));
}

static int tofutex_futex_wait_op(uint32_t *addr, uint32_t expected,
				 const struct tofutex__deadline *dl)
{
	if (tofutex_word_bad(addr))
		return EINVAL;
	return tofutex__futex_wait(addr, expected, dl, 0);
}

static int tofutex_futex_wake_op(uint32_t *addr, unsigned int count,
				 unsigned int *woken)
{
	int n;

	if (tofutex_word_bad(addr))
		return EINVAL;
	n = tofutex__futex_wake(addr, count > INT_MAX ? INT_MAX : (int)count);
	if (n < 0)
		return -n;
	if (woken)
		*woken = (unsigned int)n;
	return 0;
}

static int tofutex_futex_swap(uint32_t *wait_addr, uint32_t expected,
			      uint32_t *wake_addr,
			      const struct tofutex__deadline *dl)
{
	int err;

	if (tofutex_word_bad(wait_addr) || tofutex_word_bad(wake_addr))
		return EINVAL;
	err = tofutex__futex_wake(wake_addr, 1);
	if (err < 0)
		return -err;
	return tofutex__futex_wait(wait_addr, expected, dl, 0);
}

/* Nothing to set up: futex(2) needs no descriptor. */
static void tofutex_futex_prepare_wait(void)
{
}

/*
 * On futex(2), the wait after which a writer blocks new readers: the
 * module's handoff_ns default, so that a writer starves no longer on one
 * backend than on the other.
 */
#define TOFUTEX_RW_FUTEX_HANDOFF_NS	4000000ull

/*
 * On futex(2): the word last seen as *@w; when a writer holds it and
 * *@check_owner says to look (once per wait and after each poll), take
 * the word over if that writer is dead (the word released, WAITERS kept:
 * others may sleep). Returns 0 to look again (*@w read anew), EPERM for
 * another process's thread, EBUSY to sleep on.
 */
static int tofutex_rw_futex_writer(tofutex_rwlock_t *rw, uint32_t *w,
				   bool *check_owner)
{
	uint32_t seen = *w;
	int err;

	if (!tofutex_rw_writer(seen) || !*check_owner)
		return EBUSY;
	*check_owner = false;
	err = tofutex_owner_busy(tofutex_rw_writer(seen));
	if (err)
		return err;
	__atomic_compare_exchange_n(&rw->word, &seen, seen & TOFUTEX_WAITERS,
				    false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	*w = __atomic_load_n(&rw->word, __ATOMIC_RELAXED);
	return 0;
}

/* The sleepers of a reader/writer word that a wake reaches (bitsets). */
#define TOFUTEX_RW_BITS_READ	1u
#define TOFUTEX_RW_BITS_WRITE	2u

/*
 * On futex(2): a release found WAITERS. Wake, as glibc's unlock does,
 * the sleeping readers (they enter together) and one writer, not every
 * sleeper. After a writer's release (@writer) both: the readers get the
 * word, and the writer, finding it read-held, sleeps again on a timer to
 * reserve it (RW_HANDOFF), so that a stream of readers cannot keep it
 * out for ever. After the last reader's, a writer, or the readers when
 * no writer slept. Whoever was woken takes the word with WAITERS, so its
 * release wakes those still asleep.
 */
static void tofutex_rw_futex_wake_next(tofutex_rwlock_t *rw, bool writer)
{
	if (writer)
		tofutex_futex_wake_bits(&rw->word, INT_MAX,
					TOFUTEX_RW_BITS_READ);
	if (tofutex_futex_wake_bits(&rw->word, 1, TOFUTEX_RW_BITS_WRITE) > 0 ||
	    writer)
		return;
	tofutex_futex_wake_bits(&rw->word, INT_MAX, TOFUTEX_RW_BITS_READ);
}

/*
 * On futex(2): set WAITERS (and @extra) in the word last seen as @w and
 * sleep while it stays so, at most @poll_ns (0: until woken or @dl), as
 * a reader or a writer (@bits). Returns 0 to look again, or ETIMEDOUT
 * when the sleep ran out; *@expired: it ran out at the deadline, not at
 * the poll.
 */
static int tofutex_rw_futex_sleep(tofutex_rwlock_t *rw, uint32_t w,
				  uint32_t extra, uint32_t bits,
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
	err = tofutex_futex_wait_bits(&rw->word, want, dl, poll_ns, bits);
	if (err != ETIMEDOUT && err != ETIME)
		return 0;
	*expired = err == ETIMEDOUT;
	return ETIMEDOUT;
}

/* ->rdlock() */
int tofutex__futex_rdlock(tofutex_rwlock_t *rw,
			  const struct tofutex__deadline *dl, bool join,
			  bool robust)
{
	bool check_owner = robust, raced, expired;
	uint32_t w = __atomic_load_n(&rw->word, __ATOMIC_RELAXED), slept = 0;
	int err;

	for (;;) {
		err = tofutex_rw_try_read(rw, &w, join, slept, &raced);
		if (err != EBUSY)
			return err;
		err = tofutex_rw_futex_writer(rw, &w, &check_owner);
		if (err == EPERM)
			return err;
		/* A lost race: @w is the new value, try it. */
		if (!err || raced)
			continue;
		err = tofutex_rw_futex_sleep(rw, w, 0, TOFUTEX_RW_BITS_READ, dl,
					     robust && tofutex_rw_writer(w) ?
						TOFUTEX_POLL_NS : 0,
					     &expired);
		if (expired)
			return ETIMEDOUT;
		if (err == ETIMEDOUT)
			check_owner = robust;
		slept = TOFUTEX_WAITERS;
		w = __atomic_load_n(&rw->word, __ATOMIC_RELAXED);
	}
}

static uint64_t tofutex_rw_now(void)
{
	return tofutex__clock_ns(CLOCK_MONOTONIC);
}

/*
 * On futex(2): no writer is counted in the reservation any more: clear
 * RW_HANDOFF, a free word entirely, and wake every sleeper (a writer that
 * counts itself meanwhile sets it again). The count and the word are
 * read and written sequentially consistent, here and in the unlock, so
 * that of a release that reserves the word for a writer on a stale count
 * and the last writer leaving the count, one sees the other's doing.
 */
static void tofutex_rw_futex_unreserve(tofutex_rwlock_t *rw)
{
	uint32_t w = __atomic_load_n(&rw->word, __ATOMIC_SEQ_CST), want;

	do {
		if (!(w & RW_HANDOFF))
			return;
		want = w & ~RW_HANDOFF;
		if (!(want & RW_COUNT))
			want = 0;
	} while (!__atomic_compare_exchange_n(&rw->word, &w, want, false,
					      __ATOMIC_SEQ_CST,
					      __ATOMIC_SEQ_CST));
	if (w & TOFUTEX_WAITERS)
		tofutex__futex_wake(&rw->word, INT_MAX);
}

/*
 * On futex(2): a writer that set RW_HANDOFF gives up (its deadline
 * passed) and leaves the count; the last one clears the reservation.
 */
static void tofutex_rw_futex_withdraw(tofutex_rwlock_t *rw)
{
	if (!__atomic_sub_fetch(&rw->reserved, 1, __ATOMIC_SEQ_CST))
		tofutex_rw_futex_unreserve(rw);
}

/*
 * ->wrlock(): a writer on readers sets RW_HANDOFF once it has waited
 * TOFUTEX_RW_FUTEX_HANDOFF_NS, or at its first sleep with @reserve; it is
 * counted in rw->reserved from then on (with @reserve from its first
 * sleep, also on a writer) until it takes the word or withdraws.
 */
int tofutex__futex_wrlock(tofutex_rwlock_t *rw, uint32_t tid,
			  const struct tofutex__deadline *dl, bool robust,
			  bool reserve)
{
	uint32_t w = __atomic_load_n(&rw->word, __ATOMIC_RELAXED), extra;
	uint64_t start = tofutex_rw_now(), waited, poll;
	bool check_owner = robust, reserved = false, expired;
	int err;

	for (;;) {
		extra = 0;
		poll = robust && tofutex_rw_writer(w) ? TOFUTEX_POLL_NS : 0;
		/* Free, or reserved for a writer: take it, WAITERS kept. */
		if (!(w & RW_COUNT)) {
			if (!__atomic_compare_exchange_n(&rw->word, &w,
					tid | TOFUTEX_WAITERS, false,
					__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
				continue;
			if (reserved)
				__atomic_sub_fetch(&rw->reserved, 1,
						   __ATOMIC_RELAXED);
			return 0;
		}
		err = tofutex_rw_futex_writer(rw, &w, &check_owner);
		if (err == EPERM)
			return err;
		if (!err)
			continue;
		if (!tofutex_rw_writer(w)) {
			waited = tofutex_rw_now() - start;
			if (reserve || waited >= TOFUTEX_RW_FUTEX_HANDOFF_NS)
				extra = RW_HANDOFF;
			else
				poll = TOFUTEX_RW_FUTEX_HANDOFF_NS - waited;
		}
		/*
		 * Counted while it waits: a starving writer, and a reserving
		 * one also on a writer, whose release then keeps the word
		 * for the writers.
		 */
		if ((extra || reserve) && !reserved) {
			__atomic_add_fetch(&rw->reserved, 1, __ATOMIC_SEQ_CST);
			reserved = true;
		}
		err = tofutex_rw_futex_sleep(rw, w, extra, TOFUTEX_RW_BITS_WRITE,
					     dl, poll, &expired);
		if (expired) {
			if (reserved)
				tofutex_rw_futex_withdraw(rw);
			return ETIMEDOUT;
		}
		if (err == ETIMEDOUT)
			check_owner = robust;
		w = __atomic_load_n(&rw->word, __ATOMIC_RELAXED);
	}
}

/*
 * ->rwunlock(): @seen is the word as last seen, held by the caller (the
 * write lock, or the last read lock with WAITERS). It is released here (a
 * writer's reservation kept) and the next sleepers woken.
 */
int tofutex__futex_rwunlock(tofutex_rwlock_t *rw, uint32_t seen)
{
	uint32_t w = seen, want;

	for (;;) {
		if (tofutex_rw_readers(w) > 1)
			want = w - 1;
		else if (tofutex_rw_readers(w) ? w & RW_HANDOFF :
			 __atomic_load_n(&rw->reserved, __ATOMIC_SEQ_CST))
			want = RW_HANDOFF | TOFUTEX_WAITERS;
		else
			want = 0;
		if (__atomic_compare_exchange_n(&rw->word, &w, want, false,
						__ATOMIC_SEQ_CST,
						__ATOMIC_RELAXED))
			break;
	}
	/* Reserved on a count that the last writer left meanwhile: undone. */
	if (want == (RW_HANDOFF | TOFUTEX_WAITERS) &&
	    !__atomic_load_n(&rw->reserved, __ATOMIC_SEQ_CST)) {
		tofutex_rw_futex_unreserve(rw);
		return 0;
	}
	/* Reserved for a writer: wake one, not the readers. */
	if ((w & TOFUTEX_WAITERS) && tofutex_rw_readers(w) <= 1)
		tofutex_rw_futex_wake_next(rw, tofutex_rw_writer(w) != 0 &&
					       !(want & RW_HANDOFF));
	return 0;
}


/* No module to ask. */
static int tofutex_futex_version(uint32_t *abi_version, uint64_t *features)
{
	(void)abi_version;
	(void)features;
	return ENOTSUP;
}

static int tofutex_futex_stats(uint32_t scope, struct tofutex_stats *out)
{
	(void)scope;
	(void)out;
	return ENOTSUP;
}

const struct tofutex__backend_ops tofutex__futex_ops = {
	.backend = TOFUTEX_BACKEND_FUTEX,
	.lock = tofutex_futex_lock,
	.unlock = tofutex_futex_unlock,
	.unlock_glibc = tofutex_futex_unlock_glibc,
	.relock_moved = true,
	.wait = tofutex_futex_wait_op,
	.wake = tofutex_futex_wake_op,
	.swap = tofutex_futex_swap,
	.requeue = tofutex_futex_requeue,
	.prepare_wait = tofutex_futex_prepare_wait,
	.rdlock = tofutex__futex_rdlock,
	.wrlock = tofutex__futex_wrlock,
	.rwunlock = tofutex__futex_rwunlock,
	.version = tofutex_futex_version,
	.stats = tofutex_futex_stats,
};
