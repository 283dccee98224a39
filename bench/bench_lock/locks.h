// SPDX-License-Identifier: GPL-2.0
/*
 * bench_lock - the units of work and the lock implementations, inline so
 * that the measured loop (run.c) and the uncontended test (uncontended.c)
 * pay no call for a lock that is not a library's: futex3 and tas are
 * written here, tofutex and the glibc mutexes are calls into libtofutex.a
 * and glibc. A struct bench_lock is used by the threads of one run only;
 * lock_init() and lock_destroy() (locks.c) run while no worker exists.
 */
#ifndef BENCH_LOCK_LOCKS_H
#define BENCH_LOCK_LOCKS_H

#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <tofutex.h>

#include "bench_lock.h"

static inline void cpu_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield" ::: "memory");
#else
#error "bench_lock: no spin-wait hint instruction known for this architecture"
#endif
}

/*
 * The empty asm makes the counter live in a register the compiler cannot
 * reason about, so the loop is neither removed nor vectorised, and it
 * touches no memory: a loop unit costs the same alone and under contention.
 */
static inline void spin_loop(unsigned long n)
{
	for (unsigned long j = 0; j < n; j++)
		__asm__ volatile("" : "+r"(j));
}

static inline void spend(enum unit_kind kind, unsigned int n)
{
	if (kind == UNIT_PAUSE) {
		for (unsigned int i = 0; i < n; i++)
			cpu_pause();
	} else {
		for (unsigned int i = 0; i < n; i++)
			spin_loop(loop_iters);
	}
}

/*
 * The lock and the counter it protects share a cache line, as a mutex and
 * its data usually do; the line is aligned so nothing else shares it.
 */
struct bench_lock {
	_Alignas(64) union {
		pthread_mutex_t pthread;
		tofutex_mutex_t tofutex;
		uint32_t word;		/* futex3, tas */
	} u;
	unsigned long counter;
};

static inline long sys_futex(uint32_t *uaddr, int op, uint32_t val)
{
	return syscall(SYS_futex, uaddr, op, val, NULL, NULL, 0);
}

/*
 * futex3: "Futexes Are Tricky" (U. Drepper), mutex take 3. The word is 0
 * unlocked, 1 locked, 2 locked with possible waiters. A locker that finds
 * it taken marks it 2 and sleeps while it stays 2; an unlocker that finds
 * 2 (decrement did not reach 0) clears it and wakes one waiter. Every
 * futex call is counted, as the RFC's table counts syscalls.
 */
static inline void futex3_lock(uint32_t *w, uint64_t *waits)
{
	uint32_t c = 0;

	if (__atomic_compare_exchange_n(w, &c, 1, false, __ATOMIC_ACQUIRE,
					__ATOMIC_RELAXED))
		return;
	if (c != 2)
		c = __atomic_exchange_n(w, 2, __ATOMIC_ACQUIRE);
	while (c != 0) {
		(*waits)++;
		if (sys_futex(w, FUTEX_WAIT_PRIVATE, 2) && errno != EAGAIN &&
		    errno != EINTR)
			die("futex3: FUTEX_WAIT: %s", strerror(errno));
		c = __atomic_exchange_n(w, 2, __ATOMIC_ACQUIRE);
	}
}

static inline void futex3_unlock(uint32_t *w, uint64_t *wakes)
{
	if (__atomic_fetch_sub(w, 1, __ATOMIC_RELEASE) != 1) {
		__atomic_store_n(w, 0, __ATOMIC_RELEASE);
		(*wakes)++;
		if (sys_futex(w, FUTEX_WAKE_PRIVATE, 1) < 0)
			die("futex3: FUTEX_WAKE: %s", strerror(errno));
	}
}

/*
 * tas: the bare compare-and-swap lock, so its uncontended cost is the
 * floor the others are read against. Waiters spin reading the word (no
 * cache-line ping-pong while it is held) with `pause`, as every production
 * spinlock does, whatever the unit kind of the run.
 */
static inline void tas_lock(uint32_t *w)
{
	for (;;) {
		uint32_t z = 0;

		if (__atomic_compare_exchange_n(w, &z, 1, false,
						__ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED))
			return;
		while (__atomic_load_n(w, __ATOMIC_RELAXED))
			cpu_pause();
	}
}

static inline void tas_unlock(uint32_t *w)
{
	__atomic_store_n(w, 0, __ATOMIC_RELEASE);
}

void lock_init(enum impl_id impl, struct bench_lock *l);
void lock_destroy(enum impl_id impl, struct bench_lock *l);

static inline __attribute__((always_inline)) void
do_lock(const enum impl_id impl, struct bench_lock *l, uint64_t *futex_waits)
{
	int err = 0;

	switch (impl) {
	case IMPL_TOFUTEX:
		err = tofutex_mutex_lock(&l->u.tofutex);
		break;
	case IMPL_PTHREAD:
	case IMPL_ADAPTIVE:
	case IMPL_PI:
		err = pthread_mutex_lock(&l->u.pthread);
		break;
	case IMPL_FUTEX3:
		futex3_lock(&l->u.word, futex_waits);
		break;
	case IMPL_TAS:
		tas_lock(&l->u.word);
		break;
	case IMPL_NONE:
	case IMPL_SPIN_FIRST:
	case NR_IMPLS:
		break;
	}
	if (__builtin_expect(err != 0, 0))
		die("%s: lock: %s", impls[impl].name, strerror(err));
}

static inline __attribute__((always_inline)) void
do_unlock(const enum impl_id impl, struct bench_lock *l, uint64_t *futex_wakes)
{
	int err = 0;

	switch (impl) {
	case IMPL_TOFUTEX:
		err = tofutex_mutex_unlock(&l->u.tofutex);
		break;
	case IMPL_PTHREAD:
	case IMPL_ADAPTIVE:
	case IMPL_PI:
		err = pthread_mutex_unlock(&l->u.pthread);
		break;
	case IMPL_FUTEX3:
		futex3_unlock(&l->u.word, futex_wakes);
		break;
	case IMPL_TAS:
		tas_unlock(&l->u.word);
		break;
	case IMPL_NONE:
	case IMPL_SPIN_FIRST:
	case NR_IMPLS:
		break;
	}
	if (__builtin_expect(err != 0, 0))
		die("%s: unlock: %s", impls[impl].name, strerror(err));
}

#endif /* BENCH_LOCK_LOCKS_H */
