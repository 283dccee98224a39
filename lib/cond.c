// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex - tofutex_cond_*: condition variables for tofutex mutexes.
 *
 * A condition variable is a sequence word (@seq) that every signal and
 * broadcast advances, the number of threads inside a wait with how many
 * of them were signalled (@waiters, one word: TOFUTEX_COND_WAITER and
 * TOFUTEX_COND_SIGNALLED), and the mutex they use (@mutex, for broadcast;
 * POSIX lets concurrent waiters use only one).
 *
 * A waiter, holding the mutex, reads @seq, counts itself in @waiters,
 * unlocks, and sleeps while @seq still holds what it read (tofutex_wait()
 * on the process's backend). A signal or broadcast that comes after the
 * waiter read @seq - that is, after the waiter released the mutex, which
 * the signaller may have taken since - changes @seq before it wakes, so the
 * waiter either does not sleep (the word changed) or is woken: no signal is
 * lost. A signal wakes one sleeper on @seq, which may be a thread that
 * began its wait after the signal; then an earlier waiter sleeps on and
 * the later one returns, which the caller's predicate loop cannot tell
 * from a spurious wake-up of the later one and a wait not yet begun of the
 * earlier one.
 *
 * @waiters lets signal and broadcast skip the system call when it would
 * wake nobody new. Its signalled count is the signals (and, for a
 * broadcast, the waiters it covered) that no waiter has yet taken: a
 * signal that finds every waiter signalled does nothing, since every
 * thread inside a wait has already been sent on its way (woken, or about
 * to find @seq changed); otherwise it counts itself, advances @seq and
 * wakes one. Each waiter on its way out takes one count, if there is one,
 * whatever ended its wait (a wake, a changed @seq, a timeout), in the
 * same atomic operation that uncounts it: then the signalled count never
 * exceeds the waiters that will leave without another wake (with two
 * steps, a signaller between them could count the leaving waiter, and
 * its count would then cover a later waiter that no one woke). A waiter
 * reads @seq before it counts itself, so a signaller that counted it
 * advances @seq after the waiter read it: the waiter does not sleep on a
 * value that signal did not change. All these accesses are sequentially
 * consistent; a signaller that reads @waiters before a waiter's increment
 * comes before its wait began. Without the count, a producer that signals
 * after every item while the consumer it woke waits for the mutex (which
 * the producer holds) makes a system call per item that wakes nobody.
 *
 * Broadcast does not wake every waiter to fight for the mutex. It wakes one
 * and moves the others onto the mutex word, where each unlock releases one
 * ("wait morphing"): the backend's ->requeue() (backend.h; on the module
 * TOFUTEX_IOC_REQUEUE when it reports TOFUTEX_FEAT_REQUEUE, a wake of them
 * all when it does not; on futex FUTEX_CMP_REQUEUE, with the waiters then
 * taking the mutex through the path that sets WAITERS,
 * tofutex__mutex_relock()), so that every unlock wakes the next.
 * @broadcasts tells a waiter whether a broadcast came while it waited:
 * after a signal it locks the ordinary way, which leaves WAITERS alone and
 * its unlock in user space.
 *
 * Signals: a signal handler that interrupts a wait runs, and the thread
 * goes on waiting unless the condition was signalled meanwhile; the wait
 * never fails with EINTR. Cancellation: like pthread_cond_wait(), a wait
 * is a cancellation point; a thread cancelled in it leaves it with the
 * mutex held, then runs its cleanup handlers. A signal handler that
 * leaves the wait with longjmp() leaves it the same way: the cleanup is
 * on glibc's chain of cleanup buffers, which longjmp() runs too, as for
 * glibc's own wait (internal.h, TOFUTEX_CLEANUP_PUSH).
 *
 * tofutex__cond_wait() also waits with a mutex that is not a tofutex
 * mutex (the pthread preload's pass-through mutexes, lib/pthread/): it
 * releases and takes that mutex through the caller's functions, and a
 * broadcast wakes all its waiters, having no lock word to move them to.
 */
#include <limits.h>
#include <pthread.h>

#include "backend.h"

/*
 * @waiters: the waiters in the low half, the signalled in the high half,
 * and in the low half's top bit TOFUTEX_COND_DESTROYING: a
 * tofutex__cond_destroy_wait() sleeps on the low half until the last
 * waiter leaves, and that waiter wakes it.
 */
#define TOFUTEX_COND_WAITER	1ull
#define TOFUTEX_COND_DESTROYING	(1ull << 31)
#define TOFUTEX_COND_SIGNALLED	(1ull << 32)

static inline uint32_t tofutex_cond_waiting(uint64_t waiters)
{
	return (uint32_t)(waiters & (TOFUTEX_COND_DESTROYING - 1));
}

/* The low half of @waiters, as a 32-bit word to sleep on. */
static inline uint32_t *tofutex_cond_low(tofutex_cond_t *c)
{
	return (uint32_t *)(void *)&c->waiters +
	       (__BYTE_ORDER__ == __ORDER_BIG_ENDIAN__);
}

static inline uint32_t tofutex_cond_signalled(uint64_t waiters)
{
	return (uint32_t)(waiters >> 32);
}

/* @waiters is a 64-bit atomic: the whole object is naturally aligned. */
static inline bool tofutex_cond_bad(const tofutex_cond_t *c)
{
	return !c || ((uintptr_t)c & (sizeof(c->waiters) - 1));
}

int tofutex_cond_init(tofutex_cond_t *c)
{
	if (tofutex_cond_bad(c))
		return EINVAL;
	*c = (tofutex_cond_t)TOFUTEX_COND_INITIALIZER;
	return 0;
}

int tofutex_cond_destroy(tofutex_cond_t *c)
{
	if (tofutex_cond_bad(c))
		return EINVAL;
	if (tofutex_cond_waiting(__atomic_load_n(&c->waiters,
						 __ATOMIC_ACQUIRE)))
		return EBUSY;
	return 0;
}

/*
 * A thread inside a condition wait (also for the cancellation handler):
 * @bcasts is @c's broadcast count when the wait began.
 */
struct tofutex_cond_waiter {
	tofutex_cond_t *c;
	const struct tofutex__cond_mutex *cm;
	uint32_t seq;		/* @c's sequence when the wait began */
	uint32_t bcasts;
	bool moved;
};

/*
 * Leave the wait: stop counting as a waiter and take one signalled count,
 * if any, in one step (after which @c may be destroyed). The last waiter
 * to leave wakes a destroyer that waits for it: a wake-up on memory that
 * may be freed by then, which is harmless (it wakes nobody, or a sleeper
 * of whatever lives there now, who will see a spurious wake-up).
 */
static void tofutex_cond_leave(tofutex_cond_t *c)
{
	uint64_t v = __atomic_load_n(&c->waiters, __ATOMIC_SEQ_CST), next;

	do {
		next = v - TOFUTEX_COND_WAITER;
		if (tofutex_cond_signalled(v))
			next -= TOFUTEX_COND_SIGNALLED;
		if (!tofutex_cond_waiting(next))
			next &= ~TOFUTEX_COND_DESTROYING;
	} while (!__atomic_compare_exchange_n(&c->waiters, &v, next, false,
					      __ATOMIC_SEQ_CST,
					      __ATOMIC_SEQ_CST));
	if ((v & TOFUTEX_COND_DESTROYING) && !tofutex_cond_waiting(next))
		tofutex_wake(tofutex_cond_low(c), UINT_MAX, NULL);
}

int tofutex__cond_destroy_wait(tofutex_cond_t *c)
{
	uint64_t v;

	if (tofutex_cond_bad(c))
		return EINVAL;
	v = __atomic_load_n(&c->waiters, __ATOMIC_SEQ_CST);
	while (tofutex_cond_waiting(v)) {
		if (!(v & TOFUTEX_COND_DESTROYING) &&
		    !__atomic_compare_exchange_n(&c->waiters, &v,
						 v | TOFUTEX_COND_DESTROYING,
						 false, __ATOMIC_SEQ_CST,
						 __ATOMIC_SEQ_CST))
			continue;
		tofutex_wait(tofutex_cond_low(c),
			     (uint32_t)(v | TOFUTEX_COND_DESTROYING), NULL);
		v = __atomic_load_n(&c->waiters, __ATOMIC_SEQ_CST);
	}
	return 0;
}

/*
 * A waiter @w cancelled while a signal may have been on its way to it: the
 * signal's wake-up may have been the one that ended its sleep, and the
 * signal must not die with it while other threads wait (POSIX; glibc
 * passes it on too). Decided by its own wait, not by the signalled count,
 * which another waiter leaving may take meanwhile: a signal or broadcast
 * that came since the wait began advanced @seq, before its wake-up, which
 * may have found this thread still queued (a cancelled sleeper leaves the
 * queue only once it runs). Then wake one more sleeper, before leaving (so
 * that @c cannot be destroyed meanwhile); at worst that one sees a
 * spurious wake-up. An unchanged @seq: any signal still to come wakes a
 * sleeper that is not this thread, which has left the queue by now.
 */
static void tofutex_cond_pass_on(const struct tofutex_cond_waiter *w)
{
	if (__atomic_load_n(&w->c->seq, __ATOMIC_SEQ_CST) == w->seq)
		return;
	__atomic_fetch_add(&w->c->seq, 1, __ATOMIC_SEQ_CST);
	tofutex_wake(&w->c->seq, 1, NULL);
}

/*
 * Leave the wait as a woken waiter. What the relock needs of @c (was the
 * waiter moved onto the mutex by a broadcast?) is read first: once it has
 * left, @c may be destroyed and its memory freed.
 */
static void tofutex_cond_leave_woken(struct tofutex_cond_waiter *w)
{
	w->moved = w->cm->tfx &&
		   __atomic_load_n(&w->c->broadcasts, __ATOMIC_ACQUIRE) !=
		   w->bcasts;
	tofutex_cond_leave(w->c);
}

/* Take the mutex again after a wait; touches the mutex only. */
static int tofutex_cond_relock(const struct tofutex_cond_waiter *w)
{
	if (!w->cm->tfx)
		return w->cm->lock(w->cm->other);
	return tofutex__mutex_relock(w->cm->tfx, w->moved);
}

/*
 * Cleanup handler of a wait cancelled while asleep, or left by longjmp()
 * from a signal handler (glibc's wait cleans up then too): pass a signal
 * on, leave the wait as a woken waiter does, with the mutex held, as
 * POSIX requires before the caller's own cleanup handlers run.
 */
static void tofutex_cond_cancelled(void *arg)
{
	struct tofutex_cond_waiter *w = arg;

	tofutex_cond_pass_on(w);
	tofutex_cond_leave_woken(w);
	tofutex_cond_relock(w);
}

/*
 * Sleep while @seq is unchanged. The sleep, and only the sleep, is a
 * cancellation point: asynchronous cancellation is enabled around the
 * system call, as glibc does around its own futex wait. The backend and,
 * on the module, the process's descriptor are set up before, so that a
 * cancellation never strikes in the middle of either.
 */
static int tofutex_cond_sleep(struct tofutex_cond_waiter *w, uint32_t seq,
			      clockid_t clockid, const struct timespec *abstime,
			      const struct tofutex__deadline *dl)
{
	int err, type;

	tofutex__ops()->prepare_wait();
	TOFUTEX_CLEANUP_PUSH(tofutex_cond_cancelled, w);
	do {
		pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &type);
		err = tofutex_clockwait(&w->c->seq, seq, clockid, abstime);
		pthread_setcanceltype(type, NULL);
	} while (err == EINTR &&
		 __atomic_load_n(&w->c->seq, __ATOMIC_RELAXED) == seq &&
		 !tofutex__deadline_passed(dl));
	TOFUTEX_CLEANUP_POP(0);
	/* A signal at the deadline: it timed out, as glibc's wait says. */
	if (err == EINTR &&
	    __atomic_load_n(&w->c->seq, __ATOMIC_RELAXED) == seq)
		err = ETIMEDOUT;
	return err;
}

/* Release the mutex of a wait; EPERM when the caller does not hold it. */
static int tofutex_cond_unlock(const struct tofutex__cond_mutex *cm)
{
	uint32_t tid;

	if (!cm->tfx)
		return cm->unlock(cm->other);
	tid = (uint32_t)tofutex__tid();
	if (!tid || !tofutex__is_self(__atomic_load_n(&cm->tfx->word,
						      __ATOMIC_RELAXED) &
				      TOFUTEX_TID_MASK, tid))
		return EPERM;
	return tofutex_mutex_unlock(cm->tfx);
}

int tofutex__cond_wait(tofutex_cond_t *c, const struct tofutex__cond_mutex *cm,
		       clockid_t clockid, const struct timespec *abstime)
{
	struct tofutex_cond_waiter w = { .c = c, .cm = cm };
	struct tofutex__deadline dl;
	uint32_t seq;
	int err, lerr;

	if (tofutex_cond_bad(c) || (cm->tfx && ((uintptr_t)cm->tfx & 3)))
		return EINVAL;
	err = tofutex__deadline_init(&dl, clockid, abstime);
	if (err)
		return err;

	/* Another mutex has no word to move waiters onto: wake them all. */
	__atomic_store_n(&c->mutex, cm->tfx, __ATOMIC_RELAXED);
	seq = __atomic_load_n(&c->seq, __ATOMIC_SEQ_CST);
	w.seq = seq;
	w.bcasts = __atomic_load_n(&c->broadcasts, __ATOMIC_RELAXED);
	__atomic_fetch_add(&c->waiters, TOFUTEX_COND_WAITER, __ATOMIC_SEQ_CST);
	err = tofutex_cond_unlock(cm);
	if (err) {
		tofutex_cond_leave(c);
		return err;
	}

	err = tofutex_cond_sleep(&w, seq, clockid, abstime, &dl);
	tofutex_cond_leave_woken(&w);

	lerr = tofutex_cond_relock(&w);
	if (lerr)
		return lerr;
	return err == ETIMEDOUT ? ETIMEDOUT : 0;
}

static int tofutex_cond_wait_common(tofutex_cond_t *c, tofutex_mutex_t *m,
				    clockid_t clockid,
				    const struct timespec *abstime)
{
	const struct tofutex__cond_mutex cm = { .tfx = m };

	if (!m)
		return EINVAL;
	return tofutex__cond_wait(c, &cm, clockid, abstime);
}

int tofutex_cond_wait(tofutex_cond_t *c, tofutex_mutex_t *m)
{
	return tofutex_cond_wait_common(c, m, CLOCK_MONOTONIC, NULL);
}

int tofutex_cond_timedwait(tofutex_cond_t *c, tofutex_mutex_t *m,
			   const struct timespec *abstime)
{
	if (!abstime)
		return EINVAL;
	return tofutex_cond_wait_common(c, m, CLOCK_REALTIME, abstime);
}

int tofutex_cond_clockwait(tofutex_cond_t *c, tofutex_mutex_t *m,
			   clockid_t clockid, const struct timespec *abstime)
{
	if (!abstime)
		return EINVAL;
	return tofutex_cond_wait_common(c, m, clockid, abstime);
}

/*
 * Count @n more waiters as signalled, at most up to every waiter (@n
 * UINT32_MAX: all of them). Returns false when every waiter already was:
 * then there is nobody to wake.
 */
static bool tofutex_cond_mark(tofutex_cond_t *c, uint32_t n)
{
	uint64_t v = __atomic_load_n(&c->waiters, __ATOMIC_SEQ_CST);
	uint32_t w, s;

	do {
		w = tofutex_cond_waiting(v);
		s = tofutex_cond_signalled(v);
		if (s >= w)
			return false;
		if (n > w - s)
			n = w - s;
	} while (!__atomic_compare_exchange_n(&c->waiters, &v,
					      v + n * TOFUTEX_COND_SIGNALLED,
					      false, __ATOMIC_SEQ_CST,
					      __ATOMIC_SEQ_CST));
	return true;
}

int tofutex_cond_signal(tofutex_cond_t *c)
{
	if (tofutex_cond_bad(c))
		return EINVAL;
	if (!tofutex_cond_mark(c, 1))
		return 0;
	__atomic_fetch_add(&c->seq, 1, __ATOMIC_SEQ_CST);
	return tofutex_wake(&c->seq, 1, NULL);
}

int tofutex_cond_broadcast(tofutex_cond_t *c)
{
	const struct tofutex__backend_ops *ops;
	tofutex_mutex_t *m;
	uint32_t seq;
	int err;

	if (tofutex_cond_bad(c))
		return EINVAL;
	if (!tofutex_cond_mark(c, UINT32_MAX))
		return 0;
	/* Before @seq: a waiter that sees the new @seq sees this too. */
	__atomic_fetch_add(&c->broadcasts, 1, __ATOMIC_RELEASE);
	seq = __atomic_add_fetch(&c->seq, 1, __ATOMIC_SEQ_CST);
	m = __atomic_load_n(&c->mutex, __ATOMIC_RELAXED);
	if (!m)
		return tofutex_wake(&c->seq, UINT_MAX, NULL);
	/*
	 * Wake one and move the others onto @m's word. EAGAIN: another
	 * signal or broadcast advanced @seq meanwhile; the sleepers are
	 * still there and still ours to move.
	 */
	ops = tofutex__ops();
	while ((err = ops->requeue(&c->seq, seq, &m->word)) == EAGAIN)
		seq = __atomic_load_n(&c->seq, __ATOMIC_SEQ_CST);
	return err;
}
