// SPDX-License-Identifier: GPL-2.0
/*
 * A library test_pthread_report is linked with (not one it dlopen()s):
 * loaded with the program, its constructor runs before the preload's,
 * since the loader runs the constructors of the program's libraries
 * before those of a preloaded library that depends on none of them. With
 * EARLY_ENV in the environment it locks there, before the preload has
 * started (early.h says what, and tfx_early() how it went).
 */
#include "early.h"
#include "sleeping.h"

static struct early early;

const struct early *tfx_early(void)
{
	return &early;
}

static pthread_mutex_t hot = PTHREAD_MUTEX_INITIALIZER;

static void *locker(void *arg)
{
	uint32_t *tid = arg;

	__atomic_store_n(tid, test_gettid(), __ATOMIC_RELEASE);
	pthread_mutex_lock(&hot);
	pthread_mutex_unlock(&hot);
	return NULL;
}

/* One contention of @hot, the other thread asleep in its lock. */
static int contend(void)
{
	uint32_t tid = 0;
	pthread_t t;

	if (pthread_mutex_lock(&hot))
		return 1;
	/* The preload's lock: the holder's TID in the word, not glibc's 1. */
	if (word_load((uint32_t *)&hot.__data.__lock) != test_gettid())
		return 2;
	if (pthread_create(&t, NULL, locker, &tid))
		return 4;
	if (!thread_asleep_within(&tid))
		return 8;
	if (pthread_mutex_unlock(&hot) || pthread_join(t, NULL))
		return 16;
	return 0;
}

/* Initialised, and waited on until a deadline that has passed. */
static int init_and_wait(void)
{
	pthread_mutex_t m;
	pthread_cond_t c;
	struct timespec ts = realtime_in(0);
	int bad = 0;

	if (pthread_mutex_init(&m, NULL) || pthread_cond_init(&c, NULL))
		return 32;
	if (pthread_mutex_lock(&m) ||
	    pthread_cond_timedwait(&c, &m, &ts) != ETIMEDOUT)
		bad = 64;
	pthread_mutex_unlock(&m);
	pthread_cond_destroy(&c);
	pthread_mutex_destroy(&m);
	return bad;
}

__attribute__((constructor)) static void tfx_early_ctor(void)
{
	if (!getenv(EARLY_ENV))
		return;
	while (early.rounds < EARLY_ROUNDS) {
		early.bad = init_and_wait() | contend();
		if (early.bad)
			return;
		early.rounds++;
	}
}
