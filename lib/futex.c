// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex - the futex(2) backend: waiting, waking and requeueing on
 * private futexes, and the contended lock path for a TO lock word when
 * the module is not used (backend.c).
 *
 * The lock word keeps the module's layout (TID | WAITERS | OWNER_DIED,
 * tofutex(4)), so the user-space fast paths and the user-space spin in
 * mutex.c are the same on both backends. The contended path is Drepper's
 * "mutex take 3" ("Futexes Are Tricky") with a TID in place of 1:
 *
 * - a waiter sets WAITERS before it sleeps, and a thread that entered this
 *   path takes the lock with WAITERS set, since other sleepers may remain;
 *   the owner's unlock then sees WAITERS and wakes one sleeper (mutex.c);
 * - a condition variable's broadcast moves its waiters onto the lock word
 *   (FUTEX_CMP_REQUEUE, cond.c); they too take the lock through this path,
 *   WAITERS set, so that each unlock wakes the next one.
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
 */
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"

static long tofutex_futex(uint32_t *uaddr, int op, uint32_t val,
			  const struct timespec *ts, uint32_t *uaddr2,
			  uint32_t val3)
{
	return syscall(SYS_futex, uaddr, op, val, ts, uaddr2, val3);
}

bool tofutex__futex_counting;
uint64_t tofutex__futex_waits;

int tofutex__futex_wait(uint32_t *addr, uint32_t val,
			const struct tofutex__deadline *dl, uint64_t poll_ns)
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
	if (tofutex_futex(addr, op, val, tsp, NULL, FUTEX_BITSET_MATCH_ANY))
		err = errno;
	errno = saved_errno;
	/* EWOULDBLOCK is EAGAIN on Linux. */
	return err;
}

int tofutex__futex_wake(uint32_t *addr, int count)
{
	int saved_errno = errno;
	long n;

	n = tofutex_futex(addr, FUTEX_WAKE | FUTEX_PRIVATE_FLAG,
			  (uint32_t)count, NULL, NULL, 0);
	if (n < 0)
		n = -errno;
	errno = saved_errno;
	return (int)n;
}

int tofutex__futex_requeue(uint32_t *addr, uint32_t val, uint32_t *lock_addr)
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
	if (!syscall(SYS_tgkill, tofutex__pid(), (pid_t)tid, 0) ||
	    errno == EPERM)
		who = TOFUTEX_OWNER_LIVE;
	else if (!kill((pid_t)tid, 0) || errno == EPERM)
		who = TOFUTEX_OWNER_FOREIGN;
	else
		who = TOFUTEX_OWNER_DEAD;
	errno = saved_errno;
	return who;
}

int tofutex__take_from_dead(uint32_t *word, uint32_t tid, uint32_t w,
			    uint32_t waiters)
{
	/* glibc's own code holds it (glibc.c): a live thread of ours. */
	if (tofutex__glibc_owner(w & TOFUTEX_TID_MASK))
		return EBUSY;
	switch (tofutex__owner_of(w & TOFUTEX_TID_MASK)) {
	case TOFUTEX_OWNER_LIVE:
		return EBUSY;
	case TOFUTEX_OWNER_FOREIGN:
		return EPERM;
	case TOFUTEX_OWNER_DEAD:
		break;
	}
	if (__atomic_compare_exchange_n(word, &w, tid | TOFUTEX_OWNER_DIED |
					waiters, false,
					__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return EOWNERDEAD;
	return EAGAIN;
}

int tofutex__futex_lock(uint32_t *word, uint32_t tid,
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
		if (err == ETIMEDOUT) {
			if (tofutex__deadline_passed(dl))
				return ETIMEDOUT;
			check_owner = robust;
		}
		/* 0, EAGAIN, EINTR (a lock is not interrupted): look again. */
		w = __atomic_load_n(word, __ATOMIC_RELAXED);
	}
}
