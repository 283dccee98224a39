// SPDX-License-Identifier: GPL-2.0
/*
 * What the reader/writer lock suites share (test_pthread_rwlock.c,
 * test_pthread_rwlock_handover.c, test_pthread_rwlock_fork.c): the
 * kinds and how each is made, the word, a call in another thread, lock
 * attempts that leave the lock as they found it, and threads that wait
 * for the lock (a sleeper that says whether it got it, an order that
 * says when).
 */
#ifndef TOFUTEX_TESTS_PRELOAD_RWLOCK_H
#define TOFUTEX_TESTS_PRELOAD_RWLOCK_H

#include <dlfcn.h>

#include "sleeping.h"

#define TOFUTEX_PRELOAD_NAME "libtofutex-pthread.so"

/* The kinds, and how each is made. */
enum { K_STATIC, K_STATIC_NONRECURSIVE, K_READER, K_WRITER, K_NONRECURSIVE,
       K_COUNT };

static inline void rwlock_make(pthread_rwlock_t *rw, int k)
{
	static const int kind[K_COUNT] = {
		0, 0, PTHREAD_RWLOCK_PREFER_READER_NP,
		PTHREAD_RWLOCK_PREFER_WRITER_NP,
		PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP,
	};
	pthread_rwlockattr_t a;

	if (k == K_STATIC) {
		*rw = (pthread_rwlock_t)PTHREAD_RWLOCK_INITIALIZER;
		return;
	}
	if (k == K_STATIC_NONRECURSIVE) {
		*rw = (pthread_rwlock_t)
			PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
		return;
	}
	ck_assert_int_eq(pthread_rwlockattr_init(&a), 0);
	ck_assert_int_eq(pthread_rwlockattr_setkind_np(&a, kind[k]), 0);
	ck_assert_int_eq(pthread_rwlock_init(rw, &a), 0);
	pthread_rwlockattr_destroy(&a);
}

static inline bool nonrecursive(int k)
{
	return k == K_STATIC_NONRECURSIVE || k == K_NONRECURSIVE;
}

/* The TO word: glibc's __readers (libtofutex-pthread's layout). */
static inline uint32_t rw_word(pthread_rwlock_t *rw)
{
	return word_load(&rw->__data.__readers);
}

/* Run @fn(@rw) in a new thread, return its result. */
struct call {
	int (*fn)(pthread_rwlock_t *);
	pthread_rwlock_t *rw;
	int ret;
};

static inline void *call_main(void *arg)
{
	struct call *c = arg;

	c->ret = c->fn(c->rw);
	return NULL;
}

static inline int in_thread(int (*fn)(pthread_rwlock_t *),
			    pthread_rwlock_t *rw)
{
	struct call c = { .fn = fn, .rw = rw, .ret = -1 };
	pthread_t t;

	ck_assert_int_eq(pthread_create(&t, NULL, call_main, &c), 0);
	ck_assert(join_within(t, NULL, TEST_WAIT_NS));
	return c.ret;
}

/* A lock attempt that leaves the lock as it found it. */
static inline int tryrd_and_unlock(pthread_rwlock_t *rw)
{
	int r = pthread_rwlock_tryrdlock(rw);

	return r ? r : pthread_rwlock_unlock(rw);
}

static inline int trywr_and_unlock(pthread_rwlock_t *rw)
{
	int r = pthread_rwlock_trywrlock(rw);

	return r ? r : pthread_rwlock_unlock(rw);
}

/* A thread that takes the lock once, then releases it. */
struct sleeper {
	pthread_rwlock_t *rw;
	bool write;
	uint32_t tid;
	int ret;
};

static inline void *sleeper_main(void *arg)
{
	struct sleeper *sl = arg;

	__atomic_store_n(&sl->tid, test_gettid(), __ATOMIC_RELEASE);
	sl->ret = sl->write ? pthread_rwlock_wrlock(sl->rw) :
			      pthread_rwlock_rdlock(sl->rw);
	if (!sl->ret)
		sl->ret = pthread_rwlock_unlock(sl->rw);
	return NULL;
}

/* A thread that takes the lock, says it came @next-th, holds it 10 ms. */
struct order {
	pthread_rwlock_t *rw;
	bool write;
	int *next;
	int got;
	uint32_t tid;
};

static inline void *order_main(void *arg)
{
	struct order *o = arg;

	__atomic_store_n(&o->tid, test_gettid(), __ATOMIC_RELEASE);
	int r = o->write ? pthread_rwlock_wrlock(o->rw) :
			   pthread_rwlock_rdlock(o->rw);

	if (r) {
		o->got = -r;
		return NULL;
	}
	o->got = __atomic_add_fetch(o->next, 1, __ATOMIC_SEQ_CST);
	sleep_ns(10 * NSEC_PER_MSEC);
	pthread_rwlock_unlock(o->rw);
	return NULL;
}

/* pthread_rwlock_rdlock is the preload's: the suite runs under tofutex-run. */
static inline void rwlock_preload_in_effect(void)
{
	Dl_info info;

	ck_assert(dladdr((void *)pthread_rwlock_rdlock, &info));
	ck_assert_msg(info.dli_fname &&
		      strstr(info.dli_fname, TOFUTEX_PRELOAD_NAME),
		      "pthread_rwlock_rdlock is %s's, not the preload's: run under tofutex-run",
		      info.dli_fname ? info.dli_fname : "?");
}

#endif /* TOFUTEX_TESTS_PRELOAD_RWLOCK_H */
