// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex - tofutex_mutex_*: a pthread-style mutex on one TO lock word.
 *
 * The word (uapi/tofutex.h, tofutex(4)) is 0 when free, else the owner's
 * TID plus the WAITERS and OWNER_DIED bits. Uncontended lock and unlock are
 * one compare-and-swap each and never enter the kernel (nor open the
 * device); the kernel is called only
 *
 * - to lock a word some other thread still holds after a short spin in
 *   user space (TOFUTEX_IOC_LOCK: the kernel spins on a running owner,
 *   steals, sleeps, or takes over from a dead owner), and
 * - to unlock a word on which the kernel has set WAITERS (TOFUTEX_IOC_UNLOCK
 *   with the word still holding our TID: the kernel releases it, or hands
 *   it straight to a starving waiter, and wakes that waiter).
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
 * the lock was taken over from an owner that exited.
 */
#include <stdbool.h>

#include "internal.h"

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

/*
 * The contended path: ask the kernel, retrying after a signal. Retrying
 * keeps a timed lock's deadline because the deadline is absolute.
 */
static __attribute__((noinline)) int
tofutex_mutex_lock_kernel(tofutex_mutex_t *m, uint32_t flags,
			  uint64_t deadline_ns)
{
	struct tofutex_lock arg;
	uint32_t how;
	int err;

	do {
		arg = (struct tofutex_lock) {
			.uaddr = (uintptr_t)&m->word,
			.deadline_ns = deadline_ns,
			.flags = flags,
		};
		err = tofutex__ioctl(TOFUTEX_IOC_LOCK, &arg, NULL);
	} while (err == EINTR);
	if (err)
		return err;

	tofutex__self.last_status = arg.status;
	how = arg.status & TOFUTEX_STATUS_HOW_MASK;
	return how == TOFUTEX_STATUS_OWNER_DIED ? EOWNERDEAD : 0;
}

/*
 * How long a locker spins in user space on a held word before it asks the
 * kernel. The kernel spins too, on an owner it can see running, but the
 * trip there is a system call plus a per-word state to find or create:
 * about 1.5 us in the emulated test guest (bench_ioctl) and a few hundred
 * ns natively, a multiple of a short critical section. Spinning for a few
 * such trips catches the common release of a short critical section
 * without the kernel (bench_lock's lock_calls per 1000 operations shows
 * the share that still enters it); a longer hold goes to the kernel, which
 * spins or sleeps knowing whether the owner runs.
 */
#define TOFUTEX_USER_SPIN_NS	5000u

/* Look at the clock once per this many polls: a read costs a few polls. */
#define TOFUTEX_USER_SPIN_CLOCK_EVERY	16u

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
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
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
 * Poll a held word for up to TOFUTEX_USER_SPIN_NS, taking it when its
 * owner lets go. Returns as tofutex_mutex_take_free(), EBUSY when the
 * budget ran out. Read-only polling: the owner's cache line is not
 * stolen until the word is free.
 */
static __attribute__((noinline)) int
tofutex_mutex_spin(tofutex_mutex_t *m, uint32_t tid, uint32_t word)
{
	uint64_t end = 0, now;
	unsigned int polls = 0;
	int err;

	for (;;) {
		err = tofutex_mutex_take_free(m, tid, &word);
		if (err != EBUSY)
			return err;
		if (++polls % TOFUTEX_USER_SPIN_CLOCK_EVERY == 0) {
			now = tofutex_now_ns();
			if (!end)
				end = now + TOFUTEX_USER_SPIN_NS;
			else if (now >= end)
				return EBUSY;
		}
		tofutex_cpu_relax();
		word = __atomic_load_n(&m->word, __ATOMIC_RELAXED);
	}
}

static inline int tofutex_mutex_lock_common(tofutex_mutex_t *m,
					    uint32_t flags,
					    uint64_t deadline_ns)
{
	uint32_t tid, word = 0;
	int err;

	if (tofutex_mutex_bad(m))
		return EINVAL;
	tid = (uint32_t)tofutex__tid();
	if (__builtin_expect(!tid, 0))
		return ENOMEM;

	if (__atomic_compare_exchange_n(&m->word, &word, tid, false,
					__ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return 0;
	if ((word & TOFUTEX_TID_MASK) == tid)
		return EDEADLK;
	err = tofutex_mutex_spin(m, tid, word);
	if (err != EBUSY)
		return err;
	return tofutex_mutex_lock_kernel(m, flags, deadline_ns);
}

int tofutex_mutex_lock(tofutex_mutex_t *m)
{
	return tofutex_mutex_lock_common(m, 0, 0);
}

int tofutex_mutex_timedlock(tofutex_mutex_t *m, const struct timespec *abstime)
{
	uint64_t deadline_ns;
	int err;

	/*
	 * Checked even when the lock is free, unlike glibc, so that a bad
	 * timespec is found the first time, not under contention.
	 */
	if (!abstime)
		return EINVAL;
	err = tofutex__deadline_ns(abstime, &deadline_ns);
	if (err)
		return err;
	return tofutex_mutex_lock_common(m, TOFUTEX_LOCK_DEADLINE, deadline_ns);
}

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
		/* EBUSY also when we own it, like pthread. */
		err = tofutex_mutex_take_free(m, tid, &word);
	} while (err == EBUSY && !(word & TOFUTEX_TID_MASK));
	return err;
}

/* The kernel set WAITERS on our word: it must release it and wake. */
static __attribute__((noinline)) int
tofutex_mutex_unlock_kernel(tofutex_mutex_t *m)
{
	struct tofutex_unlock arg = { .uaddr = (uintptr_t)&m->word };

	return tofutex__ioctl(TOFUTEX_IOC_UNLOCK, &arg, NULL);
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
	word = tid;
	if (__builtin_expect(tid != 0, 1) &&
	    __atomic_compare_exchange_n(&m->word, &word, 0, false,
					__ATOMIC_RELEASE, __ATOMIC_RELAXED))
		return 0;

	/* A free word, another thread's, or no TID (then we own nothing). */
	if (!tid || (word & TOFUTEX_TID_MASK) != tid)
		return EPERM;

	/*
	 * An owner that took the lock with EOWNERDEAD and did not call
	 * tofutex_mutex_consistent(): release it all the same. The next
	 * owner is not told; see tofutex(3), NOTES.
	 */
	if (word & TOFUTEX_OWNER_DIED) {
		__atomic_fetch_and(&m->word, ~TOFUTEX_OWNER_DIED,
				   __ATOMIC_RELAXED);
		word = tid;
		if (__atomic_compare_exchange_n(&m->word, &word, 0, false,
						__ATOMIC_RELEASE,
						__ATOMIC_RELAXED))
			return 0;
	}

	/*
	 * The kernel set WAITERS. Only it adds bits to a word we own, so the
	 * word is our TID plus WAITERS: the kernel must release it and wake.
	 */
	return tofutex_mutex_unlock_kernel(m);
}

int tofutex_mutex_consistent(tofutex_mutex_t *m)
{
	uint32_t tid, word;

	if (tofutex_mutex_bad(m))
		return EINVAL;
	tid = (uint32_t)tofutex__tid();
	word = __atomic_load_n(&m->word, __ATOMIC_RELAXED);
	if (!tid || (word & TOFUTEX_TID_MASK) != tid ||
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
