// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * libtofutex-pthread - pthread_cond_*: our condition variables
 * (preload.h) are libtofutex's (tofutex__cond_wait(), cond.c), with either
 * kind of mutex: ours, or glibc's (robust, priority inheritance,
 * process-shared). The wait is a cancellation point, and a cancelled
 * waiter runs its cleanup handlers with the mutex held.
 *
 * What glibc's answers become:
 *   waiter does not hold an ERRORCHECK or RECURSIVE mutex   EPERM
 *   bad deadline or clock                                   EINVAL
 *   the deadline passed                                     ETIMEDOUT
 *   a robust mutex's owner died while we waited             EOWNERDEAD
 * A RECURSIVE mutex held several levels deep is released entirely for
 * the wait and held as deep again after it. pthread_cond_destroy() waits
 * asleep for woken waiters still on their way out, as glibc's does,
 * instead of failing with EBUSY.
 */
#include "preload.h"

/* glibc's __wrefs flags (its pthreadP.h), written by pthread_cond_init(). */
#define TFX_COND_SHARED		1u
#define TFX_COND_MONOTONIC	2u

_Static_assert(sizeof(tofutex_cond_t) + 4 <=
	       __builtin_offsetof(struct __pthread_cond_s, __wrefs),
	       "tofutex_cond_t must leave glibc's __wrefs alone");
_Static_assert(__builtin_offsetof(struct __pthread_mutex_s, __lock) == 0 &&
	       __builtin_offsetof(struct __pthread_mutex_s, __count) ==
	       __builtin_offsetof(tofutex_mutex_t, state),
	       "__lock and __count must be a tofutex_mutex_t");

static inline unsigned int tfx_cond_flags(const pthread_cond_t *c)
{
	return __atomic_load_n(&c->__data.__wrefs, __ATOMIC_RELAXED);
}

/*
 * Ours unless process-shared, or not aligned for a 32-bit word (a member
 * of a packed structure at an odd place: neither futex(2) nor the module
 * takes such a word; glibc's condition variable, with our mutex, serves
 * it as it serves a process-shared one).
 */
static inline bool tfx_cond_ours(const pthread_cond_t *c)
{
	return !((uintptr_t)c & (sizeof(uint32_t) - 1)) &&
	       !(tfx_cond_flags(c) & TFX_COND_SHARED) &&
	       !tfx_glibc_serves_all();
}

/*
 * Our tofutex_cond_t inside @c: at its start, or 4 bytes on when @c is
 * 4- but not 8-byte aligned (a member of a packed structure, which
 * glibc's condition variable accepts), so that its 64-bit @waiters is
 * naturally aligned; either way it ends before __wrefs. A condition
 * variable does not move, so each one always finds it in the same place.
 */
static inline tofutex_cond_t *tfx_cond(pthread_cond_t *c)
{
	return (tofutex_cond_t *)(void *)((char *)c + ((uintptr_t)c & 4));
}

/*
 * The mutex of a wait, either kind, through our own entries (mutex.c),
 * not the exported names: glibc's wait unlocks and relocks the mutex
 * inside, so an interposer in front of us (a lock tracer, ltrace) must
 * not see calls that glibc's wait does not make.
 */
extern __typeof(pthread_mutex_unlock) tfx_self_mutex_unlock TOFUTEX_HIDDEN;
extern __typeof(pthread_mutex_lock) tfx_self_mutex_lock TOFUTEX_HIDDEN;

static int tfx_wait_unlock(void *m)
{
	return tfx_self_mutex_unlock(m);
}

static int tfx_wait_lock(void *m)
{
	return tfx_self_mutex_lock(m);
}

/* A RECURSIVE mutex's depth, given back to a cancelled waiter. */
struct tfx_depth {
	pthread_mutex_t *m;
	unsigned int depth;
};

static void tfx_depth_restore(void *arg)
{
	const struct tfx_depth *d = arg;

	d->m->__data.__count = d->depth;
}

/* tofutex__cond_wait() for a RECURSIVE mutex @m, @depth levels deep. */
static int tfx_cond_wait_recursive(pthread_cond_t *c,
				   const struct tofutex__cond_mutex *cm,
				   struct tfx_depth *d, clockid_t clockid,
				   const struct timespec *abstime)
{
	int err;

	d->m->__data.__count = 1;
	TOFUTEX_CLEANUP_PUSH(tfx_depth_restore, d);
	err = tofutex__cond_wait(tfx_cond(c), cm, clockid, abstime);
	TOFUTEX_CLEANUP_POP(1);
	return err;
}

/*
 * Wait on our @c with @m, either kind; @clockid and @abstime as
 * tofutex__cond_wait(). The mutex is released and taken through the
 * pthread functions, ours or glibc's, so that each type keeps its rules
 * (a relock that finds a dead owner of one of ours stalls as a lock
 * does). That also makes a broadcast wake every waiter rather than move
 * them onto the lock word, as glibc does: a waiter leaves the condition
 * variable before it takes the mutex, so pthread_cond_destroy() can wait
 * for the waiters still leaving while its caller holds the mutex, and
 * the memory of a destroyed condition variable is not touched again.
 */
/* A profiled wait (@t0 its start, 0 when not profiled) on @c. */
struct tfx_cond_prof {
	pthread_cond_t *c;
	uint64_t t0;
	int err;
};

/* Record the wait; also when it ends by cancellation or longjmp(). */
static void tfx_cond_prof_done(void *arg)
{
	const struct tfx_cond_prof *p = arg;

	if (p->t0)
		tfx_prof_waited(p->c, TFX_PROF_COND, false, p->t0, p->err);
}

static int tfx_cond_wait(pthread_cond_t *c, pthread_mutex_t *m,
			 clockid_t clockid, const struct timespec *abstime)
{
	const struct tofutex__cond_mutex cm = {
		.other = m,
		.unlock = tfx_wait_unlock,
		.lock = tfx_wait_lock,
	};
	struct tfx_depth d = { .m = m };
	struct tfx_cond_prof p = {
		.c = c, .t0 = tfx_prof() ? tfx_prof_begin(c, true) : 0,
	};
	int err;

	TFX_PROBE(cond_wait, c, m);
	tfx_stats_cond_wait();
	/*
	 * The depth is the owner's: whoever takes the mutex while we wait
	 * must find none, and we find ours again after the relock.
	 */
	TOFUTEX_CLEANUP_PUSH(tfx_cond_prof_done, &p);
	if (tfx_mutex_type(m) == PTHREAD_MUTEX_RECURSIVE &&
	    m->__data.__count > 1 && tfx_mutex_mine(m)) {
		d.depth = m->__data.__count;
		err = tfx_cond_wait_recursive(c, &cm, &d, clockid, abstime);
	} else {
		err = tofutex__cond_wait(tfx_cond(c), &cm, clockid, abstime);
	}
	p.err = err;
	TOFUTEX_CLEANUP_POP(1);
	return err;
}

/*
 * A process-shared condition variable is glibc's (it may be shared with
 * processes that do not run the preload), also when the mutex is ours:
 * glibc's wait then unlocks and relocks our mutex with its own internal
 * functions, which libtofutex's lock and unlock interoperate with
 * (lib/glibc.c). Before the wait, the fields glibc's code checks are set
 * as it would have them: the word 2, so that its unlock wakes a sleeper;
 * __owner the caller's TID for ERRORCHECK and RECURSIVE (mutex.c keeps
 * it so), and for RECURSIVE one level in __count (where mutex.c keeps
 * the levels, as glibc does) with the caller's depth kept aside. After
 * the wait, or in its cancellation, ours are put back: __owner 0 for the
 * other types (glibc's relock sets it for every type, and glibc's lock
 * of a DEFAULT mutex asserts that it is 0), the depth, and the caller's
 * TID in the word, which glibc's relock left 2.
 */
struct tfx_glibc_wait {
	pthread_mutex_t *m;
	int type;
	unsigned int depth;
};

static void tfx_glibc_wait_done(void *arg)
{
	const struct tfx_glibc_wait *g = arg;

	/* glibc's relock sets it for every type; NORMAL ones of ours keep 0. */
	if (g->type != PTHREAD_MUTEX_ERRORCHECK &&
	    g->type != PTHREAD_MUTEX_RECURSIVE)
		g->m->__data.__owner = 0;
	tofutex__glibc_adopt(&tfx_mutex(g->m)->word, (uint32_t)tofutex__tid());
	if (g->type == PTHREAD_MUTEX_RECURSIVE)
		g->m->__data.__count = g->depth;
}

static int tfx_cond_wait_glibc(pthread_cond_t *c, pthread_mutex_t *m,
			       int type, clockid_t clockid,
			       const struct timespec *abstime)
{
	struct tfx_glibc_wait g = { .m = m, .type = type };
	int err;

	if (!tfx_mutex_mine(m)) {
		/* Not the owner: glibc's answers for glibc's checks. */
		if (type == PTHREAD_MUTEX_ERRORCHECK ||
		    type == PTHREAD_MUTEX_RECURSIVE)
			return EPERM;
	} else {
		if (type == PTHREAD_MUTEX_RECURSIVE) {
			g.depth = m->__data.__count;
			m->__data.__count = 1;
		}
		tofutex__glibc_handover(&tfx_mutex(m)->word);
	}
	tofutex__glibc_ran();
	TOFUTEX_CLEANUP_PUSH(tfx_glibc_wait_done, &g);
	if (!abstime)
		err = tfx_glibc()->cond_wait(c, m);
	else
		err = tfx_glibc()->cond_clockwait(c, m, clockid, abstime);
	TOFUTEX_CLEANUP_POP(1);
	return err;
}

int pthread_cond_init(pthread_cond_t *c, const pthread_condattr_t *attr)
{
	/* glibc validates @attr, zeroes the object and sets __wrefs. */
	int err;

	TFX_PROBE(cond_init, c, attr);
	tfx_stats_cond_init(attr);
	err = tfx_glibc()->cond_init(c, attr);
	/* glibc's wait may run on our mutexes from now on (lib/glibc.c). */
	if (!err && !tfx_cond_ours(c))
		tofutex__glibc_ran();
	return err;
}

int pthread_cond_destroy(pthread_cond_t *c)
{
	if (!tfx_cond_ours(c))
		return tfx_glibc()->cond_destroy(c);
	TFX_PROBE(cond_destroy, c);
	return tofutex__cond_destroy_wait(tfx_cond(c));
}

int pthread_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	int type = tfx_mutex_type(m);

	if (!tfx_cond_ours(c) && type < 0)
		return tfx_glibc()->cond_wait(c, m);
	if (!tfx_cond_ours(c))
		return tfx_cond_wait_glibc(c, m, type, CLOCK_REALTIME, NULL);
	return tfx_cond_wait(c, m, CLOCK_REALTIME, NULL);
}

int pthread_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
			   const struct timespec *abstime)
{
	int type = tfx_mutex_type(m);

	if (!tfx_cond_ours(c) && type < 0)
		return tfx_glibc()->cond_timedwait(c, m, abstime);
	if (!tfx_cond_ours(c))
		return tfx_cond_wait_glibc(c, m, type,
					   (tfx_cond_flags(c) &
					    TFX_COND_MONOTONIC) ?
					   CLOCK_MONOTONIC : CLOCK_REALTIME,
					   abstime);
	return tfx_cond_wait(c, m, (tfx_cond_flags(c) & TFX_COND_MONOTONIC) ?
				   CLOCK_MONOTONIC : CLOCK_REALTIME, abstime);
}

int pthread_cond_clockwait(pthread_cond_t *c, pthread_mutex_t *m,
			   clockid_t clockid, const struct timespec *abstime)
{
	int type = tfx_mutex_type(m);

	if (!tfx_cond_ours(c) && type < 0)
		return tfx_glibc()->cond_clockwait(c, m, clockid, abstime);
	if (!tfx_cond_ours(c))
		return tfx_cond_wait_glibc(c, m, type, clockid, abstime);
	return tfx_cond_wait(c, m, clockid, abstime);
}

int pthread_cond_signal(pthread_cond_t *c)
{
	if (!tfx_cond_ours(c)) {
		tofutex__glibc_ran();
		return tfx_glibc()->cond_signal(c);
	}
	TFX_PROBE(cond_signal, c);
	return tofutex_cond_signal(tfx_cond(c));
}

int pthread_cond_broadcast(pthread_cond_t *c)
{
	if (!tfx_cond_ours(c)) {
		tofutex__glibc_ran();
		return tfx_glibc()->cond_broadcast(c);
	}
	TFX_PROBE(cond_broadcast, c);
	return tofutex_cond_broadcast(tfx_cond(c));
}

TFX_SELF(cond_init);
TFX_SELF(cond_destroy);
TFX_SELF(cond_wait);
TFX_SELF(cond_timedwait);
TFX_SELF(cond_clockwait);
TFX_SELF(cond_signal);
TFX_SELF(cond_broadcast);

/*
 * glibc's condition variable code cannot run on ours (preload.h: the
 * layout): a program that takes those functions from a handle of glibc
 * (dlsym.c) gets these.
 */
void *tfx_cond_fn_ours(const void *fn)
{
	const struct tfx_real *g = tfx_glibc();
	const struct tfx_fn_pair map[] = {
		TFX_OURS(g, cond_init), TFX_OURS(g, cond_destroy),
		TFX_OURS(g, cond_wait), TFX_OURS(g, cond_timedwait),
		TFX_OURS(g, cond_clockwait), TFX_OURS(g, cond_signal),
		TFX_OURS(g, cond_broadcast),
	};

	return tfx_fn_pair_find(map, sizeof(map) / sizeof(map[0]), fn);
}
